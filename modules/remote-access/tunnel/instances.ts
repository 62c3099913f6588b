import type { Sql } from "postgres";

/** Where another process reaches one of a tunnel process's listeners. */
export interface Endpoint {
  host: string;
  port: number;
}

/** A tunnel process as the others see it (`tunnel_instances`). */
export interface TunnelInstance {
  instance: string;
  http: Endpoint;
  mux: Endpoint;
}

/** How often a tunnel process says it is alive. */
export const INSTANCE_BEAT_MS = 2000;
/** A process silent this long is gone (killed, or its database link is down): nothing routes to it. */
const INSTANCE_TTL_SECONDS = 10;

/**
 * Where a listener bound to `bind` is reached: that address, or for a wildcard bind TUNNEL_ADVERTISE_HOST
 * (several machines), else loopback (one machine).
 */
export function reachableHost(bind: string, advertised: string | undefined): string {
  if (bind !== "0.0.0.0" && bind !== "::") return bind;
  return advertised ?? "127.0.0.1";
}

/** A tunnel this process holds, as `tunnel_connections` records it. */
export interface HeldTunnel {
  deviceId: string;
  forwards: string[];
}

async function beat(sql: Sql, self: TunnelInstance, held: HeldTunnel[]): Promise<void> {
  await sql`insert into tunnel_instances (instance, http_host, http_port, mux_host, mux_port, seen_at)
    values (${self.instance}, ${self.http.host}, ${self.http.port}, ${self.mux.host}, ${self.mux.port}, now())
    on conflict (instance) do update set seen_at = now()`;
  await reconcile(sql, self.instance, held);
  // The devices of a process that went silent are not connected any more (their agents reconnect
  // elsewhere and write a new row); its own row goes too.
  await sql`delete from tunnel_connections c where not exists (
    select 1 from tunnel_instances i where i.instance = c.instance
      and i.seen_at > now() - make_interval(secs => ${INSTANCE_TTL_SECONDS}))`;
  await sql`delete from tunnel_instances
    where seen_at <= now() - make_interval(secs => ${INSTANCE_TTL_SECONDS * 6})`;
}

/**
 * Puts back this process's `tunnel_connections` rows when they differ from what it holds: another
 * process swept them while this one could not beat for a while (a stalled database link), or a row was
 * written for a tunnel that closed meanwhile. A device another process holds now is left to it.
 */
async function reconcile(sql: Sql, instance: string, held: HeldTunnel[]): Promise<void> {
  const [{ rows }] = await sql<{ rows: number }[]>`
    select count(*)::int as rows from tunnel_connections where instance = ${instance}`;
  if (rows === held.length) return;
  const ids = held.map((t) => t.deviceId);
  await sql`delete from tunnel_connections where instance = ${instance} and device_id <> all(${ids}::uuid[])`;
  for (const tunnel of held)
    await sql`insert into tunnel_connections (device_id, instance, forwards)
      values (${tunnel.deviceId}::uuid, ${instance}, ${tunnel.forwards}::text[])
      on conflict (device_id) do nothing`;
}

/**
 * Records this process in `tunnel_instances` (before it accepts a tunnel, so the sweep never takes its
 * rows for a dead process's) and keeps the row, and its tunnels' rows, fresh; the returned function
 * stops and forgets it.
 */
export async function announceInstance(
  sql: Sql,
  self: TunnelInstance,
  held: () => HeldTunnel[],
  onError: (error: unknown) => void,
): Promise<() => Promise<void>> {
  await beat(sql, self, held());
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    beat(sql, self, held())
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, INSTANCE_BEAT_MS);
  return async () => {
    clearInterval(timer);
    await sql`delete from tunnel_instances where instance = ${self.instance}`;
  };
}

/** The live tunnel process holding `deviceId`'s tunnel, or undefined (not connected, or its holder is gone). */
export async function holderOf(sql: Sql, deviceId: string): Promise<TunnelInstance | undefined> {
  const [row] = await sql<
    { instance: string; http_host: string; http_port: number; mux_host: string; mux_port: number }[]
  >`select i.instance, i.http_host, i.http_port, i.mux_host, i.mux_port
    from tunnel_connections c join tunnel_instances i on i.instance = c.instance
    where c.device_id = ${deviceId}::uuid
      and i.seen_at > now() - make_interval(secs => ${INSTANCE_TTL_SECONDS})`;
  return (
    row && {
      instance: row.instance,
      http: { host: row.http_host, port: row.http_port },
      mux: { host: row.mux_host, port: row.mux_port },
    }
  );
}

/**
 * The multiplexer to dial for `deviceId`: its holder's (`holds`), else any live tunnel process's (which
 * answers 502 while the device's tunnel is not up yet), else undefined (no tunnel process registered).
 */
export async function muxFor(
  sql: Sql,
  deviceId: string,
): Promise<{ mux: Endpoint; holds: boolean } | undefined> {
  const [row] = await sql<{ mux_host: string; mux_port: number; holds: boolean }[]>`
    select i.mux_host, i.mux_port, c.device_id is not null as holds
    from tunnel_instances i left join tunnel_connections c
      on c.instance = i.instance and c.device_id = ${deviceId}::uuid
    where i.seen_at > now() - make_interval(secs => ${INSTANCE_TTL_SECONDS})
    order by holds desc, i.seen_at desc limit 1`;
  return row && { mux: { host: row.mux_host, port: row.mux_port }, holds: row.holds };
}
