import { defineJob } from "../modules/jobs/service";
import { DRIVE_TASK, runRolloutDriver } from "../modules/rollouts/service";

export default defineJob<{ rollout_id: string }>({
  identifier: DRIVE_TASK,
  description:
    "Moves a rollout on: collects its devices' results, starts the next ones, pauses or finishes it",
  async run(payload, { database, settings, clock }) {
    const { onlineWindowSeconds } = await settings.device();
    await runRolloutDriver(database, payload.rollout_id, { now: new Date(clock.now()), onlineWindowSeconds });
  },
});
