import type { ConsoleSettingsProps } from "../../ui/pages/settings-sections";
import { listOperators } from "../operators/service";
import type { AppContext } from "../platform/context";
import { tunnelFingerprint } from "../remote-access/service";
import { deviceSettings, settingsDefaults } from "./service";
import { readConsoleSettings } from "./store";

/** What the Settings page shows besides API tokens: the editable settings and the operators. */
export async function settingsPageExtras(
  ctx: Pick<AppContext, "config" | "database">,
): Promise<ConsoleSettingsProps> {
  await deviceSettings(ctx.config); // primes the env defaults
  const [console, operators] = await Promise.all([
    readConsoleSettings(ctx.database.sql, settingsDefaults(ctx.config)),
    listOperators(ctx.database.db),
  ]);
  return { console, operators, tunnelFingerprint: tunnelFingerprint(ctx.config.dataDir) };
}
