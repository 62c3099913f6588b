// Journeys 1 (enrol) and 3 (custom script): devices join by the console's install line; a script
// installed from the console reaches the builder, a report and its CSV.
import { expect } from "bun:test";
import { waitFor } from "../../terminal/helpers";
import { deviceInterfaces, installAgent } from "../agents";
import { PROBE_SCRIPT, type Step, type World } from "../world";

/** 1: token → one-liner → registered → telemetry on the device page within 10 s. */
export async function enrol(w: World, step: Step) {
  const { fleet, page, agents, ids, at, devicePath } = w;
  const installLine = await step("enrolment_token", async () => {
    await page.goto(at("/settings#enrolment-tokens"));
    await page.fill('#enrolment-tokens input[name="name"]', "system fleet");
    await page.check('#enrolment-tokens input[name="approve"]');
    await page.click('#enrolment-tokens button:has-text("Create enrolment token")');
    const line = (await page.textContent("#install-line", { timeout: 10_000 }))?.trim() ?? "";
    expect(line).toMatch(
      /^curl -fsSL https:\/\/console\.system\.test:\d+\/install\.sh \| sh -s -- --token \S+$/,
    );
    return line;
  });
  const interfaces = deviceInterfaces(3);
  await step("one_liner", async () => {
    const installed = await Promise.all(
      (["A", "B", "C"] as const).map((name, i) => installAgent(fleet, installLine, name, interfaces[i]!)),
    );
    for (const agent of installed) {
      expect(agent.installOutput).toContain("(SHA-256 verified)");
      expect(agent.installOutput).toContain("Registered as");
      agents[agent.name as "A" | "B" | "C"] = agent;
    }
  });
  await step("registered", async () => {
    for (const [i, name] of (["A", "B", "C"] as const).entries()) {
      const mac = (await Bun.file(`/sys/class/net/${interfaces[i]}/address`).text()).trim().toLowerCase();
      const [device] = await fleet.sql<{ id: string; approval_status: string }[]>`
            select id, approval_status from devices where lower(mac_address) = ${mac}`;
      expect(device?.approval_status).toBe("approved");
      ids[name] = device!.id;
    }
    expect(new Set(Object.values(ids)).size).toBe(3);
  });
  await step("telemetry_on_device_page", async () => {
    // One at a time: three agents warming up at once on two shared cores is not what a device sees.
    for (const name of ["A", "B", "C"] as const) {
      const started = Date.now();
      agents[name].start();
      await waitFor(
        async () => {
          await page.goto(at(devicePath(ids[name], "overview")));
          const label = await page.getAttribute('.gauges svg[aria-label^="Memory"]', "aria-label");
          return label && /^Memory: \d/.test(label);
        },
        10_000,
        `device ${name}'s memory figure on its page within 10 s of the agent starting`,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
    }
  });
}

/** 3: install from the console → field in the builder → report rows and CSV rows. */
export async function customScript(w: World, step: Step) {
  const { fleet, page, ids, at, devicePath } = w;
  await step("install_script", async () => {
    await page.goto(at(devicePath(ids.A, "scripts")));
    await page.fill('#install-script-form textarea[name="text"]', PROBE_SCRIPT);
    await Promise.all([
      page.waitForURL((url) => url.searchParams.get("tab") === "commands", { timeout: 15_000 }),
      page.click('#install-script-form button[type="submit"]'),
    ]);
    await waitFor(
      async () => {
        const [command] = await fleet.sql<{ status: string; error: string | null }[]>`
              select status, error from pending_commands where device_id = ${ids.A} and type = 'install_script'
              order by queued_at desc limit 1`;
        if (command?.status === "failed") throw new Error(`install_script failed: ${command.error}`);
        return command?.status === "succeeded";
      },
      20_000,
      "A's agent to run the install_script command",
    );
    // The operator asks the device for its scripts; the list shows the new one.
    await page.goto(at(devicePath(ids.A, "scripts")));
    await page.click('button:has-text("Ask the device for its list")');
    await waitFor(
      async () => {
        await page.goto(at(devicePath(ids.A, "scripts")));
        const list = page.locator("[data-scripts-list]");
        return (await list.count()) > 0 && (await list.textContent())?.includes("system_probe");
      },
      20_000,
      "system_probe in the list A's agent gave",
    );
  });
  await step("field_in_builder", async () => {
    await waitFor(
      async () => {
        await page.goto(at("/reports/new"));
        return (
          (await page.locator('select[name="field_path_0"] option[value="system_probe.answer"]').count()) > 0
        );
      },
      20_000,
      "system_probe.answer among the report builder's fields",
    );
  });
  const reportPath = await step("report_rows", async () => {
    await page.fill('#report-form input[name="name"]', "System probe");
    await page.selectOption('select[name="field_path_0"]', "system_probe.answer");
    await Promise.all([
      page.waitForURL((url) => /^\/reports\/[^/]+$/.test(url.pathname) && url.pathname !== "/reports/new"),
      page.click('#report-form button.primary[type="submit"]'),
    ]);
    const pathname = new URL(page.url()).pathname;
    let shown = "";
    await waitFor(
      async () => {
        await page.goto(at(pathname));
        // Rows name devices by the first 8 characters of their id.
        const rows = await page.locator("main table tbody tr").allTextContents();
        shown = rows.join(" | ");
        return rows.some((row) => row.startsWith(ids.A.slice(0, 8)) && row.endsWith("42"));
      },
      15_000,
      "A's rows with 42 in the report",
    ).catch((error) => {
      throw new Error(`${error.message}; the table showed: ${shown.slice(0, 500)}`);
    });
    return pathname;
  });
  await step("csv_rows", async () => {
    const csv = await page.evaluate(async (target) => (await fetch(target)).text(), `${reportPath}.csv`);
    const lines = csv.trim().split("\r\n");
    expect(lines[0]).toContain("system_probe.answer");
    expect(lines.slice(1).some((line) => line.includes(ids.A) && line.endsWith(",42"))).toBe(true);
  });
}
