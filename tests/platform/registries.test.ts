// Per-process state lives in the services createServices builds (services.ts), never in a module-level
// registry keyed by a config or a connection: scripts/check-registries.ts (npm run check) enforces it.
import { describe, expect, test } from "bun:test";
import { registriesIn, registryViolations } from "../../scripts/check-registries";

describe("no module-level registries", () => {
  test("none in app.ts, services.ts, cli/, jobs/, modules/ or ui/", () => {
    expect(registryViolations()).toEqual([]);
  });

  test("the check finds the registries that used to be there, and leaves request state and plain caches alone", () => {
    const found = registriesIn(
      "modules/x.ts",
      [
        "const stores = new WeakMap<object, Sql>();",
        "const cache = new WeakMap<Sql, { at: number; value: Stored }>();",
        "export const hubs = new WeakMap<Database, LiveHub>();",
        "const openWaits = new Set<DeviceWaits>();",
        "let registry: WeakMap<Database, X> = new WeakMap();",
        "const requestIds = new WeakMap<Request, string>();",
        "const digests = new Map<string, { mtimeMs: number; hex: string }>();",
        'const NUMERIC = new Set(["integer", "number"]);',
        "  const perCall = new Map<Database, number>(); // inside a function: not module-level",
      ].join("\n"),
    );
    expect(found.map((problem) => problem.split(":")[1])).toEqual(["1", "2", "3", "4", "5"]);
  });
});
