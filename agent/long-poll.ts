import { ApiError } from "./api-client.ts";
import type { AgentContext } from "./poller.ts";
import type { DeviceCredentials } from "./state.ts";

/** Longest wait asked of the server in one request (under the usual 60 s proxy read timeouts). */
export const WAIT_MAX_S = 55;
let waitUnsupportedNoted = false;

/**
 * The time until the next poll. With `long_poll`, spent in server waits (each up to WAIT_MAX_S) that
 * the server answers early when there is work for the device — remote access opened or ended, a
 * command queued — so the next poll starts at once. A server that answers at once without work (it
 * holds no waits, or is stopping) or fails leaves the rest of the time to a plain sleep, and so does a
 * wake that comes at once when `acceptImmediate` is false: work that a poll did not take away (a
 * server out of step) must not turn into polling in a loop. Tells how the time ended.
 */
export async function idle(
  ctx: Pick<AgentContext, "config" | "logger" | "api" | "clock">,
  creds: DeviceCredentials,
  delayMs: number,
  holdsRemoteAccess: boolean,
  signal: AbortSignal,
  { acceptImmediate = true } = {},
): Promise<"woken" | "at once" | "slept"> {
  const { clock } = ctx;
  const until = clock.now() + delayMs;
  const left = () => Math.max(0, until - clock.now());
  if (!ctx.config.long_poll) {
    await clock.sleep(delayMs, signal);
    return "slept";
  }
  while (!signal.aborted && left() >= 1000) {
    const seconds = Math.min(WAIT_MAX_S, Math.floor(left() / 1000));
    const asked = clock.now();
    try {
      const wake = await ctx.api.wait(creds.uuid, creds.token, seconds, holdsRemoteAccess, signal);
      const atOnce = clock.now() - asked < 1000;
      if (wake && (acceptImmediate || !atOnce)) {
        ctx.logger.info({ wake }, "the server has work for this device: polling now");
        return atOnce ? "at once" : "woken";
      }
      if (wake) ctx.logger.warn({ wake }, "the server keeps waking this device at once: polling on schedule");
      if (atOnce) break;
    } catch (err) {
      if (signal.aborted) return "slept";
      const unsupported = err instanceof ApiError && err.status === 404 && err.code !== "device_not_found";
      if (unsupported && !waitUnsupportedNoted) {
        waitUnsupportedNoted = true;
        ctx.logger.warn(
          `the server does not hold waits (${(err as Error).message}): work waits for the next poll`,
        );
      } else ctx.logger.debug(`waiting for work failed: ${(err as Error).message}`);
      break;
    }
  }
  await clock.sleep(left(), signal);
  return "slept";
}
