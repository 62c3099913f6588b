/**
 * How bench:console times what it times: `runs` runs after 5 warm-ups, p50 / p95 / max, and a mark on a
 * p95 over its target (a page's 50 ms; a count's 200 ms: issue 45).
 */
export const PAGE_TARGET_MS = 50;
export const COUNT_TARGET_MS = 200;
export type Page = [label: string, url: string, p95TargetMs?: number];

const WARM_UP = 5;

/** Runs `work` `runs` times after the warm-ups and prints the line of its times. */
export async function timeRuns(label: string, runs: number, target: number, work: () => Promise<unknown>) {
  const times: number[] = [];
  for (let i = 0; i < runs + WARM_UP; i++) {
    const started = performance.now();
    await work();
    if (i >= WARM_UP) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)]!;
  const p95 = pct(95);
  const over = p95 < target ? "" : `  ← over ${target} ms`;
  console.log(
    `${label.padEnd(52)} ${pct(50).toFixed(1).padStart(7)} ${p95.toFixed(1).padStart(7)} ${times.at(-1)!.toFixed(1).padStart(7)}${over}`,
  );
}

/** Times each page over loopback, request to last byte; a reply other than 200 ends the benchmark. */
export async function timePages(base: string, headers: Record<string, string>, runs: number, pages: Page[]) {
  console.log(`\nserver time over loopback, ${runs} runs each after ${WARM_UP} warm-up runs (ms)`);
  console.log(`${"page".padEnd(52)} ${"p50".padStart(7)} ${"p95".padStart(7)} ${"max".padStart(7)}`);
  for (const [label, url, target = PAGE_TARGET_MS] of pages) {
    await timeRuns(label, runs, target, async () => {
      const response = await fetch(`${base}${url}`, { headers, redirect: "manual" });
      const body = await response.text();
      if (response.status !== 200)
        throw new Error(`${url} answered ${response.status}: ${body.slice(0, 200)}`);
    });
  }
}
