// The agent's whole command line (one commander program, its help text and exit codes) in one place;
// the work each command does lives in its own module.
import fs from "node:fs";
import path from "node:path";
import { Command, CommanderError, Option } from "commander";
import YAML from "yaml";
import { monotonicClock } from "../shared/clock.ts";
import { ScriptFormatError } from "../shared/scripts/errors.ts";
import { type ParsedScript, parseScript } from "../shared/scripts/frontmatter.ts";
import { DeviceApiClient } from "./api-client.ts";
import { ensureBuiltinScripts } from "./builtin-scripts/index.ts";
import { type AgentConfig, ConfigError, loadConfig } from "./config.ts";
import { daemonStatePublisher } from "./daemon-state.ts";
import { createLogger, type Logger } from "./logger.ts";
import { type AgentContext, runPollLoop, warmUp } from "./poller.ts";
import { PendingApprovalError, registerDevice, registerOnce, sendChangedLabels } from "./register.ts";
import { runRepl } from "./repl.ts";
import { runOptionsFromConfig, runScript } from "./scripts/runner.ts";
import { ScriptStore, ScriptStoreError } from "./scripts/store.ts";
import { type DeviceCredentials, loadCredentials, loadOrCreateDeviceSecret, StateError } from "./state.ts";
import { agentStatus, statusLines } from "./status-report.ts";
import { TunnelClient } from "./tunnel-client.ts";
import { AGENT_BUILD, AGENT_VERSION } from "./version.ts";

/**
 * An agent upgraded from a version without device secrets holds a token but no bound secret: it
 * registers once, proving itself with that token, so the server binds the secret (and hands out a
 * fresh token). A failure is logged and tried again at the next start or re-registration.
 */
async function bindDeviceSecret(ctx: AgentContext, creds: DeviceCredentials): Promise<DeviceCredentials> {
  try {
    if (loadOrCreateDeviceSecret(ctx.config.state_dir).bound) return creds;
    const renewed = await registerOnce(ctx, creds.uuid);
    ctx.logger.info({ device_id: creds.uuid }, "device secret bound to this device's identity");
    return renewed ?? creds;
  } catch (err) {
    ctx.logger.warn(`could not bind the device secret yet: ${(err as Error).message}`);
    return creds;
  }
}

/** Exit codes: 0 success, 1 failure, 2 usage or configuration error. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** `register` ran out of attempts while the device waits for approval: the normal end of a pending enrolment. */
export const EXIT_PENDING = 3;

/** An error that should end the command with a message and an exit code (no stack trace). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_FAILURE,
  ) {
    super(message);
  }
}

interface GlobalOptions {
  config?: string;
  logLevel?: string;
}

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

const defaultIo: Io = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

function loadAgentConfig(program: Command) {
  const opts = program.opts<GlobalOptions>();
  const loaded = loadConfig({ file: opts.config });
  if (opts.logLevel) loaded.config.log_level = opts.logLevel as AgentConfig["log_level"];
  return loaded;
}

/** The script store, with the built-in scripts installed on first use (if enabled). */
function openStore(config: AgentConfig, logger: Logger | null): ScriptStore {
  const store = new ScriptStore(config.scripts_dir);
  if (!config.install_builtin_scripts) return store;
  try {
    fs.mkdirSync(config.state_dir, { recursive: true, mode: 0o700 });
    const installed = ensureBuiltinScripts(store);
    if (installed.length) logger?.info({ scripts: installed }, "installed built-in scripts");
  } catch (err) {
    // A read-only state dir still allows running script files by path.
    logger?.warn(`could not install built-in scripts: ${(err as Error).message}`);
  }
  return store;
}

function buildContext(program: Command): AgentContext {
  const { config, source } = loadAgentConfig(program);
  const logger = createLogger(config.log_level);
  fs.mkdirSync(config.state_dir, { recursive: true, mode: 0o700 });
  const store = openStore(config, logger);
  return {
    config,
    configSource: source,
    logger,
    store,
    api: new DeviceApiClient(config.server_url, config.http_timeout_ms, `outpost-agent/${AGENT_VERSION}`),
    tunnel: new TunnelClient(config.tunnel, config.server_url, logger),
    startedAt: Date.now(),
    clock: monotonicClock,
  };
}

function positiveInt(name: string) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new CliError(`${name} must be a non-negative integer`, EXIT_USAGE);
    return n;
  };
}

/** Abort controller wired to SIGTERM/SIGINT for the duration of a long-running command. */
function signalController() {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  return {
    signal: controller.signal,
    dispose: () => {
      process.removeListener("SIGTERM", stop);
      process.removeListener("SIGINT", stop);
    },
  };
}

/** Resolve `script test` input: an existing file path, else the latest installed script of that name. */
function resolveScript(target: string, store: ScriptStore): { script: ParsedScript; origin: string } {
  if (fs.existsSync(target) && fs.statSync(target).isFile()) {
    return { script: parseScript(fs.readFileSync(target, "utf8")), origin: path.resolve(target) };
  }
  if (target.includes("/") || target.endsWith(".js")) throw new CliError(`script file not found: ${target}`);
  const installed = store.find(target);
  if (!installed) throw new CliError(`no such script file or installed script: ${target}`);
  return { script: installed, origin: installed.path };
}

export function buildProgram(io: Io = defaultIo): Command {
  const program = new Command();
  program
    .name("outpost-agent")
    .description("Outpost device agent: registers this device, reports telemetry and runs server commands.")
    .version(
      AGENT_BUILD,
      "-V, --version",
      "print the agent version (and, for a build, its commit, architecture and date)",
    )
    .option(
      "-c, --config <file>",
      "configuration file (default: $OUTPOST_AGENT_CONFIG, /etc/outpost/agent.yaml, ~/.config/outpost/agent.yaml)",
    )
    .addOption(
      new Option("--log-level <level>", "log level").choices([
        "trace",
        "debug",
        "info",
        "warn",
        "error",
        "fatal",
        "silent",
      ]),
    )
    .addHelpText(
      "after",
      [
        "",
        "Server commands: list_scripts, install_script, remove_script, ssh_authorize, ssh_revoke, and",
        "run_script (run a script once in the sandbox), which is refused unless the config sets",
        "run_script_enabled: true (default false; docs/agent.md).",
      ].join("\n"),
    )
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .exitOverride();

  program
    .command("register")
    .description(
      "Register this device and wait (with capped exponential backoff) until it is approved and a token is issued.",
    )
    .option(
      "--max-attempts <n>",
      "give up after n attempts (0 = retry until approved; default from config)",
      positiveInt("--max-attempts"),
    )
    .action(async (opts: { maxAttempts?: number }) => {
      const ctx = buildContext(program);
      if (opts.maxAttempts !== undefined) ctx.config.register_max_attempts = opts.maxAttempts;
      const signals = signalController();
      try {
        const creds = await registerDevice(ctx, { signal: signals.signal });
        io.out(`Registered as ${creds.uuid}; credentials stored in ${ctx.config.state_dir}`);
      } catch (error) {
        if (!(error instanceof PendingApprovalError)) throw error;
        io.out(
          `Registered as ${error.deviceId}: waiting for approval. An operator approves it in Outpost's console (Devices, the Pending filter); the running agent (outpost-agent poll) then starts within seconds.`,
        );
        throw new CliError("", EXIT_PENDING);
      } finally {
        signals.dispose();
      }
    });

  program
    .command("poll")
    .description(
      "Run the polling daemon: poll now, then every poll_interval_s, until SIGTERM/SIGINT. Runs the commands the server sends; run_script only with run_script_enabled: true in the config (default false).",
    )
    .option("--once", "poll a single time and exit (exit 1 if the poll failed)")
    .option("--max-polls <n>", "exit after n polls", positiveInt("--max-polls"))
    .action(async (opts: { once?: boolean; maxPolls?: number }) => {
      const ctx = buildContext(program);
      let creds: ReturnType<typeof loadCredentials>;
      try {
        creds = loadCredentials(ctx.config.state_dir);
      } catch (err) {
        throw new CliError((err as StateError).message);
      }
      const daemon = !opts.once && opts.maxPolls === undefined;
      if (!creds && !daemon)
        throw new CliError("no device identity found; run `outpost-agent register` first");
      const signals = signalController();
      // `status` (another process) reads the tunnel's state from here; the file goes when we do.
      const published = daemonStatePublisher(ctx.config.state_dir);
      ctx.tunnel.onChange = (tunnel) => published.publish(tunnel);
      published.publish(ctx.tunnel.status());
      try {
        if (!creds) {
          // The service started before the device was registered (install.sh, a fresh image): register
          // now, waiting while the device is pending, then poll.
          ctx.logger.info({ server: ctx.config.server_url }, "no device identity yet: registering");
          creds = await registerDevice(ctx, { signal: signals.signal });
        } else creds = await sendChangedLabels(ctx, await bindDeviceSecret(ctx, creds));
        const warmUpMs = await warmUp(ctx);
        ctx.logger.info(
          { server: ctx.config.server_url, device_id: creds.uuid, warm_up_ms: warmUpMs },
          "polling started",
        );
        const failures = await runPollLoop(ctx, creds, {
          signal: signals.signal,
          maxPolls: opts.once ? 1 : opts.maxPolls,
        });
        await ctx.tunnel.stop();
        ctx.logger.info("polling stopped");
        if (opts.once && failures > 0) throw new CliError("poll failed (see log above)");
      } finally {
        published.clear();
        signals.dispose();
      }
    });

  program
    .command("status")
    .description("Show identity, server, last poll result, installed scripts and tunnel state.")
    .option("--json", "print as JSON")
    .action((opts: { json?: boolean }) => {
      const status = agentStatus(buildContext(program));
      io.out(opts.json ? JSON.stringify(status, null, 2) : statusLines(status).join("\n"));
    });

  const script = program.command("script").description("Manage and test plugin scripts.");

  script
    .command("install <path>")
    .description("Validate a script file and install it (its version must be higher than the installed one).")
    .option("-f, --force", "install even if the same or a higher version is installed (replaces them)")
    .action((file: string, opts: { force?: boolean }) => {
      const ctx = buildContext(program);
      let text: string;
      try {
        text = fs.readFileSync(file, "utf8");
      } catch (err) {
        throw new CliError(
          `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
      const result = ctx.store.install(text, { force: opts.force });
      io.out(`Installed ${result.name} v${result.version} at ${result.path}`);
    });

  script
    .command("list")
    .description("List installed scripts (every version; * marks the version that runs).")
    .action(() => {
      const ctx = buildContext(program);
      const warnings: { path: string; message: string }[] = [];
      const all = ctx.store.list(warnings);
      const active = new Set(ctx.store.latest().map((s) => s.path));
      const rows = [
        ["NAME", "VERSION", "PATH"],
        ...all.map((s) => [s.meta.name, `${active.has(s.path) ? "*" : " "}v${s.meta.version}`, s.path]),
      ];
      const widths = [0, 1].map((i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows) io.out(`${r[0].padEnd(widths[0] + 2)}${r[1].padEnd(widths[1] + 2)}${r[2]}`);
      for (const w of warnings) io.err(`warning: skipped ${w.path}: ${w.message}`);
    });

  script
    .command("remove <name> [version]")
    .description("Remove an installed script: every version, or only [version] (e.g. 3 or v3).")
    .action((name: string, rawVersion: string | undefined) => {
      const ctx = buildContext(program);
      const version = rawVersion === undefined ? undefined : Number(rawVersion.replace(/^v/i, ""));
      if (version !== undefined && !Number.isInteger(version))
        throw new CliError("version must be a number such as 3 or v3", EXIT_USAGE);
      const removed = ctx.store.remove(name, version);
      for (const s of removed) io.out(`Removed ${s.meta.name} v${s.meta.version} (${s.path})`);
    });

  script
    .command("test <target>")
    .description(
      "Run a script file (or an installed script by name) once; print its output as YAML. Exit 1 on failure.",
    )
    .option("-v, --verbose", "also print duration, warnings, console output and verbose validation details")
    .action(async (target: string, opts: { verbose?: boolean }) => {
      const { config, source } = loadAgentConfig(program);
      const store = fs.existsSync(target) ? new ScriptStore(config.scripts_dir) : openStore(config, null);
      const { script: parsed, origin } = resolveScript(target, store);
      const { report, logs } = await runScript(
        parsed,
        runOptionsFromConfig(config, parsed.meta.name, source),
      );
      if (opts.verbose) {
        io.err(`# ${parsed.meta.name} v${parsed.meta.version} (${origin})`);
        io.err(
          `# status: ${report.status}, validation: ${report.validation_status}, duration: ${report.duration_ms} ms`,
        );
        for (const w of report.warnings ?? []) io.err(`# warning: ${w.message}`);
        for (const line of logs) io.err(`# console: ${line}`);
      }
      if (report.status === "success") {
        io.out(YAML.stringify(report.output).trimEnd());
        return;
      }
      const error = report.error!;
      if (error.type === "validation") {
        if (opts.verbose && report.output) io.out(YAML.stringify(report.output).trimEnd());
        io.err("Output validation failed:");
        const details = opts.verbose ? error.details?.verbose : error.details?.simple;
        for (const line of (details ?? "").split("\n")) io.err(`  ${line}`);
        throw new CliError("", EXIT_FAILURE);
      }
      throw new CliError(`script failed (${error.type}): ${error.message}`);
    });

  script
    .command("repl")
    .description(
      "Interactive JavaScript sandbox with the script builtins and limits (history kept in state_dir).",
    )
    .action(async () => {
      const { config, source } = loadAgentConfig(program);
      await runRepl({
        config,
        configSource: source,
        historyFile: path.join(config.state_dir, "repl_history"),
      });
    });

  for (const cmd of [program, script, ...program.commands, ...script.commands]) cmd.exitOverride();
  return program;
}

/** Run the CLI and return the process exit code. */
export async function runCli(argv: string[], io: Io = defaultIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (
        err.code === "commander.helpDisplayed" ||
        err.code === "commander.version" ||
        err.code === "commander.help"
      )
        return EXIT_OK;
      if (err.code === "commander.executeSubCommandAsync") return EXIT_OK;
      return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (err instanceof CliError) {
      if (err.message) io.err(`error: ${err.message}`);
      return err.exitCode;
    }
    if (err instanceof ConfigError) {
      io.err(`error: ${err.message}`);
      return EXIT_USAGE;
    }
    if (err instanceof ScriptFormatError || err instanceof ScriptStoreError || err instanceof StateError) {
      io.err(`error: ${err.message}`);
      return EXIT_FAILURE;
    }
    io.err(`error: ${(err as Error).message ?? String(err)}`);
    return EXIT_FAILURE;
  }
}
