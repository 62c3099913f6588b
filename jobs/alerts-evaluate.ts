import { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "../modules/alerts";
import { defineJob, enqueueJob } from "../modules/jobs/service";

/** How long one job keeps following a busy stream before it hands over to a fresh job. */
const FOLLOW_MS = 5000; // short: shutdown waits for a running job
/** A pass that read at least this many events found a busy stream: the next pass follows in BUSY_PAUSE_MS. */
const BUSY_EVENTS = 50;
const BUSY_PAUSE_MS = 1000;
/**
 * A thinner stream (a small or quiet fleet) is read every THIN_PAUSE_MS: a pass costs a transaction and
 * a handful of statements whatever it reads, so at rest passes every second were most of what Outpost
 * did (docs/scaling.md, **At rest**). A breach then opens its alert within SETTLE_MS + THIN_PAUSE_MS
 * (and a job poll): inside docs/alerts.md's 5 s.
 */
const THIN_PAUSE_MS = 2500;

export default defineJob({
  identifier: EVALUATE_TASK,
  description:
    "Evaluates alert rules against new telemetry (woken by heartbeats; every minute as a safety net)",
  async run(_payload, { config, database, logger }) {
    const next = async (pauseMs: number) => {
      await enqueueJob(
        database.sql,
        EVALUATE_TASK,
        {},
        {
          // The pass knows the stream best: its time replaces a wake-up's that came meanwhile (and
          // wake-ups keep the time it set: modules/alerts/wake.ts).
          jobKey: EVALUATE_TASK,
          jobKeyMode: "replace",
          delayMs: pauseMs,
          maxAttempts: 10,
        },
      );
    };
    const started = Date.now();
    for (;;) {
      const result = await evaluateAlerts(database.sql, config);
      if (result.events > 0) logger.debug(result, "evaluated alert rules");
      // Nothing yet: telemetry still inside the settle margin is read once it settles; none at all,
      // and the next heartbeat wakes evaluation.
      if (result.events === 0) return result.unsettled ? next(SETTLE_MS) : undefined;
      if (result.more && Date.now() - started <= FOLLOW_MS) continue;
      const busy = result.more || result.events >= BUSY_EVENTS;
      if (!busy || Date.now() - started > FOLLOW_MS) return next(busy ? 0 : THIN_PAUSE_MS);
      await Bun.sleep(BUSY_PAUSE_MS);
    }
  },
});
