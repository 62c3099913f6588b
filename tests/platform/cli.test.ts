// The ./outpost command line as people and scripts meet it (the real command, run as a process): every
// command's help has an example, usage errors exit 2 (docs/operations.md), and the changes it makes
// (admin create, admin unlock, token create) are in the audit log with actor `cli`.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createTestDatabase } from "../helpers/database";
import { runOutpost } from "../helpers/process";

const dataDir = mkdtempSync(path.join(tmpdir(), "outpost-cli-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const env = { DATA_DIR: dataDir };

/** The subcommands a help text lists (its "Commands:" section), without commander's `help`. */
function subcommands(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1]?.split(/^\S/m)[0] ?? "";
  return [...section.matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!).filter((name) => name !== "help");
}

/** Every command of the program, found by walking the help texts (so a new command is covered too). */
async function everyCommand(): Promise<{ args: string[]; help: string }[]> {
  const found: { args: string[]; help: string }[] = [];
  const queue: string[][] = [[]];
  while (queue.length > 0 && found.length < 50) {
    const args = queue.shift()!;
    const result = await runOutpost([...args, "--help"], env);
    expect({ args, code: result.code }).toEqual({ args, code: 0 });
    found.push({ args, help: result.stdout });
    for (const name of subcommands(result.stdout)) queue.push([...args, name]);
  }
  return found;
}

const commands = await everyCommand();
const leaves = commands.filter((command) => subcommands(command.help).length === 0);

describe("help", () => {
  test("the walk finds every command", () => {
    expect(leaves.map((command) => command.args.join(" ")).sort()).toEqual([
      "admin create",
      "admin reset-factors",
      "admin unlock",
      "backup",
      "e2e run",
      "e2e suites",
      "forward",
      "login",
      "migrate",
      "restore",
      "ssh",
      "start",
      "token create",
    ]);
  });

  test("every command's --help ends with an example of it", () => {
    for (const { args, help } of commands) {
      const example = help.split("\nExample:\n")[1] ?? "";
      expect({ args, example: example.includes(`./outpost ${args.join(" ")}`.trim()) }).toEqual({
        args,
        example: true,
      });
    }
  });

  test("start --help names every role; e2e's --protocol-version says what it sends", () => {
    const start = commands.find((command) => command.args.join(" ") === "start")!.help;
    for (const role of ["all", "web", "worker", "tunnel"]) expect(start).toContain(role);
    const run = commands.find((command) => command.args.join(" ") === "e2e run")!.help;
    expect(run).toMatch(/--protocol-version <version>\s+X-E2E-Protocol-Version header/);
  });
});

describe("usage errors exit 2", () => {
  test.each([
    ["an unknown command", ["no-such-command"]],
    ["no command", []],
    ["a group without its subcommand", ["admin", "nothing"]],
    ["e2e run without --suite", ["e2e", "run", "--env", "staging"]],
    ["token create with a role that is none", ["token", "create", "--name", "ci", "--role", "root"]],
    ["admin create without --email", ["admin", "create"]],
    ["an extra argument", ["migrate", "now"]],
  ])("%s", async (_name, args) => {
    const result = await runOutpost(args, env);
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: "" });
    expect(result.stderr).not.toBe("");
  });

  test("an unknown option, on every command", async () => {
    for (const { args } of leaves) {
      const result = await runOutpost([...args, "--no-such-option"], env);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      // (Or first a required option it lacks: a usage error all the same.)
      expect(result.stderr).toMatch(/unknown option '--no-such-option'|required option/);
    }
  });
});

describe("audited with actor cli", () => {
  test("admin create, admin unlock and token create: target, details, never the secret", async () => {
    const database = await createTestDatabase();
    const run = (args: string[], stdin?: string) =>
      runOutpost(args, { ...env, DATABASE_URL: database.url }, stdin);
    const events = () =>
      database.sql<
        {
          actor_kind: string;
          actor: string;
          action: string;
          target: string | null;
          status: number;
          details: Record<string, unknown>;
        }[]
      >`
        select actor_kind, actor, action, target, status, details from audit_events order by at, id`;

    expect((await run(["admin", "create", "--email", "Ops@Example.test"], "a durable password\n")).code).toBe(
      0,
    );
    const [operator] = await database.sql<{ id: string }[]>`select id::text from operators`;
    // The same email again: refused (exit 2), and recorded as refused.
    expect((await run(["admin", "create", "--email", "ops@example.test"], "a durable password\n")).code).toBe(
      2,
    );
    expect((await run(["admin", "unlock", "--email", "ops@example.test"])).code).toBe(0);
    const token = await run(["token", "create", "--name", "ci", "--role", "viewer"]);
    expect(token.code).toBe(0);
    const [record] = await database.sql<{ id: string }[]>`select id::text from api_tokens`;

    const rows = [...(await events())];
    expect(rows).toEqual([
      {
        actor_kind: "cli",
        actor: "cli",
        action: "operator.create",
        target: `operator:${operator!.id}`,
        status: 201,
        details: expect.objectContaining({ email: "ops@example.test", role: "admin" }),
      },
      {
        actor_kind: "cli",
        actor: "cli",
        action: "operator.create",
        target: null,
        status: 409,
        details: expect.objectContaining({ email: "ops@example.test", role: "admin" }),
      },
      {
        actor_kind: "cli",
        actor: "cli",
        action: "operator.unlock",
        target: null,
        status: 200,
        details: expect.objectContaining({ email: "ops@example.test", cleared: 0 }),
      },
      {
        actor_kind: "cli",
        actor: "cli",
        action: "token.create",
        target: `token:${record!.id}`,
        status: 201,
        details: expect.objectContaining({ name: "ci", role: "viewer" }),
      },
    ]);
    const text = JSON.stringify(rows);
    expect(text).not.toContain(token.stdout.trim());
    expect(text).not.toContain("a durable password");
  });
});
