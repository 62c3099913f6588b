import { Command, InvalidArgumentError } from "commander";
import { startOutpost } from "../app";
import { BackupError } from "../modules/backup/service";
import {
  createApiToken,
  createOperator,
  isOperatorRole,
  type OperatorRole,
  unlockSignIn,
} from "../modules/operators/service";
import { type Config, ConfigError, loadConfig } from "../modules/platform/config";
import { AppError } from "../modules/platform/errors";
import { createLogger } from "../modules/platform/logger";
import { registerBackupCommands } from "./backup";
import { withDatabase } from "./database";
import { registerE2ECommands } from "./e2e/commands";
import { readSecret } from "./prompt";
import { describeStartupFailure } from "./startup-errors";

/** The configuration of the running command, so a failure can name the setting behind it. */
let activeConfig: Config | undefined;

function setup() {
  const config = loadConfig();
  activeConfig = config;
  const logger = createLogger(config.logLevel, { role: config.role }, config.logFormat);
  return { config, logger };
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
  .showHelpAfterError("(run with --help for usage)");

program
  .command("start")
  .description("start Outpost in the role set by OUTPOST_ROLE (all, web or worker)")
  .action(async () => {
    const { config, logger } = setup();
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

program
  .command("migrate")
  .description("apply pending database migrations and exit (start does this too)")
  .action(async () => {
    const { config, logger } = setup();
    await withDatabase(config, logger, async () => {});
    process.stdout.write("Database is up to date.\n");
  });

const admin = program.command("admin").description("manage operator accounts");
admin
  .command("create")
  .description("create an operator; the password is read from stdin or prompted for")
  .requiredOption("--email <email>", "sign-in email address")
  .option("--role <role>", "admin, operator or viewer", parseRole, "admin" as OperatorRole)
  .action(async (options: { email: string; role: OperatorRole }) => {
    const { config, logger } = setup();
    const password = await readSecret("Password (at least 10 characters): ");
    const operator = await withDatabase(config, logger, (database) =>
      createOperator(database.db, { email: options.email, password, role: options.role }),
    );
    process.stdout.write(`Created ${operator.role} ${operator.email}\n`);
  });

admin
  .command("unlock")
  .description("clear an email's failed sign-in counters, so its operator can sign in again at once")
  .requiredOption("--email <email>", "sign-in email address")
  .action(async (options: { email: string }) => {
    const { config, logger } = setup();
    const cleared = await withDatabase(config, logger, (database) =>
      unlockSignIn(database.db, options.email),
    );
    process.stdout.write(
      cleared > 0
        ? `Sign-in unlocked for ${options.email}\n`
        : `No failed sign-ins recorded for ${options.email}\n`,
    );
  });

const token = program.command("token").description("manage API tokens");
token
  .command("create")
  .description("create an API token and print it once (only its hash is stored)")
  .requiredOption("--name <name>", "what the token is for, e.g. ci")
  .requiredOption("--role <role>", "admin, operator or viewer", parseRole)
  .action(async (options: { name: string; role: OperatorRole }) => {
    const { config, logger } = setup();
    const created = await withDatabase(config, logger, (database) =>
      createApiToken(database.db, { name: options.name, role: options.role }),
    );
    process.stdout.write(`${created.token}\n`);
    process.stderr.write(
      `Token "${created.record.name}" (${created.record.role}) created. Store it now: it is not shown again.\n`,
    );
  });

registerE2ECommands(program);
registerBackupCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError || error instanceof AppError || error instanceof BackupError) {
    process.stderr.write(`outpost: ${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof Error && error.message === "cancelled") process.exit(130);
  // An unreachable DATABASE_URL or a PORT in use is bad configuration too: one line, exit 2.
  const line = activeConfig && describeStartupFailure(error, activeConfig);
  if (line) {
    process.stderr.write(`outpost: ${line}\n`);
    process.exit(2);
  }
  throw error;
}
