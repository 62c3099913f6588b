import { approveDevices } from "../../modules/devices/service";
import type { TestApp } from "../helpers/app";

let macCounter = Math.floor(Math.random() * 0xffffff);

/** A fresh, unique MAC address. */
export function newMac(): string {
  macCounter = (macCounter + 1) & 0xffffff;
  const hex = `02AB${macCounter.toString(16).padStart(6, "0")}${Math.floor(Math.random() * 256)
    .toString(16)
    .padStart(2, "0")}`.toUpperCase();
  return hex.match(/../g)!.join(":");
}

export function json(body: unknown, method = "POST"): RequestInit {
  return { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

export async function register(app: TestApp, body: Record<string, unknown> = {}) {
  const response = await app.fetch("/api/v1/devices/register", json({ mac_address: newMac(), ...body }));
  return {
    response,
    body: (await response.json()) as { data: Record<string, unknown> & { id: string; api_token?: string } },
  };
}

/** A device secret as the agent makes one (agent/state.ts): 32 random bytes, base64url. */
export const deviceSecret = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");

/**
 * A registered, approved device with its API token. It registers with a device secret, as the agent
 * does: an approved device gets its token only by proving its identity (docs/device-api.md).
 */
export async function approvedDevice(app: TestApp, body: Record<string, unknown> = {}) {
  const proof = { device_secret: deviceSecret(), ...body };
  const first = await register(app, proof);
  await approveDevices(app.database.sql, [first.body.data.id]);
  const again = await app.fetch(
    "/api/v1/devices/register",
    json({ mac_address: first.body.data.mac_address, ...proof }),
  );
  const data = ((await again.json()) as { data: { id: string; api_token: string; mac_address: string } })
    .data;
  return { id: data.id, token: data.api_token, mac: data.mac_address };
}

/** An approved device that has sent one heartbeat: online, so a device page opens remote access. */
export async function onlineDevice(app: TestApp) {
  const device = await approvedDevice(app);
  const beat = await app.fetch(heartbeatUrl(device.id, device.token), json(sampleHeartbeat()));
  if (beat.status !== 200) throw new Error(`the heartbeat answered ${beat.status}`);
  return device;
}

export function sampleHeartbeat(extra: Record<string, unknown> = {}) {
  return {
    telemetry: {
      device: {
        identity: { mac_address: "02:00:00:00:00:01", ip_address: "192.0.2.10" },
        uptime_seconds: 12,
      },
      scripts: {
        pcp: {
          data: {
            status: "success",
            validation_status: "valid",
            duration_ms: 4,
            output: { load_1m: 0.42, mem: "61.5" },
          },
        },
      },
      meta: { timestamp: new Date().toISOString(), duration: "1.2ms" },
      ...extra,
    },
    connection_status: { active: false, connection_string: "", pid: 0 },
  };
}

export function heartbeatUrl(id: string, token?: string) {
  return `/api/v1/devices/${id}/heartbeat${token === undefined ? "" : `?api_key=${encodeURIComponent(token)}`}`;
}

/** The telemetry schema a device has (stored by hash in telemetry_schemas), null without one. */
export async function schemaOf(app: TestApp, deviceId: string): Promise<unknown> {
  const [row] = await app.database.sql<{ schema: unknown }[]>`
    select s.schema from devices d left join telemetry_schemas s on s.hash = d.schema_hash
    where d.id = ${deviceId}`;
  return row?.schema ?? null;
}

/**
 * Counts the statements that `events` (e.g. "insert", "insert or update") run on `table`, by a
 * statement-level trigger in the test database (it fires even when no row changes): how many batches
 * concurrent heartbeats were written in, or whether a heartbeat ran a statement at all. Returns the
 * count so far.
 */
export async function countStatements(
  app: TestApp,
  table: string,
  events: string,
): Promise<() => Promise<number>> {
  const sql = app.database.sql;
  const name = `test_statements_on_${table}`;
  // DDL with a made-up name, several statements: only the simple protocol (unsafe) runs it.
  await sql.unsafe(`
    create table ${name} (n int not null);
    insert into ${name} values (0);
    create function ${name}() returns trigger language plpgsql as $$
    begin update ${name} set n = n + 1; return null; end $$;
    create trigger ${name} after ${events} on ${table} for each statement execute function ${name}();`);
  return async () => {
    const [row] = await sql<{ n: number }[]>`select n from ${sql(name)}`;
    return row!.n;
  };
}
