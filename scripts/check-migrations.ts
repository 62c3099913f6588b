// Fails when the drizzle schema and the committed SQL migrations disagree: drizzle-kit generates
// into a scratch copy of migrations/, and any new file means a migration is missing.
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");
const scratch = mkdtempSync(path.join(tmpdir(), "outpost-migrations-"));
try {
  cpSync(path.join(root, "migrations"), scratch, { recursive: true });
  const before = new Set(readdirSync(scratch));
  const result = Bun.spawnSync(
    [
      path.join(root, "node_modules/.bin/bun"),
      "x",
      "--bun",
      "drizzle-kit",
      "generate",
      "--dialect=postgresql",
      "--schema=./modules/*/schema.ts",
      // drizzle-kit only handles an output folder relative to the working directory.
      `--out=${path.relative(root, scratch)}`,
      "--name=drift",
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const output = result.stdout.toString() + result.stderr.toString();
  const added = readdirSync(scratch).filter((name) => !before.has(name));
  if (result.exitCode !== 0 || (added.length === 0 && !output.includes("No schema changes"))) {
    process.stderr.write(output);
    throw new Error("drizzle-kit generate failed");
  }
  if (added.length > 0) {
    const sql = Bun.file(path.join(scratch, added.find((n) => n.endsWith(".sql")) ?? added[0]!));
    process.stderr.write(
      `migrations: the schema has changes with no migration. Run \`npm run db:generate -- --name <what>\` and commit it.\nPending SQL:\n${await sql.text()}\n`,
    );
    process.exit(1);
  }
  console.log("migrations: schema and committed migrations agree");
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
