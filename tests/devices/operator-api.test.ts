import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";
import { json, register } from "./helpers";

// biome-ignore lint/suspicious/noExplicitAny: response documents are checked by the assertions themselves
type Json = any;

const app = await startTestApp();
const sql = app.database.sql;
const MEDIA = "application/vnd.api+json";
const operatorToken = await app.token("operator");

async function productOf(id: string) {
  const [row] = await sql<
    { product_name: string | null }[]
  >`select product_name from devices where id = ${id}`;
  return row!.product_name;
}

describe("/api/json with a browser session", () => {
  test("a session reads; a session write needs the CSRF token (refused without, changes nothing), works with it", async () => {
    const operator = await app.session("operator");
    const id = (await register(app, { product_name: "before" })).body.data.id;
    const read = await app.fetch(`/api/json/devices/${id}`, {
      headers: { accept: MEDIA, cookie: operator.cookie },
    });
    expect(read.status).toBe(200);
    expect(((await read.json()) as Json).data).toMatchObject({ type: "device", id });

    const patch = (headers: Record<string, string>) =>
      app.fetch(`/api/json/devices/${id}`, {
        method: "PATCH",
        headers: { accept: MEDIA, "content-type": MEDIA, cookie: operator.cookie, ...headers },
        body: JSON.stringify({ data: { type: "device", id, attributes: { product_name: "after" } } }),
      });
    for (const headers of [{}, { "x-csrf-token": "0".repeat(64) }] as Record<string, string>[]) {
      const refused = await patch(headers);
      expect(refused.status).toBe(403);
      expect(await productOf(id)).toBe("before");
    }
    const accepted = await patch({ "x-csrf-token": operator.csrf });
    expect(accepted.status).toBe(200);
    expect(await productOf(id)).toBe("after");
  });

  test("a viewer session reads but may not write, even with the CSRF token", async () => {
    const viewer = await app.session("viewer");
    const id = (await register(app, { product_name: "viewer-sees" })).body.data.id;
    expect(
      (await app.fetch(`/api/json/devices/${id}`, { headers: { accept: MEDIA, cookie: viewer.cookie } }))
        .status,
    ).toBe(200);
    const write = await app.fetch(`/api/json/devices/${id}`, {
      method: "DELETE",
      headers: { accept: MEDIA, cookie: viewer.cookie, "x-csrf-token": viewer.csrf },
    });
    expect(write.status).toBe(403);
    expect(await productOf(id)).toBe("viewer-sees");
  });
});

describe("/api/json devices sort", () => {
  test("sort=-field is descending, sort=field ascending", async () => {
    const product = `sorted-${crypto.randomUUID().slice(0, 8)}`;
    const macs: string[] = [];
    for (let i = 0; i < 4; i++)
      macs.push((await register(app, { product_name: product })).body.data.mac_address as string);
    const list = async (sort: string) => {
      const response = await app.fetch(
        `/api/json/devices?filter[product]=${product}&sort=${encodeURIComponent(sort)}`,
        { headers: { accept: MEDIA, authorization: `Bearer ${operatorToken}` } },
      );
      expect(response.status).toBe(200);
      return ((await response.json()) as Json).data.map((d: Json) => d.attributes.mac_address) as string[];
    };
    const ascending = [...macs].sort();
    expect(await list("mac_address")).toEqual(ascending);
    expect(await list("-mac_address")).toEqual([...ascending].reverse());
  });
});

describe("operator API bad input", () => {
  const bearer = { authorization: `Bearer ${operatorToken}` };
  const cases: [string, string, RequestInit, number, string][] = [
    [
      "GET /api/json/devices/{non-UUID}",
      "/api/json/devices/not-a-uuid",
      { headers: { ...bearer, accept: MEDIA } },
      404,
      "not_found",
    ],
    [
      "PATCH /api/json/devices/{non-UUID}",
      "/api/json/devices/12345",
      {
        method: "PATCH",
        headers: { ...bearer, "content-type": MEDIA },
        body: JSON.stringify({ data: { type: "device", attributes: { product_name: "x" } } }),
      },
      404,
      "not_found",
    ],
    [
      "DELETE /api/json/devices/{non-UUID}",
      "/api/json/devices/not-a-uuid",
      { method: "DELETE", headers: bearer },
      404,
      "not_found",
    ],
    [
      "an oversized /api/json body",
      "/api/json/pending_commands",
      {
        method: "POST",
        headers: { ...bearer, "content-type": MEDIA },
        body: JSON.stringify({
          data: { type: "pending_command", attributes: { payload: "x".repeat(1_200_000) } },
        }),
      },
      413,
      "payload_too_large",
    ],
    [
      "an oversized builder validate body",
      "/api/v1/builder-configurations/validate",
      {
        ...json({ builder: "alert", selections: [], padding: "x".repeat(300_000) }),
        headers: { ...bearer, "content-type": "application/json" },
      },
      413,
      "payload_too_large",
    ],
  ];
  for (const [name, path, init, status, code] of cases) {
    test(`${name} → ${status} ${code}`, async () => {
      const [before] = await sql<{ devices: number; commands: number }[]>`
        select (select count(*)::int from devices) as devices, (select count(*)::int from pending_commands) as commands`;
      const response = await app.fetch(path, init);
      expect(response.status).toBe(status);
      const body = (await response.json()) as Json;
      const errorCode = body.errors ? body.errors[0].code : body.error.code;
      expect(errorCode).toBe(code);
      const [after] = await sql<{ devices: number; commands: number }[]>`
        select (select count(*)::int from devices) as devices, (select count(*)::int from pending_commands) as commands`;
      expect(after).toEqual(before!);
    });
  }
});
