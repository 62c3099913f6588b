import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { createBuiltins } from "./builtins/index.ts";
import type { AgentConfig } from "./config.ts";
import { SandboxSession } from "./scripts/sandbox.ts";

export interface ReplOptions {
  config: AgentConfig;
  configSource: string | null;
  historyFile: string;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

const HISTORY_SIZE = 500;

const HELP = `Evaluate JavaScript in the script sandbox (same builtins and limits as plugin scripts).
Builtins: read_file(path), await exec_cmd(cmd, args), await pub_and_get(topic, msg, reply_topic?, accept?),
          statfs(mount), await sleep(ms), memo_get(key), memo_set(key, value), JSON, console.log
A returned promise is awaited (top-level "await expr" works too); "_" holds the last value. Unbalanced brackets continue on the next line.
Commands: .help  .exit (or Ctrl-D)  Ctrl-C clears the current input.`;

/** Nesting depth of brackets outside strings/comments; > 0 means the input continues on the next line. */
export function openBrackets(code: string): number {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === "/" && code[i + 1] === "/") {
      const nl = code.indexOf("\n", i);
      if (nl < 0) break;
      i = nl;
    } else if (c === '"' || c === "'" || c === "`") quote = c;
    else if ("([{".includes(c)) depth++;
    else if (")]}".includes(c)) depth--;
  }
  return quote === "`" ? Math.max(depth, 1) : depth;
}

export function formatValue(value: unknown): string {
  if (value === undefined) return "undefined";
  return JSON.stringify(value, null, 2) ?? String(value);
}

function loadHistory(file: string): string[] {
  try {
    return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).slice(-HISTORY_SIZE).reverse();
  } catch {
    return [];
  }
}

function appendHistory(file: string, line: string) {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.appendFileSync(file, `${line.replace(/\n/g, " ")}\n`, { mode: 0o600 });
  } catch {
    // history is best effort
  }
}

/** Interactive sandbox REPL. Resolves when the user exits. */
export async function runRepl(options: ReplOptions): Promise<void> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const { config } = options;
  const newSession = () =>
    SandboxSession.create(createBuiltins(config, "repl", options.configSource), {
      timeoutMs: config.script_timeout_ms,
      memoryMb: config.script_memory_mb,
    });
  let session = await newSession();
  const terminal = (input as NodeJS.ReadStream).isTTY === true;
  const rl = readline.createInterface({
    input,
    output,
    terminal,
    history: loadHistory(options.historyFile),
    historySize: HISTORY_SIZE,
    prompt: "outpost> ",
  } as readline.ReadLineOptions);
  const write = (text: string) => output.write(`${text}\n`);
  write('Outpost script sandbox. Type ".help" for help, ".exit" or Ctrl-D to quit.');
  let buffer = "";
  let busy = false;
  const queue: string[] = [];

  const evaluate = async (code: string) => {
    appendHistory(options.historyFile, code);
    const seen = session.logs.length;
    let outcome = await session.evaluate(code, "repl");
    // Top-level `await` is not valid in a global script: results are awaited anyway, so retry the input
    // as the body of an async arrow function.
    if (!outcome.ok && outcome.error.type === "syntax" && /\bawait\b/.test(code)) {
      const retry = await session.evaluate(`(async () => (\n${code.replace(/;\s*$/, "")}\n))()`, "repl");
      if (retry.ok || retry.error.type !== "syntax") outcome = retry;
    }
    for (const line of session.logs.slice(seen)) write(line);
    session.logs.length = 0;
    if (outcome.ok) {
      write(formatValue(outcome.value));
      session.setGlobal("_", outcome.value ?? null);
    } else {
      write(`${outcome.error.type} error: ${outcome.error.message}`);
    }
    if (session.needsReset) {
      // Out of memory or a WebAssembly trap: that instance is unusable; start over in a fresh one.
      session.close();
      session = await newSession();
      write("(the sandbox was reset after this error: earlier definitions and _ are gone)");
    }
  };

  const handleLine = async (line: string) => {
    if (!buffer && line.trim() === ".exit") {
      rl.close();
      return;
    }
    if (!buffer && line.trim() === ".help") {
      write(HELP);
      return;
    }
    buffer = buffer ? `${buffer}\n${line}` : line;
    if (openBrackets(buffer) > 0) {
      rl.setPrompt("... ");
      return;
    }
    const code = buffer;
    buffer = "";
    rl.setPrompt("outpost> ");
    if (code.trim() !== "") await evaluate(code);
  };

  await new Promise<void>((resolve) => {
    const pump = async () => {
      if (busy) return;
      busy = true;
      while (queue.length) {
        await handleLine(queue.shift()!);
      }
      busy = false;
      if (!closed) rl.prompt();
    };
    let closed = false;
    rl.on("line", (line) => {
      queue.push(line);
      void pump();
    });
    rl.on("SIGINT", () => {
      if (buffer) {
        buffer = "";
        rl.setPrompt("outpost> ");
        output.write("\n");
      } else {
        output.write("\n(To exit, press Ctrl-D or type .exit)\n");
      }
      rl.prompt();
    });
    rl.on("close", () => {
      closed = true;
      const finish = () => {
        if (busy) {
          setTimeout(finish, 20);
          return;
        }
        session.close();
        resolve();
      };
      finish();
    });
    rl.prompt();
  });
}
