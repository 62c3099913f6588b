import path from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { example } from "../help";

// The runner is imported when an e2e command runs, so other commands start no slower.
const runner = () => import("../../modules/e2e/runner/run");
const DEFAULT_JOURNEYS_DIR = path.resolve(import.meta.dir, "../../e2e/journeys");
const EXIT_INTERRUPTED = 130;
const EXIT_ERROR = 2;

interface CommonFlags {
  apiUrl?: string;
  runnerId?: string;
  runnerToken?: string;
  protocolVersion: string;
  json?: boolean;
}

function credentials(flags: CommonFlags) {
  return {
    apiUrl: (flags.apiUrl ?? process.env.OUTPOST_API_URL ?? "http://127.0.0.1:4000").replace(/\/+$/, ""),
    runnerId: flags.runnerId ?? process.env.OUTPOST_E2E_RUNNER_ID?.trim(),
    runnerToken: flags.runnerToken ?? process.env.OUTPOST_E2E_RUNNER_TOKEN?.trim(),
    protocolVersion: flags.protocolVersion,
  };
}

function common(command: Command): Command {
  return command
    .option("--api-url <url>", "Outpost base URL (default $OUTPOST_API_URL or http://127.0.0.1:4000)")
    .option("--runner-id <id>", "E2E runner id (default $OUTPOST_E2E_RUNNER_ID)")
    .option(
      "--runner-token <token>",
      "E2E runner token (default $OUTPOST_E2E_RUNNER_TOKEN; prefer the variable)",
    )
    .option(
      "--protocol-version <version>",
      "X-E2E-Protocol-Version header to send: the E2E API's major version (the server accepts 1)",
      "1",
    )
    .option("--json", "print the result as JSON");
}

function parseTrigger(value: string): "manual" | "ci" {
  if (value !== "manual" && value !== "ci") throw new InvalidArgumentError("must be manual or ci");
  return value;
}

/** `outpost e2e run` and `outpost e2e suites`: the runner side of the E2E API. */
export function registerE2ECommands(program: Command): void {
  const e2e = example(
    program
      .command("e2e")
      .description("run E2E journeys against an Outpost (the runner side of the E2E API)"),
    "OUTPOST_E2E_RUNNER_ID=ci OUTPOST_E2E_RUNNER_TOKEN=… ./outpost e2e run --suite smoke --env staging",
  );

  example(
    common(
      e2e
        .command("run")
        .description(
          "create or reuse a run, execute its journeys, upload logs; exits 0 only when the run passed",
        )
        .requiredOption("--suite <id>", "suite to run")
        .requiredOption("--env <label>", "environment label")
        .option("--journeys <ids>", "comma-separated subset of the suite's journeys")
        .option("--idempotency-key <key>", "reuse the run created with this key in this environment (24 h)")
        .option("--trigger <source>", "manual or ci", parseTrigger, process.env.CI ? "ci" : "manual")
        .option(
          "--commit <sha>",
          "the commit under test, kept in the run's metadata (flaky-journey detection)",
        )
        .option("--branch <name>", "the branch under test, kept in the run's metadata")
        .option("--journeys-dir <dir>", "journey YAML files", DEFAULT_JOURNEYS_DIR)
        .option("--log-dir <dir>", "where e2e_log.v1 JSONL files are written", "artifacts/e2e-logs")
        .option("--junit <file>", "write a JUnit XML report (also when the run fails or is cancelled)"),
    ),
    "./outpost e2e run --api-url https://outpost.example.com --suite smoke --env staging \\\n" +
      "      --trigger ci --idempotency-key gitlab-$CI_PIPELINE_ID-e2e --junit artifacts/e2e-junit.xml",
  ).action(
    async (
      flags: CommonFlags & {
        suite: string;
        env: string;
        journeys?: string;
        idempotencyKey?: string;
        trigger: "manual" | "ci";
        commit?: string;
        branch?: string;
        journeysDir: string;
        logDir: string;
        junit?: string;
      },
    ) => {
      const controller = new AbortController();
      let interrupts = 0;
      const onSignal = () => {
        interrupts += 1;
        if (interrupts > 1) process.exit(EXIT_INTERRUPTED);
        process.stderr.write(
          "\nInterrupt: stopping the current step and cancelling the run (Ctrl-C again to quit now)\n",
        );
        controller.abort();
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      const { runE2E } = await runner();
      const code = await runE2E({
        ...credentials(flags),
        suite: flags.suite,
        environment: flags.env,
        journeys: flags.journeys
          ?.split(",")
          .map((j) => j.trim())
          .filter(Boolean),
        idempotencyKey: flags.idempotencyKey,
        trigger: flags.trigger,
        commit: flags.commit?.trim(),
        branch: flags.branch?.trim(),
        operatorToken: process.env.OUTPOST_API_TOKEN?.trim() || undefined,
        journeysDir: path.resolve(flags.journeysDir),
        logDir: path.resolve(flags.logDir),
        junit: flags.junit ? path.resolve(flags.junit) : undefined,
        json: Boolean(flags.json),
        signal: controller.signal,
        out: (text) => process.stdout.write(text),
        err: (text) => process.stderr.write(text),
      });
      process.exit(code);
    },
  );

  example(
    common(e2e.command("suites").description("list the suites the server offers and their journeys")),
    "./outpost e2e suites --api-url https://outpost.example.com --json",
  ).action(async (flags: CommonFlags) => {
    const { checkCredentials, describeError, E2EApi } = await runner();
    const options = credentials(flags);
    const problem = checkCredentials(options);
    if (problem) {
      process.stderr.write(`outpost e2e: ${problem}\n`);
      process.exit(EXIT_ERROR);
    }
    let reply: Awaited<ReturnType<InstanceType<typeof E2EApi>["call"]>>;
    try {
      reply = await new E2EApi(options).call("GET", "/e2e/suites");
    } catch (error) {
      process.stderr.write(`outpost e2e: cannot reach ${options.apiUrl}: ${(error as Error).message}\n`);
      process.exit(EXIT_ERROR);
    }
    if (reply.status !== 200) {
      process.stderr.write(`outpost e2e: ${describeError(reply)}\n`);
      process.exit(EXIT_ERROR);
    }
    const suites = reply.body.data as { id: string; journey_ids: string[] }[];
    if (flags.json) process.stdout.write(`${JSON.stringify(suites, null, 2)}\n`);
    else for (const suite of suites) process.stdout.write(`${suite.id}: ${suite.journey_ids.join(", ")}\n`);
    process.exit(0);
  });
}
