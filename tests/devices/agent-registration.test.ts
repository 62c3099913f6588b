// Agent registration → devices: the body the agent's own code builds (agent/register.ts, with its
// built-in scripts installed) registers a device whose stored identity, address, product and schema
// are what the agent detected and announced, and whose fleet-list name is the agent's.
import { afterAll, describe, expect, test } from "bun:test";
import { ensureBuiltinScripts } from "../../agent/builtin-scripts/index.ts";
import { detectIdentity } from "../../agent/identity.ts";
import { buildRegistrationBody } from "../../agent/register.ts";
import { ScriptStore } from "../../agent/scripts/store.ts";
import { testConfig } from "../agent/helpers";
import { startTestApp } from "../helpers/app";
import { tempDir } from "../helpers/temp";
import { json } from "./helpers";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

describe("the agent's registration", () => {
  test("stores what the agent detected and announced", async () => {
    const config = testConfig(tempDir("outpost-agent-registration-"), { product_name: "reg-agent" });
    const store = new ScriptStore(config.scripts_dir);
    ensureBuiltinScripts(store);
    const body = buildRegistrationBody({ config, store }, null);
    const identity = detectIdentity(config.interface);
    const response = await app.fetch("/api/v1/devices/register", json(body));
    expect(response.status).toBe(201);
    const { data } = (await response.json()) as { data: Record<string, unknown> };
    expect(data).toMatchObject({
      mac_address: identity.mac_address.toUpperCase(),
      product_name: "reg-agent",
      ipv4_address: identity.ip_address,
      schema_version: body.schema_definition.version,
      metadata: { hostname: identity.hostname, name: identity.name, os: body.metadata.os },
    });
    // The device API lists it under the agent's name.
    const list = await app.fetch("/api/v1/devices?product=reg-agent", {
      headers: { authorization: `Bearer ${await app.token("viewer")}` },
    });
    const devices = ((await list.json()) as { data: { id: string; metadata: { name?: string } }[] }).data;
    expect(devices.map((d) => [d.id, d.metadata.name])).toContainEqual([data.id as string, identity.name]);
    // Its announced schema is offered by the builder, field by field.
    const options = await app.fetch(
      `/api/v1/builder-schemas/reg-agent/versions/${body.schema_definition.version}/options?builder=report`,
      { headers: { authorization: `Bearer ${await app.token("viewer")}` } },
    );
    expect(options.status).toBe(200);
    const keys = ((await options.json()) as { data: { options: { key: string }[] } }).data.options.map(
      (o) => o.key,
    );
    expect(keys).toContain("memory.used_pct");
    expect(keys).toContain("cpu.usage_pct");
  });
});
