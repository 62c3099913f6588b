/** The heartbeat the benchmark posts (bench/heartbeat/run.ts). */
/** A realistic heartbeat: five scripts' reports, ~2 KB of JSON. */
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
  };
}
