import { userInfo } from "node:os";
import { Command, InvalidArgumentError } from "commander";
import { recordCliAudit } from "../modules/audit/service";
import { BackupError } from "../modules/backup/model";
import { isOperatorRole, type OperatorRole } from "../modules/operators/model";
import { type Config, ConfigError, loadConfig } from "../modules/platform/config";
import type { Database } from "../modules/platform/database";
import { AppError } from "../modules/platform/errors";
import { createLogger } from "../modules/platform/logger";
import { registerBackupCommands } from "./backup";
import { registerE2ECommands } from "./e2e/commands";
import { example } from "./help";
import { readSecret } from "./prompt";
import { registerRemoteCommands } from "./remote/commands";
import { CliError } from "./remote/credentials";
import { describeStartupFailure } from "./startup-errors";

// The server's modules load when a command runs, not for `--help` or a usage error (a second, not 0.1 s).
const operators = () => import("../modules/operators/service");
const withDatabase: typeof import("./database").withDatabase = async (...args) =>
  (await import("./database")).withDatabase(...args);

/** The configuration of the running command, so a failure can name the setting behind it. */
let activeConfig: Config | undefined;

function setup() {
  const config = loadConfig();
  activeConfig = config;
  const logger = createLogger(config.logLevel, { role: config.role }, config.logFormat);
  return { config, logger };
}

/** Exit codes (docs/operations.md): 2 for usage and configuration errors, as `e2e run` documents. */
const EXIT_USAGE = 2;

/**
 * A failure as one line on stderr: `outpost: <message>`, or with LOG_FORMAT=json one JSON object like
 * the log's own lines (so a log shipper reading every line as JSON never meets plain text).
 */
function fail(message: string, code: number): never {
  if (process.env.LOG_FORMAT?.trim() === "json")
    process.stderr.write(
      `${JSON.stringify({ level: 60, time: new Date().toISOString(), service: "outpost", msg: message })}\n`,
    );
  else process.stderr.write(`outpost: ${message}\n`);
  process.exit(code);
}

/** Who ran a command, as far as the machine says (kept in the audit details; the actor is `cli`). */
function osUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}

/**
 * Runs a command's change and records it in the audit log with actor `cli`: done (`status`) with what
 * `describe` says of the result, or refused with the error's status. Nothing secret is described.
 */
async function audited<T>(
  database: Database,
  audit: { action: string; status: number; details: Record<string, unknown> },
  change: () => Promise<T>,
  describe: (result: T) => { target?: string; details?: Record<string, unknown> } = () => ({}),
): Promise<T> {
  const details = { ...audit.details, os_user: osUser() };
  let result: T;
  try {
    result = await change();
  } catch (error) {
    if (error instanceof AppError)
      await recordCliAudit(database, { action: audit.action, status: error.status, details });
    throw error;
  }
  const described = describe(result);
  await recordCliAudit(database, {
    action: audit.action,
    status: audit.status,
    target: described.target,
    details: { ...details, ...described.details },
  });
  return result;
}

function parseRole(value: string): OperatorRole {
  if (!isOperatorRole(value)) throw new InvalidArgumentError("must be admin, operator or viewer");
  return value;
}

const program = new Command()
  .name("outpost")
  .description(
    "Outpost: monitor and reach a fleet of Linux devices.\nConfiguration comes from environment variables (see README).",
  )
  .showHelpAfterError("(run with --help for usage)")
  // Usage errors (unknown command or option, missing or bad value) exit 2; help itself exits 0.
  // Set before the commands are added, so every subcommand inherits it.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE));
example(program, "./outpost start", "./outpost admin create --email you@example.com");

example(
  program
    .command("start")
    .description(
      "start Outpost in the role set by OUTPOST_ROLE: all (default), web, worker or tunnel; " +
        "configuration from environment variables (README)",
    ),
  "OUTPOST_ROLE=web PORT=4000 ./outpost start",
).action(async () => {
  const { config, logger } = setup();
  const { startOutpost } = await import("../app");
  const outpost = await startOutpost(config, logger);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal }, "shutting down");
    await outpost.stop();
    logger.info("stopped cleanly");
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
});

example(
  program.command("migrate").description("apply pending database migrations and exit (start does this too)"),
  "DATABASE_URL=postgres://outpost@db/outpost ./outpost migrate",
).action(async () => {
  const { config, logger } = setup();
  await withDatabase(config, logger, async () => {});
  process.stdout.write("Database is up to date.\n");
});

const admin = example(
  program.command("admin").description("manage operator accounts"),
  "./outpost admin create --email you@example.com --role admin",
);
example(
  admin
    .command("create")
    .description("create an operator; the password is read from stdin or prompted for")
    .requiredOption("--email <email>", "sign-in email address")
    .option("--role <role>", "admin, operator or viewer", parseRole, "admin" as OperatorRole),
  "./outpost admin create --email you@example.com --role operator",
  "printf '%s\\n' \"$PASSWORD\" | ./outpost admin create --email ci@example.com",
).action(async (options: { email: string; role: OperatorRole }) => {
  const { config, logger } = setup();
  const { createOperator } = await operators();
  const password = await readSecret("Password (at least 10 characters): ");
  const operator = await withDatabase(config, logger, (database) =>
    audited(
      database,
      { action: "operator.create", status: 201, details: { email: options.email, role: options.role } },
      () => createOperator(database.db, { email: options.email, password, role: options.role }),
      (created) => ({ target: `operator:${created.id}`, details: { email: created.email } }),
    ),
  );
  process.stdout.write(`Created ${operator.role} ${operator.email}\n`);
});

example(
  admin
    .command("unlock")
    .description("clear an email's failed sign-in counters, so its operator can sign in again at once")
    .requiredOption("--email <email>", "sign-in email address"),
  "./outpost admin unlock --email you@example.com",
).action(async (options: { email: string }) => {
  const { config, logger } = setup();
  const { unlockSignIn } = await operators();
  const cleared = await withDatabase(config, logger, (database) =>
    audited(
      database,
      { action: "operator.unlock", status: 200, details: { email: options.email } },
      () => unlockSignIn(database.db, options.email),
      (count) => ({ details: { cleared: count } }),
    ),
  );
  process.stdout.write(
    cleared > 0
      ? `Sign-in unlocked for ${options.email}\n`
      : `No failed sign-ins recorded for ${options.email}\n`,
  );
});

example(
  admin
    .command("reset-factors")
    .description(
      "remove every second factor and recovery code of an operator (one who lost them all); audited",
    )
    .requiredOption("--email <email>", "sign-in email address"),
  "./outpost admin reset-factors --email you@example.com",
).action(async (options: { email: string }) => {
  const { config, logger } = setup();
  const { resetFactorsByEmail } = await operators();
  const removed = await withDatabase(config, logger, (database) =>
    audited(
      database,
      {
        action: "operator.factors_reset",
        status: 200,
        details: { email: options.email.trim().toLowerCase() },
      },
      async () => {
        const count = await resetFactorsByEmail(database.db, options.email);
        if (count === undefined)
          throw new AppError(404, "operator_not_found", `No operator with email ${options.email}`);
        return count;
      },
      (count) => ({ target: `email:${options.email.trim().toLowerCase()}`, details: { removed: count } }),
    ),
  );
  process.stdout.write(`Removed ${removed} second factors of ${options.email}\n`);
});

const token = example(
  program.command("token").description("manage API tokens"),
  "./outpost token create --name ci --role operator",
);
example(
  token
    .command("create")
    .description("create an API token and print it once (only its hash is stored)")
    .requiredOption("--name <name>", "what the token is for, e.g. ci")
    .requiredOption("--role <role>", "admin, operator or viewer", parseRole),
  "./outpost token create --name ci --role operator > ci-token.txt",
).action(async (options: { name: string; role: OperatorRole }) => {
  const { config, logger } = setup();
  const { createApiToken } = await operators();
  const created = await withDatabase(config, logger, (database) =>
    audited(
      database,
      { action: "token.create", status: 201, details: { name: options.name, role: options.role } },
      () => createApiToken(database.db, { name: options.name, role: options.role }),
      ({ record }) => ({ target: `token:${record.id}` }),
    ),
  );
  process.stdout.write(`${created.token}\n`);
  process.stderr.write(
    `Token "${created.record.name}" (${created.record.role}) created. Store it now: it is not shown again.\n`,
  );
});

registerE2ECommands(program);
registerBackupCommands(program);
registerRemoteCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CliError) fail(error.message, error.exitCode);
  if (error instanceof ConfigError || error instanceof AppError || error instanceof BackupError)
    fail(error.message, EXIT_USAGE);
  if (error instanceof Error && error.message === "cancelled") process.exit(130);
  // An unreachable DATABASE_URL or a PORT in use is bad configuration too: one line, exit 2.
  const line = activeConfig && describeStartupFailure(error, activeConfig);
  if (line) fail(line, EXIT_USAGE);
  throw error;
}
