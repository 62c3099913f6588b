import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { backoffDelayMs } from "../../agent/backoff.ts";
import {
  detectIdentity,
  deviceNameFromMac,
  listInterfaces,
  normalizeMac,
  selectPrimaryInterface,
} from "../../agent/identity.ts";
import { credentialsPath, loadCredentials, saveCredentials } from "../../agent/state.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe("identity", () => {
  test("name derivation and MAC normalisation", () => {
    expect(deviceNameFromMac("AA:BB:CC:DD:EE:FF")).toBe("device-aabbccddeeff");
    expect(normalizeMac("AA-BB-CC-dd-ee-ff")).toBe("aa:bb:cc:dd:ee:ff");
    expect(normalizeMac("zz")).toBeNull();
  });

  const ifs = [
    { name: "lo", mac: "00:00:00:00:00:00", up: true, loopback: true, ifindex: 1 },
    { name: "wlan0", mac: "11:22:33:44:55:66", up: false, loopback: false, ifindex: 2 },
    { name: "dummy0", mac: "00:00:00:00:00:00", up: true, loopback: false, ifindex: 3 },
    { name: "eth1", mac: "aa:bb:cc:dd:ee:01", up: true, loopback: false, ifindex: 4 },
    { name: "eth2", mac: "aa:bb:cc:dd:ee:02", up: true, loopback: false, ifindex: 5 },
  ];

  test("primary = first up, non-loopback interface with a hardware address; override wins", () => {
    expect(selectPrimaryInterface(ifs, null).name).toBe("eth1");
    expect(selectPrimaryInterface(ifs, "wlan0").mac).toBe("11:22:33:44:55:66");
    expect(() => selectPrimaryInterface(ifs, "eth9")).toThrow(/does not exist/);
    expect(() => selectPrimaryInterface(ifs, "dummy0")).toThrow(/no hardware address/);
    expect(() => selectPrimaryInterface(ifs.slice(0, 3), null)).toThrow(/no network interface/);
  });

  test("detects this machine's interface from /sys/class/net", () => {
    const live = listInterfaces();
    expect(live.some((i) => i.loopback)).toBe(true);
    const id = detectIdentity(null);
    expect(id.mac_address).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    expect(id.name).toBe(`device-${id.mac_address.replace(/:/g, "")}`);
    expect(id.ip_address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });
});

describe("credential storage", () => {
  test("written atomically with mode 0600 in a 0700 directory, and read back", () => {
    const stateDir = path.join(tmp.dir, "state");
    saveCredentials(stateDir, { uuid: "0D5E3F1A-1111-4222-8333-444455556666", token: "tok_1" });
    const file = credentialsPath(stateDir);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(stateDir).mode & 0o777).toBe(0o700);
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).toEqual({
      uuid: "0d5e3f1a-1111-4222-8333-444455556666",
      token: "tok_1",
    });
    saveCredentials(stateDir, { uuid: "0d5e3f1a-1111-4222-8333-444455556666", token: "tok_2" });
    expect(loadCredentials(stateDir)?.token).toBe("tok_2");
    expect(fs.readdirSync(stateDir).filter((f) => f.includes(".tmp"))).toEqual([]);
  });

  test("missing → null; corrupt or incomplete → clear error; invalid input refused", () => {
    expect(loadCredentials(path.join(tmp.dir, "none"))).toBeNull();
    const dir = path.join(tmp.dir, "bad");
    fs.mkdirSync(dir);
    fs.writeFileSync(credentialsPath(dir), "{not json");
    expect(() => loadCredentials(dir)).toThrow(/corrupt/);
    fs.writeFileSync(credentialsPath(dir), JSON.stringify({ uuid: "0d5e3f1a-1111-4222-8333-444455556666" }));
    expect(() => loadCredentials(dir)).toThrow(/incomplete/);
    expect(() => saveCredentials(dir, { uuid: "nope", token: "x" })).toThrow(/invalid device id/);
  });
});

describe("backoff", () => {
  test("capped exponential with ±25 % jitter", () => {
    expect(backoffDelayMs(1, 1000, 300000, () => 0.5)).toBe(1000);
    expect(backoffDelayMs(3, 1000, 300000, () => 0.5)).toBe(4000);
    expect(backoffDelayMs(20, 1000, 300000, () => 0.5)).toBe(300000);
    expect(backoffDelayMs(20, 1000, 300000, () => 1)).toBe(300000);
    expect(backoffDelayMs(3, 1000, 300000, () => 0)).toBe(3000);
    expect(backoffDelayMs(3, 1000, 300000, () => 0.999)).toBeLessThanOrEqual(5000);
  });
});

describe("announced telemetry schema", () => {
  test("stays within the server's limits (depth 8, 256 keys): compact form when the full one is too big", async () => {
    const { buildSchemaDefinition, withinSchemaLimits } = await import("../../agent/telemetry.ts");
    const { parseScript } = await import("../../shared/scripts/frontmatter.ts");
    const { BUILTIN_SCRIPT_SOURCES } = await import("../../agent/builtin-scripts/index.ts");
    const asInstalled = (text: string) => ({ ...parseScript(text), path: "/x" });
    const builtins = BUILTIN_SCRIPT_SOURCES.map(asInstalled);
    const full = buildSchemaDefinition("p", builtins);
    expect(full.properties.disk.properties).toBeDefined();
    expect(
      (full.properties.disk as { properties: { mounts: { items: unknown } } }).properties.mounts.items,
    ).toBeDefined();
    const many = Array.from({ length: 12 }, (_, i) => {
      const fields = Array.from(
        { length: 15 },
        (_, j) =>
          `    f${j}: { type: object, properties: { a: { type: object, properties: { b: { type: object, properties: { c: { type: number } } } } } } }`,
      ).join("\n");
      return asInstalled(
        `/*---\nname: big${i}\nversion: 1\nschema:\n  type: object\n  properties:\n${fields}\n---*/\nfunction main() { return {}; }\n`,
      );
    });
    const big = buildSchemaDefinition("p", [...builtins, ...many]);
    expect(withinSchemaLimits(big)).toBe(true);
    expect(Object.keys(big.properties)).toHaveLength(18);
    expect(big.properties.big0).toEqual({
      type: "object",
      properties: Object.fromEntries(Array.from({ length: 15 }, (_, j) => [`f${j}`, { type: "object" }])),
    });
    expect(Object.values(big.properties).some((p) => JSON.stringify(p) === '{"type":"object"}')).toBe(true);
    expect(big.version).toMatch(/^s-[0-9a-f]{12}$/);
  });
});
