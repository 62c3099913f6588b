import { BUILTIN_SCRIPT_SOURCES } from "../../agent/builtin-scripts/index.ts";
import { buildSchemaDefinition } from "../../agent/telemetry.ts";
import { parseScript } from "../../shared/scripts/frontmatter.ts";

/**
 * The schema definition the agent announces in every heartbeat (`telemetry.meta.schema_definition`),
 * as it builds it for its built-in scripts: ~2.6 KB that the server validates and hashes each time.
 */
export const SCHEMA_DEFINITION = buildSchemaDefinition(
  "atom",
  BUILTIN_SCRIPT_SOURCES.map((source) => ({ ...parseScript(source), path: "" })),
);

/**
 * The device's SSH host key as the agent reports it in every heartbeat (its sshd's ed25519 key with the
 * file's comment). The seed pins it for every device, as a running fleet's keys are (seed.ts).
 */
export const HOST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBN3TTFA/dYNx4r3QoLyI+TM9KrbMSQImvUBMq6Ll3uR root@atom";

/**
 * The heartbeat the benchmark posts (bench/heartbeat/run.ts), as the agent sends it: five scripts'
 * reports and the schema definition, ~4.5 KB of JSON.
 */
export function heartbeatBody(mac: string, uptime: number) {
  const report = (output: Record<string, unknown>, ms: number) => ({
    data: { status: "success", validation_status: "valid", duration_ms: ms, output },
  });
  return {
    telemetry: {
      device: {
        identity: {
          mac_address: mac,
          ip_address: "192.0.2.10",
          name: `atom-${mac.replaceAll(":", "").toLowerCase()}`,
        },
        uptime_seconds: uptime,
      },
      scripts: {
        cpu: report(
          {
            load_1m: Math.random() * 4,
            load_5m: 1.21,
            load_15m: 0.97,
            cores: 4,
            user_percent: 12.5,
            system_percent: 3.1,
            iowait_percent: 0.4,
          },
          3,
        ),
        memory: report(
          {
            total_bytes: 8_252_030_976,
            used_bytes: 4_123_456_789,
            used_percent: 49.97,
            swap_total_bytes: 2_147_479_552,
            swap_used_bytes: 0,
          },
          2,
        ),
        disk: report(
          {
            mounts: [
              { path: "/", total_bytes: 62_725_623_808, used_bytes: 21_474_836_480, used_percent: 34.2 },
              { path: "/var", total_bytes: 20_957_446_144, used_bytes: 5_368_709_120, used_percent: 25.6 },
            ],
          },
          5,
        ),
        network: report(
          {
            interfaces: [
              {
                name: "eth0",
                rx_bytes: 123_456_789_012,
                tx_bytes: 98_765_432_109,
                rx_errors: 0,
                tx_errors: 0,
                link_up: true,
              },
              { name: "wlan0", rx_bytes: 0, tx_bytes: 0, rx_errors: 0, tx_errors: 0, link_up: false },
            ],
          },
          4,
        ),
        services: report(
          {
            units: {
              sshd: "active",
              "outpost-agent": "active",
              chronyd: "active",
              nginx: "inactive",
              "systemd-journald": "active",
              "systemd-networkd": "active",
              "systemd-resolved": "active",
              cron: "active",
              rsyslog: "active",
              "unattended-upgrades": "inactive",
            },
            failed_units: [],
            boot_id: "6f1c7a3e-2b1d-4c55-9a0e-7d1f2b3c4d5e",
            kernel: "6.1.0-18-arm64",
            os_release: "Debian GNU/Linux 12 (bookworm)",
          },
          9,
        ),
      },
      meta: {
        schema_definition: SCHEMA_DEFINITION,
        timestamp: new Date().toISOString(),
        duration: "23.417ms",
        errors: ["gpu: no such device /dev/dri/card0"],
      },
    },
    connection_status: {
      active: false,
      connection_string: "outpost-tunnel",
      pid: 0,
      start_time: "0001-01-01T00:00:00Z",
    },
    ssh_host_key: HOST_KEY,
  };
}

/** What the server stores of a heartbeat (modules/heartbeat/service.ts parseHeartbeat): its payload. */
export function storedPayload(body: ReturnType<typeof heartbeatBody>): string {
  const { schema_definition: _, ...meta } = body.telemetry.meta;
  return JSON.stringify({ ...body.telemetry, meta, connection_status: body.connection_status });
}

/**
 * `heartbeatBody` as JSON text, built from a template serialised once: the load generator sends one
 * per request, and a fresh `JSON.stringify` of ~2 KB would cost it more CPU than the answer's parse.
 * The varying fields (MAC, name, uptime, load, timestamp) change per call, as a device's do.
 */
export function heartbeatBodyText(): (mac: string, uptime: number) => string {
  const MAC = "02:00:5E:00:00:00";
  const UPTIME = 271_828_182;
  const LOAD = 0.123456789;
  const TIMESTAMP = "2000-01-01T00:00:00.000Z";
  const sample = heartbeatBody(MAC, UPTIME);
  sample.telemetry.scripts.cpu.data.output.load_1m = LOAD;
  sample.telemetry.meta.timestamp = TIMESTAMP;
  const name = sample.telemetry.device.identity.name;
  const parts = JSON.stringify(sample).split(
    new RegExp(
      `(${[MAC, name, UPTIME, LOAD, TIMESTAMP].map((s) => String(s).replaceAll(".", "\\.")).join("|")})`,
    ),
  );
  if (parts.length !== 11) throw new Error("the heartbeat template lost a field");
  return (mac, uptime) => {
    const values: Record<string, string> = {
      [MAC]: mac,
      [name]: `atom-${mac.replaceAll(":", "").toLowerCase()}`,
      [UPTIME]: String(uptime),
      [LOAD]: String(Math.random() * 4),
      [TIMESTAMP]: new Date().toISOString(),
    };
    let text = "";
    for (let i = 0; i < parts.length; i++) text += i % 2 ? values[parts[i]!] : parts[i];
    return text;
  };
}
