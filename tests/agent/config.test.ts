import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { configCandidates, loadConfig } from "../../agent/config.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const home = path.join(tmp.dir, "home");

function write(name: string, text: string) {
  const file = path.join(tmp.dir, name);
  fs.writeFileSync(file, text);
  return file;
}

describe("configuration", () => {
  test("defaults without any file", () => {
    const { config, source } = loadConfig({ env: { HOME: home } });
    expect(source).toBeNull();
    expect(config.poll_interval_s).toBe(30);
    expect(config.command_timeout_ms).toBe(5000);
    expect(config.script_timeout_ms).toBe(5000);
    expect(config.script_warn_ms).toBe(3000);
    expect(config.poll_max_backoff_s).toBe(300);
    expect(config.exec_allowlist).toEqual([]);
    expect(config.read_file_allowlist).toContain("/proc/loadavg");
    expect(config.scripts_dir).toBe(path.join(config.state_dir, "scripts"));
  });

  test("file from --config, env overrides (scalars, lists, nested mqtt), derived scripts_dir", () => {
    const file = write(
      "a.yaml",
      "server_url: http://example.test:4000/\npoll_interval_s: 10\nstate_dir: /srv/agent\nmqtt:\n  url: mqtt://127.0.0.1:1999\n",
    );
    const { config, source } = loadConfig({
      file,
      env: {
        HOME: home,
        OUTPOST_AGENT_POLL_INTERVAL_S: "15",
        OUTPOST_AGENT_EXEC_ALLOWLIST: "/bin/echo,/usr/bin/uptime",
        OUTPOST_AGENT_MQTT_PUBLISH_ALLOWLIST: '["sensors/+/get"]',
        OUTPOST_AGENT_INSTALL_BUILTIN_SCRIPTS: "false",
      },
    });
    expect(source).toBe(file);
    expect(config.server_url).toBe("http://example.test:4000");
    expect(config.poll_interval_s).toBe(15);
    expect(config.exec_allowlist).toEqual(["/bin/echo", "/usr/bin/uptime"]);
    expect(config.mqtt.url).toBe("mqtt://127.0.0.1:1999");
    expect(config.mqtt.publish_allowlist).toEqual(["sensors/+/get"]);
    expect(config.mqtt.timeout_ms).toBe(5000);
    expect(config.install_builtin_scripts).toBe(false);
    expect(config.scripts_dir).toBe("/srv/agent/scripts");
  });

  test("OUTPOST_AGENT_CONFIG selects the file; ~/.config/outpost/agent.yaml is found in HOME", () => {
    const file = write("b.yaml", "product_name: gateway\n");
    expect(loadConfig({ env: { HOME: home, OUTPOST_AGENT_CONFIG: file } }).config.product_name).toBe(
      "gateway",
    );
    fs.mkdirSync(path.join(home, ".config/outpost"), { recursive: true });
    fs.writeFileSync(path.join(home, ".config/outpost/agent.yaml"), "product_name: from-home\n");
    const loaded = loadConfig({ env: { HOME: home } });
    expect(loaded.config.product_name).toBe("from-home");
    expect(loaded.source).toBe(path.join(home, ".config/outpost/agent.yaml"));
  });

  test("/etc/outpost/agent.yaml comes first: it wins over ~/.config/outpost/agent.yaml; --config wins over both", () => {
    const systemFile = write("etc-agent.yaml", "product_name: from-etc\n");
    fs.mkdirSync(path.join(home, ".config/outpost"), { recursive: true });
    fs.writeFileSync(path.join(home, ".config/outpost/agent.yaml"), "product_name: from-home\n");
    const loaded = loadConfig({ env: { HOME: home }, systemFile });
    expect(loaded.source).toBe(systemFile);
    expect(loaded.config.product_name).toBe("from-etc");
    // without the system file, the user file is used
    const userOnly = loadConfig({ env: { HOME: home }, systemFile: path.join(tmp.dir, "absent.yaml") });
    expect(userOnly.config.product_name).toBe("from-home");
    const explicit = write("c.yaml", "product_name: explicit\n");
    expect(loadConfig({ file: explicit, env: { HOME: home }, systemFile }).config.product_name).toBe(
      "explicit",
    );
    // the environment still overrides the file
    expect(
      loadConfig({ env: { HOME: home, OUTPOST_AGENT_PRODUCT_NAME: "from-env" }, systemFile }).config
        .product_name,
    ).toBe("from-env");
    expect(configCandidates({ HOME: home })[0]).toBe("/etc/outpost/agent.yaml");
  });

  test("run_script_enabled is off unless the file or the environment turns it on; the package's file says so", () => {
    expect(loadConfig({ env: { HOME: home } }).config.run_script_enabled).toBe(false);
    const on = write("run-script.yaml", "run_script_enabled: true\n");
    expect(loadConfig({ file: on, env: { HOME: home } }).config.run_script_enabled).toBe(true);
    expect(
      loadConfig({ env: { HOME: home, OUTPOST_AGENT_RUN_SCRIPT_ENABLED: "true" } }).config.run_script_enabled,
    ).toBe(true);
    expect(() => loadConfig({ file: write("bad.yaml", "run_script_enabled: yes please\n") })).toThrow(
      /run_script_enabled/,
    );
    // The .deb's /etc/outpost/agent.yaml shows the key with its default, commented out, and is valid.
    const packaged = path.resolve(import.meta.dir, "../../deploy/debian/agent.yaml");
    expect(fs.readFileSync(packaged, "utf8")).toContain("\n# run_script_enabled: false\n");
    const uncommented = write(
      "packaged.yaml",
      fs.readFileSync(packaged, "utf8").replace("# run_script_enabled", "run_script_enabled"),
    );
    expect(loadConfig({ file: uncommented, env: { HOME: home } }).config.run_script_enabled).toBe(false);
  });

  test("ssh_target_user defaults to outpost-support and must be a user name", () => {
    expect(loadConfig({ env: { HOME: home } }).config.ssh_target_user).toBe("outpost-support");
    expect(
      loadConfig({ env: { HOME: home, OUTPOST_AGENT_SSH_TARGET_USER: "fleet" } }).config.ssh_target_user,
    ).toBe("fleet");
    expect(() => loadConfig({ env: { HOME: home, OUTPOST_AGENT_SSH_TARGET_USER: "Bad User" } })).toThrow(
      /ssh_target_user/,
    );
  });

  test("tunnel.forward_ports: none by default; a list of ports from the file or the environment", () => {
    expect(loadConfig({ env: { HOME: home } }).config.tunnel.forward_ports).toEqual([]);
    const env = (value: string) => ({ HOME: home, OUTPOST_AGENT_TUNNEL_FORWARD_PORTS: value });
    expect(loadConfig({ env: env("5900, 502") }).config.tunnel.forward_ports).toEqual([5900, 502]);
    expect(loadConfig({ env: env("[4840]") }).config.tunnel.forward_ports).toEqual([4840]);
    expect(() => loadConfig({ env: env("5900,vnc") })).toThrow(/tunnel\.forward_ports/);
    expect(() => loadConfig({ env: env("70000") })).toThrow(/tunnel\.forward_ports/);
  });

  test("tunnel.server: one host:port or several, comma-separated", () => {
    const env = (value: string) => ({ HOME: home, OUTPOST_AGENT_TUNNEL_SERVER: value });
    expect(loadConfig({ env: env("t1.example:7000") }).config.tunnel.server).toBe("t1.example:7000");
    expect(loadConfig({ env: env("t1.example:7000, 10.0.0.2:7002") }).config.tunnel.server).toBe(
      "t1.example:7000, 10.0.0.2:7002",
    );
    expect(() => loadConfig({ env: env("t1.example:7000,") })).toThrow(/tunnel\.server/);
    expect(() => loadConfig({ env: env("t1.example") })).toThrow(/tunnel\.server/);
  });

  const bad: [string, string | null, Record<string, string>, RegExp][] = [
    ["unknown key", "pol_interval_s: 5\n", {}, /unknown key "pol_interval_s"/],
    ["wrong type", "poll_interval_s: soon\n", {}, /poll_interval_s: expected number/],
    [
      "out of range",
      "poll_interval_s: 0\n",
      {},
      /poll_interval_s: expected number to be greater or equal to 1/,
    ],
    ["relative path", "state_dir: relative/dir\n", {}, /state_dir: must be an absolute path/],
    ["bad url", "server_url: ftp://x\n", {}, /server_url: must be an http:\/\/ or https:\/\/ URL/],
    ["nested unknown", "mqtt:\n  host: x\n", {}, /unknown key "mqtt.host"/],
    ["not a mapping", "- a\n", {}, /must contain a YAML mapping/],
    ["broken yaml", "a: [\n", {}, /not valid YAML/],
    [
      "env not a number",
      null,
      { OUTPOST_AGENT_POLL_INTERVAL_S: "often" },
      /OUTPOST_AGENT_POLL_INTERVAL_S must be a number/,
    ],
    [
      "unknown env",
      null,
      { OUTPOST_AGENT_POLL_INTERVALS: "5" },
      /unknown environment variable OUTPOST_AGENT_POLL_INTERVALS/,
    ],
    ["warn >= timeout", "script_warn_ms: 6000\n", {}, /script_warn_ms must be lower than script_timeout_ms/],
  ];
  for (const [label, text, env, message] of bad) {
    test(`rejects ${label} with one clear line`, () => {
      const file = text === null ? undefined : write(`bad-${label.replace(/\W/g, "_")}.yaml`, text);
      expect(() => loadConfig({ file, env: { HOME: home, ...env } })).toThrow(message);
    });
  }

  test("a missing --config file is an error", () => {
    expect(() => loadConfig({ file: path.join(tmp.dir, "nope.yaml"), env: { HOME: home } })).toThrow(
      /config file not found/,
    );
  });
});
