/**
 * What the heartbeat route's schemas cost per request, without PostgreSQL: the route as
 * modules/heartbeat/routes.ts declares it (body parser, params, query, body and reply schemas),
 * in-process through `app.handle`, with a handler that answers as a heartbeat delivering no command
 * does — and the same route with parts of its schemas left out. Variants alternate within each round
 * so that the machine's drift falls on all of them.
 *
 *   npm run bench:heartbeat-schemas -- [--requests 20000] [--rounds 3]
 *
 * Prints each variant's CPU per request (µs) per round and their medians, and the schemas' share of the
 * server CPU per heartbeat that bench:heartbeat measures (pass it with --server-us, default 64 µs, the
 * figure in docs/scaling.md).
 */
import { Elysia } from "elysia";
import { HEARTBEAT_MAX_BYTES, HeartbeatBody, HeartbeatReplySchema } from "../../modules/heartbeat/model";
import { readJsonBody } from "../../modules/platform/json-body";
import { DeviceKeyQuery, DeviceParams, errorReplies } from "../../modules/platform/schemas";
import { heartbeatBody } from "./body";
import { knob as flagKnob } from "./flags";

if (process.argv.includes("--help")) {
  console.log("usage: npm run bench:heartbeat-schemas -- [--requests N] [--rounds N] [--server-us N]");
  console.log("example: npm run bench:heartbeat-schemas -- --requests 20000 --rounds 3");
  process.exit(0);
}
const knob = (flag: string, env: string, fallback: number) =>
  flagKnob("bench:heartbeat-schemas", flag, env, fallback);
const REQUESTS = Math.max(1000, knob("requests", "BENCH_REQUESTS", 20_000));
const ROUNDS = Math.max(1, knob("rounds", "BENCH_ROUNDS", 3));
const SERVER_US = Math.max(1, knob("server-us", "BENCH_SERVER_US", 64));

const DEVICE = "6f1c7a52-4c1e-4a8e-9d55-0b5a3c2e9f10";
const reply = () => ({ data: { commands: [] as never[], poll_interval_seconds: 60 } });

type Variant = { name: string; app: Elysia };

function route(schemas: Record<string, unknown>): Elysia {
  const options = {
    parse: ({ request }: { request: Request }) => readJsonBody(request, HEARTBEAT_MAX_BYTES),
    ...schemas,
  };
  // biome-ignore lint/suspicious/noExplicitAny: the variants leave out parts of the real options
  const untyped = options as any;
  return new Elysia({ normalize: false }).post(
    "/api/v1/devices/:device_id/heartbeat",
    async () => reply(),
    untyped,
  ) as unknown as Elysia;
}

const input = { params: DeviceParams, query: DeviceKeyQuery, body: HeartbeatBody };
const replies = { 200: HeartbeatReplySchema, ...errorReplies(400, 401, 403, 404, 413, 422, 429) };
const variants: Variant[] = [
  { name: "no schemas", app: route({}) },
  { name: "request schemas", app: route(input) },
  { name: "request + reply schemas", app: route({ ...input, response: replies }) },
];

const body = JSON.stringify(heartbeatBody("02:00:00:00:00:01", 5120));
const url = `http://127.0.0.1/api/v1/devices/${DEVICE}/heartbeat?api_key=k`;

async function cpuPerRequest(app: Elysia): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    const response = await app.handle(
      new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body }),
    );
    if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / REQUESTS;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

console.log(`heartbeat route schemas: ${REQUESTS} requests per variant and round, ${ROUNDS} rounds`);
for (const variant of variants) await cpuPerRequest(variant.app); // warm up: compile, JIT
const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (let round = 1; round <= ROUNDS; round++) {
  const order = round % 2 ? variants : [...variants].reverse();
  for (const variant of order) {
    const us = await cpuPerRequest(variant.app);
    results.get(variant.name)!.push(us);
    console.log(`  round ${round}: ${variant.name.padEnd(24)} ${us.toFixed(2)} µs CPU/request`);
  }
}
const base = median(results.get("no schemas")!);
console.log("\nmedians (extra over no schemas; share of a heartbeat's server CPU of", `${SERVER_US} µs):`);
for (const [name, values] of results) {
  const us = median(values);
  const extra = us - base;
  console.log(
    `  ${name.padEnd(24)} ${us.toFixed(2)} µs  (+${extra.toFixed(2)} µs, ${((100 * extra) / SERVER_US).toFixed(1)} %)`,
  );
}
