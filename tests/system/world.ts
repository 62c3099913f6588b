// What the system journeys share: the deployed fleet, the operator's Chromium, the three devices,
// and the console helpers every journey uses.
import type { BrowserContext, Page } from "playwright-core";
import type { Agent } from "./agents";
import type { Fleet } from "./fleet";

export type Step = <T>(stepId: string, fn: () => Promise<T>) => Promise<T>;
export type DeviceName = "A" | "B" | "C";

/** The custom script journey 3 installs (journey 7 queues newer versions of it). */
export const PROBE_SCRIPT = `/*---
name: system_probe
version: 1
description: The system suite's custom script.
schema:
  type: object
  required: [answer]
  properties:
    answer: { type: number }
---*/
function main() {
  return { answer: 6 * 7 };
}
`;

export function createWorld(fleet: Fleet, context: BrowserContext, page: Page) {
  const at = (pathname: string) => `${fleet.consoleUrl}${pathname}`;
  /** Where the console shows a device, as a path. */
  const devicePath = (deviceId: string, tab?: string) => `/devices/${deviceId}${tab ? `?tab=${tab}` : ""}`;
  return {
    fleet,
    context,
    /** The operator's main tab (signed in as the admin). */
    page,
    /** The three devices: A (remote access, terminal, script, alert, faults), B (revoke), C (offline). */
    agents: {} as Record<DeviceName, Agent>,
    ids: {} as Record<DeviceName, string>,
    /** The webhook signing secret Settings showed once. */
    webhookSecret: "",
    at,
    devicePath,
    /** Whether the tunnel process holds a tunnel of the device now. */
    async tunnelUp(deviceId: string) {
      return (await fleet.sql`select 1 from tunnel_connections where device_id = ${deviceId}`).length > 0;
    },
    /** A console page of its own for a device (opening it opens a remote-access lease). */
    async devicePage(deviceId: string, tab = "remote") {
      const opened = await context.newPage();
      await opened.goto(at(devicePath(deviceId, tab)));
      return opened;
    },
    /** The status Chromium gets for `url` in a tab of its own (its resolver maps *.system.test to Caddy). */
    async statusInBrowser(url: string) {
      const tab = await context.newPage();
      try {
        return (await tab.goto(url, { timeout: 10_000 }))?.status();
      } finally {
        await tab.close();
      }
    },
    /** Posts `pathname` from a console page as its own scripts do (the page's CSRF token). */
    postFromPage(on: Page, pathname: string) {
      return on.evaluate(async (target) => {
        const csrf = (document.querySelector('input[name="_csrf"]') as HTMLInputElement | null)?.value ?? "";
        const response = await fetch(target, {
          method: "POST",
          headers: { "x-csrf-token": csrf, accept: "application/json" },
        });
        return { status: response.status, body: await response.text() };
      }, pathname);
    },
  };
}

export type World = ReturnType<typeof createWorld>;
