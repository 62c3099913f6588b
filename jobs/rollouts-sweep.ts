import { defineJob } from "../modules/jobs/service";
import { sweepRollouts } from "../modules/rollouts/service";

export default defineJob({
  identifier: "rollouts_sweep",
  description: "Gives every unfinished rollout a driver run (after a worker died during one)",
  async run(_payload, { database }) {
    await sweepRollouts(database);
  },
});
