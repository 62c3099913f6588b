import type { Command } from "commander";
import { example } from "../help";
import { readSecret } from "../prompt";
import { api } from "./api";
import { CliError, checkedUrl, credentialsPath, loadCredentials, saveCredentials } from "./credentials";

/**
 * The operator's commands (docs/cli.md): they talk to a running Outpost over HTTPS with an API token,
 * never to its database, so they work from a laptop.
 */
export function registerRemoteCommands(program: Command): void {
  example(
    program
      .command("login")
      .description(
        `store the console's address and an API token (operator or admin) in ${credentialsPath()} (0600); ` +
          "OUTPOST_URL and OUTPOST_API_TOKEN override it. The token is read from stdin or prompted for",
      )
      .option("--url <url>", "the console's address, https://… (http only to localhost)"),
    "./outpost login --url https://outpost.example.com",
    "printf '%s\\n' \"$TOKEN\" | ./outpost login --url https://outpost.example.com",
  ).action(async (options: { url?: string }) => {
    const url = checkedUrl(
      options.url ?? process.env.OUTPOST_URL ?? (await readLine("Outpost address (https://…): ")),
    );
    const token = (await readSecret("API token: ")).trim();
    if (!token) throw new CliError("no token given: create one under Settings → API tokens");
    // One call proves the address and the token before anything is stored.
    await api({ url, token }, "GET", "/api/v1/devices?limit=1");
    const file = saveCredentials({ url, token });
    process.stderr.write(`Signed in to ${url}; credentials stored in ${file} (readable by you only).\n`);
  });

  example(
    program
      .command("ssh")
      .description(
        "open a shell on a device in this terminal (the console's terminal session: recorded, audited, " +
          "idle and time limits); with -- <command>, run it and exit with its status. " +
          "Needs `outpost login` (or OUTPOST_URL and OUTPOST_API_TOKEN)",
      )
      .usage("[options] <device> [-- <command>...]")
      .argument("<device>", "the device's name, id, or a fleet query matching exactly one device")
      .argument("[command...]", "after --: a command to run instead of a shell"),
    "./outpost ssh gateway-17",
    "./outpost ssh gateway-17 -- uptime",
    "./outpost ssh 'tag:site=berlin pump' -- systemctl is-active pump.service",
  ).action(async (device: string, command: string[]) => {
    const { runSsh } = await import("./ssh");
    process.exit(
      await runSsh(loadCredentials(), { device, command: command.length ? command.join(" ") : undefined }),
    );
  });

  example(
    program
      .command("forward")
      .description(
        "listen on 127.0.0.1:<local-port> and carry each connection to <device-port> on the device " +
          "through its tunnel (ports its agent lists in tunnel.forward_ports); audited, Ctrl-C stops. " +
          "Needs `outpost login` (or OUTPOST_URL and OUTPOST_API_TOKEN)",
      )
      .argument("<device>", "the device's name, id, or a fleet query matching exactly one device")
      .argument("<ports>", "<local-port>:<device-port>, e.g. 5900:5900 (local port 0: any free one)"),
    "./outpost forward gateway-17 5900:5900      # then: vncviewer 127.0.0.1:5900",
    "./outpost forward gateway-17 1502:502       # a Modbus/TCP server on the device",
  ).action(async (device: string, ports: string) => {
    const { runForward } = await import("./forward");
    process.exit(await runForward(loadCredentials(), { device, ports }));
  });
}

/** One visible line from a terminal prompt (or stdin's first line when piped). */
async function readLine(label: string): Promise<string> {
  if (!process.stdin.isTTY) throw new CliError("give the address with --url (or OUTPOST_URL)");
  process.stderr.write(label);
  for await (const line of console) return line;
  return "";
}
