// Console forms are contract first too: every console POST route declares its body as a TypeBox
// schema (taken from the app's route table, so a new route without one fails here), and a form its
// schema refuses gets a 400 page that names the field in the schema's words, after the CSRF and
// access checks, with nothing changed in the database. Valid text with CR/LF and odd Unicode passes.
import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import { isApiPath } from "../../modules/platform/http";
import { createLogger } from "../../modules/platform/logger";
import { form, startTestApp } from "../helpers/app";

const app = await startTestApp();
const routes = buildApp({
  config: app.config,
  database: app.database,
  logger: createLogger("silent"),
  workerRunning: () => true,
}).routes;

test("every console POST route declares its body (and its path's params) as a schema", () => {
  const consolePosts = routes.filter((route) => route.method === "POST" && !isApiPath(route.path));
  expect(consolePosts.length).toBeGreaterThan(50);
  const lacking = consolePosts
    .filter((route) => {
      const hooks = route.hooks as { body?: unknown; params?: unknown };
      return !hooks.body || (route.path.includes(":") && !hooks.params);
    })
    .map((route) => route.path);
  expect(lacking).toEqual([]);
});

const count = async (table: string) =>
  Number((await app.database.sql.unsafe(`select count(*)::int as n from ${table}`))[0]!.n);

/** The 400 page a refused form gets: HTML, the field named in its schema's words. */
async function expectRefusedPage(response: Response, words: string) {
  expect(response.status).toBe(400);
  expect(response.headers.get("content-type")).toContain("text/html");
  const html = await response.text();
  expect(html).toContain("The form was not accepted");
  expect(html).toContain(words);
  expect(html).toContain("Nothing was changed");
}

describe("a form its schema refuses", () => {
  test("a missing field, a list for a text, an over-long text: a 400 page naming it; no token made", async () => {
    const admin = await app.session("admin");
    const post = (body: string) =>
      app.fetch("/settings/tokens", {
        method: "POST",
        headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
        body: `_csrf=${admin.csrf}&${body}`,
      });
    const before = await count("api_tokens");
    await expectRefusedPage(await post("role=viewer"), "name is required");
    await expectRefusedPage(await post("name=a&name=b&role=viewer"), "name must be text");
    await expectRefusedPage(
      await post(`name=${"x".repeat(201)}&role=viewer`),
      "name is longer than 200 characters",
    );
    expect(await count("api_tokens")).toBe(before);
    // The same form, right, is taken.
    expect((await post("name=ci&role=viewer")).status).toBe(201);
    expect(await count("api_tokens")).toBe(before + 1);
  });

  test("multipart: a text Elysia reads as JSON (an object) and a file where a text is expected are refused", async () => {
    const operator = await app.session("operator");
    const before = await count("devices");
    for (const value of ['{"a":1}', new File(["x"], "name.txt")]) {
      const body = new FormData();
      body.append("_csrf", operator.csrf);
      body.append("mac_address", "06:C0:FF:00:00:01");
      body.append("name", value);
      const refused = await app.fetch("/devices", {
        method: "POST",
        headers: { cookie: operator.cookie },
        body,
      });
      await expectRefusedPage(refused, "name must be text");
    }
    expect(await count("devices")).toBe(before);
  });

  test("a forged post with a wrong field is still refused as forged (403), before its schema", async () => {
    const admin = await app.session("admin");
    const before = await count("api_tokens");
    const forged = await app.fetch("/settings/tokens", {
      ...form({ _csrf: "forged", role: "viewer" }),
      headers: { cookie: admin.cookie, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain("did not come from this site");
    const viewer = await app.session("viewer");
    const notAllowed = await app.fetch("/settings/tokens", {
      ...form({ _csrf: viewer.csrf, name: "a".repeat(500) }),
      headers: { cookie: viewer.cookie, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(notAllowed.status).toBe(403);
    expect(await count("api_tokens")).toBe(before);
  });

  test("a page script asking for JSON gets the API's typed error instead of the page", async () => {
    const operator = await app.session("operator");
    const response = await app.fetch("/devices/bulk", {
      method: "POST",
      headers: {
        cookie: operator.cookie,
        accept: "application/json",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: `_csrf=${operator.csrf}&action=approve&action=reject`,
    });
    expect(response.status).toBe(400);
    const error = ((await response.json()) as { error: { code: string; details: { field: string } } }).error;
    expect(error.code).toBe("invalid_request");
    expect(error.details.field).toBe("action");
  });

  test("a page's query its schema refuses gets the 400 page too", async () => {
    const viewer = await app.session("viewer");
    const response = await app.fetch(`/devices?search=${"x".repeat(1001)}`, {
      headers: { cookie: viewer.cookie },
    });
    expect(response.status).toBe(400);
    const html = await response.text();
    expect(html).toContain("The address was not understood");
    expect(html).toContain("search is longer than 1000 characters");
  });
});

test("valid text with CR/LF, combining marks, astral and right-to-left characters is taken as sent", async () => {
  const operator = await app.session("operator");
  const name = "Pump\r\nNo. 7 — Ünïcödé 𝔘𝔫𝔦 ﷽ e\u0301 👩‍🔧";
  const response = await app.fetch("/devices", {
    ...form({ _csrf: operator.csrf, mac_address: "06:C0:FF:00:00:02", name }),
    headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
  });
  expect(response.status).toBe(201);
  const [row] = await app.database.sql<{ name: string }[]>`
    select metadata->>'name' as name from devices where mac_address = '06:C0:FF:00:00:02'`;
  expect(row?.name).toBe(name);
});

test("a field a form may repeat (checkboxes) is read as a list, whether posted once or several times", async () => {
  const operator = await app.session("operator");
  const headers = { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" };
  const ids: string[] = [];
  for (const mac of ["06:C0:FF:00:01:01", "06:C0:FF:00:01:02", "06:C0:FF:00:01:03"]) {
    await app.fetch("/devices", { ...form({ _csrf: operator.csrf, mac_address: mac }), headers });
    const [row] = await app.database.sql<{ id: string }[]>`select id from devices where mac_address = ${mac}`;
    ids.push(row!.id);
  }
  const approve = (chosen: string[]) =>
    app.fetch("/devices/bulk", {
      method: "POST",
      headers,
      body: new URLSearchParams([
        ["_csrf", operator.csrf],
        ["action", "approve"],
        ...chosen.map((id) => ["ids", id]),
      ]),
    });
  expect((await approve(ids.slice(0, 2))).status).toBe(303);
  expect((await approve(ids.slice(2))).status).toBe(303);
  const statuses = await app.database.sql<{ approval_status: string }[]>`
    select approval_status from devices where id = any(${ids}::uuid[])`;
  expect(statuses.map((s) => s.approval_status)).toEqual(["approved", "approved", "approved"]);
});
