// A device controls what it reports (product, name, metadata, script output): every page that shows
// it must escape it. Each page below renders a device whose fields hold markup.
import { describe, expect, test } from "bun:test";
import { startTestApp } from "../helpers/app";
import { agentHeartbeat, approvedDevice, heartbeat, registerDevice } from "./helpers";

const app = await startTestApp();
const MARKUP = {
  product: `<img src=x onerror="alert(1)">`,
  name: `"><script>alert(2)</script>`,
  release: `<b>bold</b>`,
  output: `<svg onload=alert(3)>`,
};
const device = await approvedDevice(app, {
  product_name: MARKUP.product,
  metadata: { name: MARKUP.name, os: { release: MARKUP.release } },
});
const body = await agentHeartbeat({ cpu: 10, memory: 20, disk: 30 });
(body.telemetry.scripts as Record<string, unknown>).banner = {
  data: {
    status: "failed",
    validation_status: "invalid",
    duration_ms: 1,
    error: MARKUP.output,
    output: { text: MARKUP.output },
  },
};
await heartbeat(app, device, body);
await registerDevice(app, { product_name: MARKUP.product, metadata: { name: MARKUP.name } }); // pending too

describe("device-controlled text on pages", () => {
  const pages = [
    "/",
    "/devices",
    "/devices?approval_status=pending",
    `/devices/${device.id}`,
    `/devices/${device.id}?tab=telemetry`,
    `/devices/${device.id}?tab=scripts`,
    `/devices/${device.id}?tab=commands`,
    `/devices/${device.id}/live`,
  ];
  for (const path of pages) {
    test(`${path} shows markup as text`, async () => {
      const admin = await app.session("admin");
      const response = await app.fetch(path, { headers: { cookie: admin.cookie } });
      expect(response.status).toBe(200);
      const html = await response.text();
      for (const raw of Object.values(MARKUP)) expect(html).not.toContain(raw);
      // The escaped form is there where the page shows the field.
      if (!path.includes("tab=") && !path.endsWith("/live") && path !== "/")
        expect(html).toContain("&lt;img src=x onerror=");
    });
  }
});
