/**
 * A benchmark's end: what it started is stopped last-first (`cleanups`), when `main` ends or throws and
 * when the run overruns `hardLimitMs` (then it exits with 2), so no cluster or server outlives it.
 */
export function benchLifecycle(hardLimitMs: number) {
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => {});
  };
  const guard = setTimeout(async () => {
    console.error(`benchmark exceeded ${hardLimitMs / 1000}s; stopping`);
    await cleanup();
    process.exit(2);
  }, hardLimitMs);
  /** Runs `main`, then the cleanups; an error is printed and makes the exit code 1. */
  const run = async (main: () => Promise<void>) => {
    try {
      await main();
    } catch (error) {
      console.error(error);
      process.exitCode = 1;
    } finally {
      await cleanup();
      clearTimeout(guard);
    }
  };
  return { cleanups, run };
}
