// The device page's script forms over HTTP: the console applies the agent's script rules (one rule,
// shared/scripts/frontmatter.ts, through the commands service) and queues nothing the agent would refuse.
import { afterAll, describe, expect, test } from "bun:test";
import { SCRIPT_NAME_MAX } from "../../shared/scripts/frontmatter";
import { startTestApp } from "../helpers/app";
import { approvedDevice } from "./helpers";

const app = await startTestApp();
afterAll(() => app.stop());
const device = await approvedDevice(app);
const operator = await app.session("operator");

const post = (path: string, fields: Record<string, string>) =>
  app.fetch(path, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: operator.cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: operator.csrf, ...fields }).toString(),
  });

/** The flash a 303 sets, decoded from its cookie. */
function flashOf(response: Response): { kind: string; text: string } | undefined {
  const cookie = response.headers.getSetCookie().find((c) => /flash=[^;]/.test(c));
  const value = cookie && /flash=([^;]+)/.exec(cookie)?.[1];
  return value ? JSON.parse(Buffer.from(value, "base64url").toString()) : undefined;
}

const queued = async (type: string) => {
  const rows = await app.database.sql<{ args: string[] }[]>`
    select args from pending_commands where device_id = ${device.id}::uuid and type = ${type}::command_type`;
  return rows.map((r) => r.args[0]);
};

describe("removing a script from the device page", () => {
  test("a name the agent accepts (up to 64 characters) is queued", async () => {
    const longest = `a${"b".repeat(SCRIPT_NAME_MAX - 1)}`;
    const reply = await post(`/devices/${device.id}/commands`, { type: "remove_script", name: longest });
    expect(reply.status).toBe(303);
    expect(reply.headers.get("location")).toContain("tab=commands");
    expect(flashOf(reply)?.kind).toBe("success");
    expect(await queued("remove_script")).toContain(longest);
  });

  test("a name the agent would refuse (65 characters, '..') is refused and nothing is queued", async () => {
    const before = await queued("remove_script");
    for (const name of [`a${"b".repeat(SCRIPT_NAME_MAX)}`, "a..b", ""]) {
      const reply = await post(`/devices/${device.id}/commands`, { type: "remove_script", name });
      expect(reply.status).toBe(303);
      expect(reply.headers.get("location")).toContain("tab=scripts");
      expect(flashOf(reply)).toEqual({ kind: "error", text: "That script name is not valid." });
    }
    expect(await queued("remove_script")).toEqual(before);
  });
});

describe("installing a script from the device page", () => {
  test("a script whose front-matter name is too long is refused in place, with the agent's reason", async () => {
    const name = "n".repeat(SCRIPT_NAME_MAX + 1);
    const text = `/*---\nname: ${name}\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n`;
    const reply = await post(`/devices/${device.id}/scripts`, { text });
    expect(reply.status).toBe(422);
    expect(await reply.text()).toContain("The agent would refuse this script: invalid script name");
    expect(await queued("install_script")).toEqual([]);
  });

  test("a pasted script over 256 KiB is refused in place", async () => {
    const text = `/*---\nname: big\nschema:\n  type: object\n---*/\n//${"x".repeat(256 * 1024)}\n`;
    const reply = await post(`/devices/${device.id}/scripts`, { text });
    expect(reply.status).toBe(422);
    expect(await reply.text()).toContain("The script is larger than 256 KiB.");
    expect(await queued("install_script")).toEqual([]);
  });
});
