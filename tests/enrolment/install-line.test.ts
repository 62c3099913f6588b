// The console's install line as a newcomer meets it: the real install.sh fetched from a running Outpost
// with curl, run by sh. A server without agent builds says so in the console and the installer prints
// the server's reason; root installs without sudo and another user through sudo (both into this
// machine's own paths, in a private mount namespace whose /etc, /usr/local and /var/lib are throwaway
// overlays); a pending device ends with what happens next, not an error; an https address behind
// Caddy's internal CA fails with the way round it.
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { createEnrolmentToken } from "../../modules/enrolment/service";
import { tempDir } from "../agent/helpers";
import { agentBinary } from "../helpers/agent-binary";
import { startTestApp } from "../helpers/app";
import { startListening } from "../helpers/listener";
import { INSTALL_LINE, runShell } from "./helpers";

const tmp = tempDir("outpost-install-line-");
const dist = path.join(tmp.dir, "dist"); // this server's AGENT_DIST_DIR: empty until a test builds
fs.mkdirSync(dist);
const app = await startTestApp({ AGENT_DIST_DIR: dist });
const sql = app.database.sql;
afterAll(() => tmp.cleanup());

const run = (script: string, args: string[], env: Record<string, string> = {}) =>
  runShell(script, args, { URL: app.url, HOME: tmp.dir, ...env });
const LINE = INSTALL_LINE;

/**
 * The line run for real on this machine's own paths, in a private mount namespace: /etc, /usr/local and
 * /var/lib are overlays whose changes land in `upper` (and vanish with the namespace). `as` is root or
 * `nobody`; `sudo` says whether sudo exists (nobody may use it without a password) or is absent.
 */
async function installOnThisMachine(name: string, as: "root" | "nobody", sudo: boolean, args: string[]) {
  const overlays = path.join(tmp.dir, name);
  const script = `set -e
for d in /etc /usr/local /var/lib; do
  o="$OVERLAYS/$(echo "$d" | tr / _)"; mkdir -p "$o/upper" "$o/work"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$o/upper,workdir=$o/work" "$d"
done
if [ "$SUDO" = yes ]; then
  echo 'nobody ALL=(root) NOPASSWD: ALL' >/etc/sudoers.d/outpost-install-test
  chmod 0440 /etc/sudoers.d/outpost-install-test
elif [ -e /usr/bin/sudo ]; then
  mount --bind /dev/null /usr/bin/sudo
fi
cd /
if [ "$AS" = root ]; then sh -c '${LINE}' install "$@"; else runuser -u nobody -- sh -c '${LINE}' install "$@"; fi`;
  const result = await run(
    `exec unshare --mount --propagation private sh -c '${script.replaceAll("'", "'\\''")}' ns "$@"`,
    args,
    {
      OVERLAYS: overlays,
      AS: as,
      SUDO: sudo ? "yes" : "no",
      HOME: "/tmp",
    },
  );
  return { ...result, upper: (dir: string, file: string) => path.join(overlays, dir, "upper", file) };
}

async function operatorPage(pathname: string) {
  const session = await app.session("admin");
  return (await app.fetch(pathname, { headers: { cookie: session.cookie } })).text();
}

describe("the install line", () => {
  test("a server without agent builds says so in the console, and install.sh prints its reason", async () => {
    const page = await operatorPage("/devices/new");
    expect(page).toContain('id="agent-builds-missing"');
    expect(page).toContain("This server has no agent builds yet");
    expect(page).toContain("npm run build:agent");
    expect(await operatorPage("/settings")).toContain('id="agent-builds-missing"');

    const { token } = await createEnrolmentToken(sql, { name: "nobuild", approve: true, createdBy: "test" });
    const failed = await run(LINE, ["--token", token, "--prefix", path.join(tmp.dir, "root-nobuild")]);
    expect(failed.code).not.toBe(0);
    expect(failed.err).toContain(
      "the server answered 404: outpost-agent-linux-x64 is not available on this server: on the server, in Outpost's directory, run npm run build:agent",
    );
    expect((await sql`select count(*)::int as n from devices`)[0]!.n).toBe(0);

    // Built (here: the x64 build only): the warning names the missing architecture, the line works.
    fs.copyFileSync(await agentBinary("x64"), path.join(dist, "outpost-agent-linux-x64"));
    const partly = await operatorPage("/devices/new");
    expect(partly).toContain("This server has no arm64 agent build yet");
    const ok = await run(LINE, ["--token", token, "--prefix", path.join(tmp.dir, "root-built")]);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("Registered as");
  }, 400_000);

  test("the console's line has no sudo in it", async () => {
    const page = await operatorPage("/devices/new");
    expect(page).toContain(
      `curl -fsSL ${app.config.baseUrl}/install.sh | sh -s -- --token &lt;enrolment token&gt;`,
    );
  });

  test("as root where sudo is absent: installs into / without sudo", async () => {
    await sql`delete from devices`;
    const { token } = await createEnrolmentToken(sql, { name: "root", approve: true, createdBy: "test" });
    const run = await installOnThisMachine("root", "root", false, ["--token", token, "--binary"]);
    expect(run.code).toBe(0);
    expect(`${run.out}${run.err}`).not.toContain("sudo");
    expect(run.out).toContain("installed: /usr/local/bin/outpost-agent");
    expect(run.out).toContain("Registered as");
    expect(fs.existsSync(run.upper("_usr_local", "bin/outpost-agent"))).toBe(true);
    expect(fs.readFileSync(run.upper("_etc", "outpost/agent.yaml"), "utf8")).toContain(
      `server_url: ${app.url}`,
    );
    expect(fs.existsSync(run.upper("_var_lib", "outpost-agent/identity.json"))).toBe(true);
    expect((await sql`select approval_status from devices`).map((d) => d.approval_status)).toEqual([
      "approved",
    ]);
  }, 120_000);

  test("as another user: elevates through sudo; without sudo it says what to do", async () => {
    await sql`delete from devices`;
    const { token } = await createEnrolmentToken(sql, { name: "sudo", approve: true, createdBy: "test" });
    const elevated = await installOnThisMachine("sudo", "nobody", true, ["--token", token, "--binary"]);
    expect(elevated.code).toBe(0);
    expect(elevated.out).toContain("Not root: installing through sudo");
    expect(elevated.out).toContain("Registered as");
    const config = elevated.upper("_etc", "outpost/agent.yaml");
    expect(fs.statSync(config).uid).toBe(0);
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    expect(fs.statSync(elevated.upper("_usr_local", "bin/outpost-agent")).uid).toBe(0);
    expect((await sql`select count(*)::int as n from devices`)[0]!.n).toBe(1);

    const refused = await installOnThisMachine("nosudo", "nobody", false, ["--token", token, "--binary"]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain(
      "installing needs root: run the line as root, install sudo, or use --prefix <dir>",
    );
  }, 120_000);

  test("a pending device ends with what happens next, and no error", async () => {
    await sql`delete from devices`;
    const { token } = await createEnrolmentToken(sql, { name: "pending", approve: false, createdBy: "test" });
    const pending = await run(LINE, ["--token", token, "--prefix", path.join(tmp.dir, "root-pending")]);
    expect(pending.code).toBe(0);
    const [device] = await sql<
      { id: string; approval_status: string }[]
    >`select id, approval_status from devices`;
    expect(device!.approval_status).toBe("pending");
    expect(pending.out).toContain(`Registered as ${device!.id}: waiting for approval.`);
    expect(pending.out).toContain("An operator approves it in Outpost's console");
    expect(`${pending.out}${pending.err}`.toLowerCase()).not.toContain("error");
    expect(pending.out).not.toContain("Registration did not succeed");
  }, 120_000);

  test("https behind Caddy's internal CA: install.sh says how to get round the certificate", async () => {
    await sql`delete from devices`;
    const { token } = await createEnrolmentToken(sql, { name: "tls", approve: true, createdBy: "test" });
    const caddyfile = path.join(tmp.dir, "Caddyfile");
    const caddy = await startListening({
      command: (port) => {
        fs.writeFileSync(
          caddyfile,
          `{
  admin 127.0.0.1:${port}
  http_port ${port + 1}
  https_port ${port + 2}
  skip_install_trust
  storage file_system ${path.join(tmp.dir, "caddy")}
}
https://localhost:${port + 2} {
  bind 127.0.0.1
  tls internal
  reverse_proxy ${app.url.replace("http://", "")}
}
`,
        );
        return ["/usr/bin/caddy", "run", "--config", caddyfile, "--adapter", "caddyfile"];
      },
      ready: () => '"msg":"serving initial configuration"',
      env: { PATH: "/usr/bin:/bin", HOME: tmp.dir, XDG_DATA_HOME: tmp.dir, XDG_CONFIG_HOME: tmp.dir },
    });
    try {
      const https = `https://localhost:${caddy.port + 2}`;
      // Caddy issues its internal certificate just after it starts: until then handshakes fail (curl 35).
      for (let i = 0; i < 100; i++) {
        if ((await run('curl -fsSk -o /dev/null "$URL/readyz"', [], { URL: https })).code === 0) break;
        await Bun.sleep(100);
      }
      // As the line shows it: curl itself refuses the certificate, so nothing of install.sh runs.
      const plain = await run(LINE, ["--token", token], { URL: https });
      expect(plain.err).toContain("curl: (60)");
      expect(plain.out).toBe("");
      // The script fetched anyway (-k): its own downloads refuse too, and it says what to do.
      const root = path.join(tmp.dir, "root-tls");
      const tls = await run(
        'curl -fsSLk "$URL/install.sh" | sh -s -- --server "$URL" "$@"',
        ["--token", token, "--prefix", root],
        {
          URL: https,
        },
      );
      expect(tls.code).not.toBe(0);
      expect(tls.err).toContain(`this device does not trust ${https}'s certificate`);
      expect(tls.err).toContain("--server http://<outpost host>:4000");
      expect(tls.err).toContain("update-ca-certificates");
      // The way round it works: Outpost's own address.
      const internal = await run(LINE, ["--token", token, "--prefix", root]);
      expect(internal.code).toBe(0);
      expect(internal.out).toContain("Registered as");
    } finally {
      await caddy.stop();
    }
  }, 120_000);
});
