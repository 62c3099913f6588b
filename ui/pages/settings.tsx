import type { ApiTokenView } from "../../modules/operators/service";
import { Badge, CsrfField, PageHead, PostButton, Time } from "../components";
import { Layout, type PageContext } from "../layout";
import { type ConsoleSettingsProps, ConsoleSettingsSections } from "./settings-sections";

export interface SettingsPageProps extends ConsoleSettingsProps {
  tokens: ApiTokenView[];
  /** A token just created: shown this once, never again. */
  newToken?: { name: string; secret: string };
  tokenError?: string;
  tokenName?: string;
}

function TokenRow({ token, csrfToken }: { token: ApiTokenView; csrfToken: string }) {
  return (
    <tr>
      <td data-label="Name" safe>
        {token.name}
      </td>
      <td data-label="Token">
        <code safe>{`${token.prefix}…`}</code>
      </td>
      <td data-label="Role">
        <Badge label={token.role} />
      </td>
      <td data-label="Created">
        <Time value={token.createdAt} />
      </td>
      <td data-label="Last used">
        <Time value={token.lastUsedAt} />
      </td>
      <td class="row-actions">
        {token.revokedAt ? (
          <Badge tone="danger" label="revoked" />
        ) : (
          <PostButton
            action={`/settings/tokens/${token.id}/revoke`}
            csrfToken={csrfToken}
            label="Revoke"
            tone="danger"
            confirm={`Revoke the token "${token.name}"? Programs using it stop working at once.`}
          />
        )}
      </td>
    </tr>
  );
}

export function SettingsPage({ ctx, props }: { ctx: PageContext; props: SettingsPageProps }) {
  return (
    <Layout ctx={ctx} title="Settings">
      <PageHead title="Settings" subtitle="Monitoring, notifications, operators and API tokens." />
      <ConsoleSettingsSections
        ctx={ctx}
        props={props}
        selfId={ctx.principal?.kind === "session" ? ctx.principal.operatorId : undefined}
      />
      <section class="card" id="api-tokens">
        <div class="card-head">
          <h2>API tokens</h2>
        </div>
        <p class="muted">
          Programs call the API with <code>Authorization: Bearer &lt;token&gt;</code>. A token has the rights
          of its role. Only a hash is stored: the token is shown once, when it is created.
        </p>
        {props.newToken ? (
          <div class="flash success" role="status">
            <div>
              <strong safe>{`Token "${props.newToken.name}" created.`}</strong> Copy it now; it will not be
              shown again.
              <div class="secret" id="new-token" safe>
                {props.newToken.secret}
              </div>
              <button type="button" class="btn small" data-copy="new-token">
                Copy
              </button>
            </div>
          </div>
        ) : (
          ""
        )}
        <form method="post" action="/settings/tokens" class="inline-form" style="margin-bottom: 1rem">
          <CsrfField token={ctx.csrfToken} />
          <label>
            Name
            <input
              type="text"
              name="name"
              required
              maxlength="100"
              placeholder="e.g. ci-pipeline"
              value={props.tokenName ?? ""}
              aria-invalid={props.tokenError ? "true" : undefined}
            />
          </label>
          <label style="flex: 0 1 160px">
            Role
            <select name="role">
              <option value="viewer">viewer</option>
              <option value="operator">operator</option>
              <option value="admin">admin</option>
            </select>
          </label>
          <button class="btn primary" type="submit">
            Create token
          </button>
        </form>
        {props.tokenError ? (
          <p class="field-error" role="alert" safe>
            {props.tokenError}
          </p>
        ) : (
          ""
        )}
        <div class="table-wrap">
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Name</th>
                <th>Token</th>
                <th>Role</th>
                <th>Created</th>
                <th>Last used</th>
                <th>
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.tokens.length === 0 ? (
                <tr>
                  <td colspan="6" class="muted">
                    No API tokens yet.
                  </td>
                </tr>
              ) : (
                props.tokens.map((token) => <TokenRow token={token} csrfToken={ctx.csrfToken} />)
              )}
            </tbody>
          </table>
        </div>
      </section>
    </Layout>
  );
}
