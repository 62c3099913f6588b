// The systemd units in deploy/ parse cleanly: systemd-analyze reports unknown keys and bad values
// only as warnings (exit 0), so any output at all fails the test.
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const DEPLOY = path.resolve(import.meta.dir, "../../deploy");
const REPO = path.resolve(DEPLOY, "..");
const units = [
  ...readdirSync(path.join(DEPLOY, "systemd"))
    .filter((name) => name.endsWith(".service"))
    .map((name) => path.join(DEPLOY, "systemd", name)),
  path.join(DEPLOY, "outpost-agent.service"),
  // After the services: verifying a timer looks for the service it starts beside it.
  ...readdirSync(path.join(DEPLOY, "systemd"))
    .filter((name) => name.endsWith(".timer"))
    .map((name) => path.join(DEPLOY, "systemd", name)),
];
const scratch = mkdtempSync(path.join(tmpdir(), "outpost-units-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test("the server units cover every role and share one environment file", () => {
  const roles = units
    .map((unit) => /^Environment=OUTPOST_ROLE=(\w+)$/m.exec(readFileSync(unit, "utf8"))?.[1])
    .filter(Boolean)
    .sort();
  expect(roles).toEqual(["all", "tunnel", "web", "worker"]);
  for (const unit of units.filter((u) => u.endsWith(".service") && !u.endsWith("outpost-agent.service"))) {
    const text = readFileSync(unit, "utf8");
    expect(text).toContain("EnvironmentFile=/etc/outpost/outpost.env");
    for (const hardening of [
      "NoNewPrivileges=yes",
      "ProtectSystem=strict",
      "PrivateTmp=yes",
      "User=outpost",
    ]) {
      expect({ unit: path.basename(unit), hardening, present: text.includes(hardening) }).toEqual({
        unit: path.basename(unit),
        hardening,
        present: true,
      });
    }
  }
});

test("the backup timer starts the backup service, which writes archives where only it reads them", () => {
  const timer = readFileSync(path.join(DEPLOY, "systemd/outpost-backup.timer"), "utf8");
  expect(timer).toMatch(/^OnCalendar=.+$/m);
  expect(timer).toContain("Persistent=true");
  const service = readFileSync(path.join(DEPLOY, "systemd/outpost-backup.service"), "utf8");
  expect(service).toContain("Type=oneshot");
  expect(service).toContain("UMask=0077");
  expect(service).toMatch(/^ExecStart=.*outpost backup --output .*\/var\/backups\/outpost\//m);
  expect(service).toContain("ReadWritePaths=/var/lib/outpost /var/backups/outpost");
});

test.skipIf(!Bun.which("systemd-analyze"))(
  "systemd-analyze verify accepts every unit without a warning",
  async () => {
    for (const unit of units) {
      // verify also checks that ExecStart exists: point it at this checkout instead of /opt/outpost.
      const copy = path.join(scratch, path.basename(unit));
      copyFileSync(unit, copy);
      const text = readFileSync(copy, "utf8")
        .replaceAll("/opt/outpost/outpost", path.join(REPO, "outpost"))
        .replace("/usr/local/bin/outpost-agent", "/bin/true")
        .replace(/^WorkingDirectory=.*$/m, `WorkingDirectory=${REPO}`);
      writeFileSync(copy, text);
      const result = Bun.spawnSync(["systemd-analyze", "verify", copy], { stderr: "pipe", stdout: "pipe" });
      const output = `${result.stdout.toString()}${result.stderr.toString()}`.trim();
      expect({ unit: path.basename(unit), code: result.exitCode, output }).toEqual({
        unit: path.basename(unit),
        code: 0,
        output: "",
      });
    }
  },
);
