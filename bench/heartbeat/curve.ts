/**
 * The heartbeat scaling curve: `bench/heartbeat/run.ts` at several fleet sizes and concurrencies, one
 * fresh database each, and a table of what each point measured.
 *
 *   npm run bench:heartbeat-curve [-- --duration 10 --points 1000x64,10000x64,...]
 *
 * A point is DEVICESxCONCURRENCY[xTELEMETRY_ROWS]; by default the fleet sizes 1 k to 1 M at 64
 * concurrent and 100 k devices at 256 and 1,024 concurrent. The last line is one JSON array.
 */
import path from "node:path";

const flag = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
if (process.argv.includes("--help")) {
  console.log("npm run bench:heartbeat-curve -- [--duration 10] [--points 1000x64x2000000,100000x256,...]");
  process.exit(0);
}
const DURATION = flag("duration") ?? "10";
const DEFAULT_POINTS =
  "1000x64x2000000,10000x64x2000000,100000x64x10000000,1000000x64x10000000,100000x256x2000000,100000x1024x2000000";
const points = (flag("points") ?? DEFAULT_POINTS).split(",").map((spec) => {
  const [devices, concurrency, rows = "2000000"] = spec.split("x");
  if (![devices, concurrency, rows].every((n) => /^\d+$/.test(n ?? ""))) {
    console.error(`bench:heartbeat-curve: a point is DEVICESxCONCURRENCY[xROWS], not "${spec}"`);
    process.exit(2);
  }
  return { devices: devices!, concurrency: concurrency!, rows };
});

type Summary = {
  devices: number;
  concurrency: number;
  telemetry_rows_before: number;
  rate: number;
  ratio_to_single_row_ceiling_percent: number;
  machine_idle_percent: number;
  p99_ms: number;
  not_200: number;
  cpu_ms_per_heartbeat: { server: number; postgres: number; load_generator: number };
  ceiling_single_row: number;
  ceiling_multi_row: number;
  floor_cpu_ms_per_heartbeat: { total: number };
  floor_max_rate: number;
};
const results: Summary[] = [];
const run = path.join(import.meta.dir, "run.ts");
for (const [i, point] of points.entries()) {
  console.log(
    `[${i + 1}/${points.length}] ${point.devices} devices, ${point.concurrency} concurrent, ${point.rows} telemetry rows …`,
  );
  const child = Bun.spawn(
    [
      process.execPath,
      run,
      "--devices",
      point.devices,
      "--concurrency",
      point.concurrency,
      "--telemetry-rows",
      point.rows,
      "--duration",
      DURATION,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const output = await new Response(child.stdout).text();
  await child.exited;
  const last = output.trim().split("\n").at(-1) ?? "";
  try {
    const summary = JSON.parse(last) as Summary;
    results.push(summary);
    console.log(`      ${summary.rate} heartbeats/s, p99 ${summary.p99_ms} ms, not 200: ${summary.not_200}`);
  } catch {
    console.error(`      failed (exit ${child.exitCode}):\n${output.split("\n").slice(-15).join("\n")}`);
    process.exitCode = 1;
  }
}

console.log(
  "\n| devices | concurrent | telemetry rows | heartbeats/s | p99 ms | CPU ms/hb server | CPU ms/hb PostgreSQL | CPU ms/hb load generator | single-row ceiling | of the ceiling | machine idle | multi-row ceiling | floor CPU ms/hb | floor allows |",
);
console.log(
  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
);
for (const r of results) {
  console.log(
    `| ${r.devices.toLocaleString("en")} | ${r.concurrency} | ${r.telemetry_rows_before.toLocaleString("en")} | ${r.rate.toLocaleString("en")} | ${r.p99_ms} | ${r.cpu_ms_per_heartbeat.server} | ${r.cpu_ms_per_heartbeat.postgres} | ${r.cpu_ms_per_heartbeat.load_generator} | ${r.ceiling_single_row.toLocaleString("en")} | ${r.ratio_to_single_row_ceiling_percent} % | ${r.machine_idle_percent} % | ${r.ceiling_multi_row.toLocaleString("en")} | ${r.floor_cpu_ms_per_heartbeat.total} | ${r.floor_max_rate.toLocaleString("en")} |`,
  );
}
console.log(JSON.stringify(results));
