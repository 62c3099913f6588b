// Durability: the rollout driver runs in a real worker process (`OUTPOST_ROLE=worker`), which is
// killed (SIGKILL) while devices are being sent commands; a new worker takes the rollout over and
// finishes it, and no device ever got two commands.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRollout, getRollout, sweepRollouts } from "../../modules/rollouts/service";
import { startTestApp } from "../helpers/app";
import { startOutpostProcess } from "../helpers/process";
import { answer, commandsPerDevice, insertDevices, OPTIONS, script } from "./helpers";

const app = await startTestApp({ OUTPOST_ROLE: "web" });
afterAll(() => app.stop());

function startWorker() {
  return startOutpostProcess(
    {
      OUTPOST_ROLE: "worker",
      DATABASE_URL: app.database.url,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "outpost-rollout-worker-")),
      SECRET_KEY: app.config.secretKey,
    },
    60_000,
    false,
  );
}

describe("a rollout survives its worker's death", () => {
  test("SIGKILL mid-rollout, a new worker finishes it: one command per device", async () => {
    const ids = await insertDevices(app.database, 24);
    const id = await createRollout(
      app.database,
      { action: { type: "install_script", script: script("restart") }, target: { ids }, concurrency: 4 },
      { createdBy: "test", now: new Date(), ...OPTIONS },
    );
    const sent = async () => [...(await commandsPerDevice(app.database)).values()].reduce((a, b) => a + b, 0);
    const answerAll = async () => {
      for (const device of ids) await answer(app.database, device);
    };

    const first = await startWorker();
    // Devices answer while the worker sends; it dies with a third or so sent.
    for (let i = 0; i < 200 && (await sent()) < 8; i++) {
      await answerAll();
      await Bun.sleep(100); // the worker runs in real time
    }
    first.process.kill("SIGKILL");
    await first.process.exited;
    const before = await sent();
    expect(before).toBeGreaterThanOrEqual(8);
    expect(before).toBeLessThan(24);

    const second = await startWorker();
    try {
      // The sweep (a cron each minute) gives the rollout a driver run at once here.
      await sweepRollouts(app.database);
      let status = "";
      for (let i = 0; i < 300 && status !== "completed"; i++) {
        await answerAll();
        await Bun.sleep(100);
        status = (await getRollout(app.database.sql, id)).status;
      }
      expect(status).toBe("completed");
    } finally {
      await second.interrupt();
    }
    const rollout = await getRollout(app.database.sql, id);
    expect(rollout.counts).toMatchObject({ succeeded: 24, failed: 0, skipped: 0 });
    const perDevice = await commandsPerDevice(app.database);
    expect(ids.map((d) => perDevice.get(d))).toEqual(ids.map(() => 1));
  }, 180_000);
});
