import { CsrfField } from "../../../ui/components";
import { Checkbox, NumberInput } from "../../../ui/form";
import type { PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import { type FactorPolicy, FRESH_FACTOR_LIMITS, OPERATOR_ROLES } from "../../operators/service";

export interface SecondFactorSectionProps {
  factorPolicy?: FactorPolicy;
}

/** Per role: a second factor at sign-in, and a fresh one before a terminal or a device's web UI. */
export function SecondFactorSection({ ctx, props }: { ctx: PageContext; props: SecondFactorSectionProps }) {
  const policy = props.factorPolicy;
  if (!policy) return "";
  return (
    <Card title="Second factor" id="second-factor">
      <p class="muted">
        Operators add authenticator apps and passkeys on their account page. A required second factor sends an
        operator without one to add one at sign-in. A fresh factor is asked before a terminal or a device's
        web UI opens when the last one is older than the minutes given (0: every time; empty: never). API
        tokens are never asked.
      </p>
      <form method="post" action="/settings/second-factor" class="stacked" data-factor-policy>
        <CsrfField token={ctx.csrfToken} />
        <div class="table-wrap">
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Role</th>
                <th>Required at sign-in</th>
                <th>Fresh factor (minutes)</th>
              </tr>
            </thead>
            <tbody>
              {[...OPERATOR_ROLES].map((role) => (
                <tr>
                  <td data-label="Role">{role}</td>
                  <td data-label="Required at sign-in">
                    <Checkbox
                      name={`required_${role}`}
                      ariaLabel={`Require a second factor of ${role}s`}
                      checked={policy[role].required}
                    />
                  </td>
                  <td data-label="Fresh factor (minutes)">
                    <NumberInput
                      name={`fresh_${role}`}
                      min={FRESH_FACTOR_LIMITS.min}
                      max={FRESH_FACTOR_LIMITS.max}
                      optional
                      ariaLabel={`Fresh factor minutes of ${role}s`}
                      value={
                        policy[role].freshFactorMinutes === null
                          ? ""
                          : String(policy[role].freshFactorMinutes)
                      }
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <button type="submit" class="btn primary">
          Save second-factor settings
        </button>
      </form>
    </Card>
  );
}
