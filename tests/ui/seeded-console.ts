// A console with something on every page, shared by the every-page test and the Lighthouse benchmark:
// an approved device with telemetry and a command, a pending one, an alert rule and an offline alert,
// a custom report, an ended terminal session with its recording, a rollout, and the E2E service on.
import { checkOfflineDevices } from "../../modules/alerts/offline";
import { queueCommand, recordCommandResults } from "../../modules/commands/service";
import { createRollout } from "../../modules/rollouts/service";
import { Recorder } from "../../modules/terminal/recording";
import { endSession, startSession } from "../../modules/terminal/service";
import { sensorDevice } from "../alerts/helpers";
import { agentHeartbeat, approvedDevice, heartbeat, registerDevice } from "../console/helpers";
import { startE2EApp, writeE2EFixture } from "../e2e/fixtures";
import { markSeen } from "../helpers/seen";

/** `env`: more settings for the app (the every-page test adds single sign-on). */
export async function seededConsole(env: Record<string, string> = {}) {
  const app = await startE2EApp(writeE2EFixture(), env);
  // A fleet with something on every page: an approved device with telemetry and a command, a pending one.
  const device = await approvedDevice(app, {
    product_name: "edge-gateway-with-a-rather-long-product-name",
    metadata: {
      name: "pump-station-7-north-east-wing",
      os: { platform: "linux", release: "6.1.0-27-amd64" },
    },
  });
  await heartbeat(app, device, await agentHeartbeat({ cpu: 41, memory: 63, disk: 72 }));
  await queueCommand(app.database.sql, {
    deviceId: device.id,
    type: "install_script",
    payload: {
      name: "fan-speed",
      data: "/*---\nname: fan-speed\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n",
    },
    ttlSeconds: 3600,
  });
  // …and a result for no command, as the agent posts for a command that came without an id.
  await recordCommandResults(app.database.sql, device.id, [
    { command_id: "", status: "FAILED", error: "missing_command_id" },
  ]);
  await registerDevice(app, { product_name: "edge-gateway" });

  // An alert rule and an offline alert (a sensor silent for an hour).
  const sensor = await sensorDevice(app, "every-page-sensor");
  const ruleResponse = await app.fetch("/api/json/alert_rules", {
    method: "POST",
    headers: {
      authorization: `Bearer ${await app.token("operator")}`,
      "content-type": "application/vnd.api+json",
    },
    body: JSON.stringify({
      data: {
        type: "alert_rule",
        attributes: {
          name: "Hot sensor",
          product_name: "every-page-sensor",
          schema_version: sensor.agent.schema().version,
          condition_field: "sensor.temp",
          operator: ">",
          threshold_value: "50",
        },
      },
    }),
  });
  const ruleId = String(((await ruleResponse.json()) as { data: { id: string } }).data.id);
  await markSeen(app.database.sql, sensor.id, 3600);
  await checkOfflineDevices(app.database.sql, app.config);
  const [alert] = await app.database.sql<{ id: string }[]>`select id::text from alerts limit 1`;

  // A custom report over the sensors' temperature.
  const reportResponse = await app.fetch("/api/v1/reports", {
    method: "POST",
    headers: { authorization: `Bearer ${await app.token("operator")}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: "Sensor temperatures",
      config: {
        schema_id: null,
        fields: [{ path: "sensor.temp", alias: "temperature" }],
        range: { preset: "24h" },
      },
    }),
  });
  if (reportResponse.status !== 201)
    throw new Error(`report: ${reportResponse.status} ${await reportResponse.text()}`);
  const reportId = ((await reportResponse.json()) as { data: { id: string } }).data.id;

  // A recorded terminal session on the device (its playback page), ended.
  const terminalOperator = await app.session("operator");
  const terminal = await startSession(app.database.sql, {
    deviceId: device.id,
    operator: { operatorId: terminalOperator.operatorId, email: terminalOperator.email },
    secretKey: app.config.secretKey,
    limits: { idleSeconds: 600, maxSeconds: 3600 },
    remoteAccessMaxMinutes: 60,
    onlineWindowSeconds: 300,
  });
  const recorder = new Recorder(app.database.sql, terminal.sessionId, {
    columns: 80,
    rows: 24,
    title: "every-page",
    recordsInput: false,
  });
  recorder.output(
    "root@pump-station-7:~# uptime\r\n 10:00:00 up 3 days,  load average: 0.10, 0.20, 0.30\r\n",
  );
  await recorder.close();
  await endSession(app.database.sql, terminal.sessionId, "exit", 0);

  const rolloutId = await createRollout(
    app.database,
    { action: { type: "add_tag", tag: { key: "ring", value: "canary" } }, target: { ids: [device.id] } },
    { createdBy: "ops@example.test", now: new Date(), onlineWindowSeconds: 300 },
  );

  return {
    app,
    device,
    ruleId,
    alertId: alert!.id,
    reportId,
    terminalSessionId: terminal.sessionId,
    rolloutId,
  };
}
