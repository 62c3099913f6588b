// A device page's lease across web processes: the count of pages holding a console lease lives in
// PostgreSQL, so a tab closing on one web process does not end the lease a tab on another process took
// over; a killed process's streams are no longer refreshed and stop counting once their TTL runs out.
// Two real OUTPOST_ROLE=web processes on one database, the page's own requests (panel, live stream,
// close beacon).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { approveDevices } from "../../modules/devices/service";
import { REFRESH_MS } from "../../modules/remote-access/page-streams";
import { deviceSecret, newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";
import { type OutpostProcess, startOutpostProcess } from "../helpers/process";
import { operatorSession } from "../helpers/sessions";
import { type Json, waitFor } from "./helpers";

const database = await createTestDatabase();
const sql = database.sql;
const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-page-streams-"));
const SECRET_KEY = "page-streams-test-secret-key-0123456789";
const GRACE_SECONDS = 2;
const shared = {
  DATABASE_URL: database.url,
  SECRET_KEY,
  DATA_DIR: dataDir,
  BASE_DOMAIN: "streams.test",
  OUTPOST_ROLE: "web",
  REMOTE_ACCESS_PAGE_GRACE_SECONDS: String(GRACE_SECONDS),
};
const webA = await startOutpostProcess(shared);
const webB = await startOutpostProcess(shared);
const streams: AbortController[] = [];
/** Open streams' readers, referenced (and read) until the test ends: a collected response closes its connection. */
const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
afterAll(async () => {
  for (const s of streams) s.abort();
  for (const p of [webA, webB]) if (p.process.exitCode === null) await p.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

async function onlineDevice(web: OutpostProcess) {
  const mac = newMac();
  const secret = deviceSecret();
  const register = () =>
    fetch(`${web.url}/api/v1/devices/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mac_address: mac, device_secret: secret }),
    }).then((r) => r.json() as Promise<Json>);
  const id = (await register()).data.id as string;
  await approveDevices(sql, [id]);
  const token = (await register()).data.api_token as string;
  const beat = await fetch(`${web.url}/api/v1/devices/${id}/heartbeat?api_key=${token}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ telemetry: {} }),
  });
  expect(beat.status).toBe(200);
  return id;
}

type Session = { cookie: string; csrf: string };

/** A device page (a tab) served by `web`: asks for the panel (opening or reusing the lease), then holds the live stream. */
async function openTab(web: OutpostProcess, deviceId: string, session: Session) {
  const panel = await fetch(`${web.url}/devices/${deviceId}/remote-access/panel`, {
    method: "POST",
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
  });
  expect(panel.status).toBe(200);
  const leaseId = /data-lease-id="([0-9a-f-]{36})"/.exec(await panel.text())?.[1];
  expect(leaseId).toBeDefined();
  const controller = new AbortController();
  streams.push(controller);
  const live = await fetch(`${web.url}/devices/${deviceId}/remote-access/live?lease=${leaseId}`, {
    headers: { cookie: session.cookie },
    signal: controller.signal,
  });
  expect(live.status).toBe(200);
  const reader = live.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain(": connected");
  readers.push(reader);
  // Read on, as a page does (bounded: the stream ends when the tab closes or the server goes).
  void (async () => {
    for (let i = 0; i < 1000; i++) if ((await reader.read()).done) return;
  })().catch(() => {});
  return {
    leaseId: leaseId!,
    /** The tab closes: its stream drops and the page sends its beacon (to `beaconTo`, any web process). */
    async close(beaconTo: OutpostProcess = web) {
      controller.abort();
      const beacon = await fetch(`${beaconTo.url}/devices/${deviceId}/remote-access/leave`, {
        method: "POST",
        headers: {
          cookie: session.cookie,
          "x-csrf-token": session.csrf,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ lease_id: leaseId! }).toString(),
      });
      expect(beacon.status).toBe(204);
    },
  };
}

async function leaseOpen(leaseId: string) {
  const [row] = await sql<{ open: boolean }[]>`
    select ended_at is null and expires_at > now() as open from remote_access_leases where id = ${leaseId}`;
  return row?.open ?? false;
}

const streamRows = (leaseId: string) =>
  sql<{ id: string; live: boolean; expires_at: string }[]>`
    select id, expires_at > now() as live, expires_at::text from remote_access_page_streams
    where lease_id = ${leaseId} order by opened_at`;

describe("a console lease held by pages on two web processes", () => {
  test("a tab closing on one process leaves the lease to the tab on the other; a killed process's stream expires", async () => {
    const deviceId = await onlineDevice(webA);
    const session = await operatorSession(database.db, SECRET_KEY, "operator");
    const first = await openTab(webA, deviceId, session);
    const second = await openTab(webB, deviceId, session); // takes the same lease over
    expect(second.leaseId).toBe(first.leaseId);
    const leaseId = first.leaseId;
    await waitFor(async () => (await streamRows(leaseId)).length === 2, 5_000, "both streams counted");

    // The first tab closes (stream and beacon on A): past the grace period the lease is still open.
    await first.close();
    await waitFor(async () => (await streamRows(leaseId)).length === 1, 5_000, "A's stream gone");
    await Bun.sleep((GRACE_SECONDS + 2) * 1000);
    expect(await leaseOpen(leaseId)).toBe(true);

    // B dies with the second tab's stream open; the tab reconnects, to A.
    webB.process.kill("SIGKILL");
    await webB.process.exited;
    const reconnected = await openTab(webA, deviceId, session);
    expect(reconnected.leaseId).toBe(leaseId);
    await waitFor(
      async () => (await streamRows(leaseId)).length === 2,
      5_000,
      "the reconnected stream counted",
    );
    const [dead, reconnectedRow] = await streamRows(leaseId); // the older: B's
    // A refreshes its own row (every REFRESH_MS); B's row, its process killed, is never refreshed…
    await waitFor(
      async () =>
        (await streamRows(leaseId)).find((r) => r.id === reconnectedRow!.id)?.expires_at !==
        reconnectedRow!.expires_at,
      REFRESH_MS + 5_000,
      "A's refresh of its stream",
    );
    expect((await streamRows(leaseId)).find((r) => r.id === dead!.id)?.expires_at).toBe(dead!.expires_at);
    // …so its TTL (PAGE_STREAM_TTL_SECONDS) runs out: moved on in the database instead of waited for.
    await sql`update remote_access_page_streams set expires_at = now() - interval '1 second'
      where id = ${dead!.id}`;
    const mine = (await streamRows(leaseId)).filter((r) => r.id !== dead!.id);
    expect(mine.map((r) => r.live)).toEqual([true]);
    expect(await leaseOpen(leaseId)).toBe(true);

    // The last tab closes: nothing holds the lease, it ends after the grace period.
    await reconnected.close();
    await waitFor(async () => !(await leaseOpen(leaseId)), (GRACE_SECONDS + 5) * 1000, "the lease to end");
    const [ended] = await sql<{ end_reason: string }[]>`
      select end_reason from remote_access_leases where id = ${leaseId}`;
    expect(ended!.end_reason).toBe("page_left");
  }, 90_000);
});
