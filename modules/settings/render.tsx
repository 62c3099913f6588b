import { consolePages } from "../../ui/page";
import { installAdvice, listEnrolmentTokens } from "../enrolment/service";
import { factorCounts, listApiTokens, listOperators, readFactorPolicy } from "../operators/service";
import type { Principal } from "../platform/access";
import type { AppContext } from "../platform/context";
import { tunnelFingerprint } from "../platform/host-key";
import { SettingsPage, type SettingsPageProps } from "./pages/settings";
import { deviceSettings, settingsDefaults } from "./service";
import { readConsoleSettings } from "./store";

export type SettingsOverrides = Partial<SettingsPageProps>;

/**
 * Renders the whole Settings page with `overrides` on top (a form's errors and typed values, or a
 * secret shown once): every settings form answers with it, so a refused form keeps the rest in view.
 */
export function settingsRenderer(ctx: Pick<AppContext, "config" | "database">) {
  const { pageContext, htmlPage } = consolePages(ctx.config);
  return async (
    request: Request,
    principal: Principal | undefined,
    overrides: SettingsOverrides,
    status = 200,
  ) => {
    const page = pageContext(request, principal);
    await deviceSettings(ctx.config); // primes the env defaults
    const [consoleSettings, operators, tokens, enrolmentTokens, factors, factorPolicy] = await Promise.all([
      readConsoleSettings(ctx.database.sql, settingsDefaults(ctx.config)),
      listOperators(ctx.database.db),
      listApiTokens(ctx.database.db),
      listEnrolmentTokens(ctx.database.sql),
      factorCounts(ctx.database.db),
      readFactorPolicy(ctx.database.db),
    ]);
    const props: SettingsPageProps = {
      console: consoleSettings,
      operators: operators.map((operator) => ({ ...operator, factors: factors.get(operator.id) ?? 0 })),
      factorPolicy,
      tokens,
      enrolmentTokens,
      tunnelFingerprint: tunnelFingerprint(ctx.config.dataDir),
      installAdvice: installAdvice(ctx.config),
      ...overrides,
    };
    return htmlPage(page, <SettingsPage ctx={page} props={props} />, status);
  };
}
