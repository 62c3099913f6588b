import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SMTPServer } from "smtp-server";

/** A real SMTP server on loopback that keeps every message it receives. */
export async function startSmtp() {
  const mails: { to: string[]; raw: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (chunk: Buffer) => {
        raw += chunk.toString("utf8");
      });
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    mails,
    port: (server.server.address() as { port: number }).port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A real HTTPS receiver on loopback with a self-signed certificate for `hooks.test` (tests map that
 * name to 127.0.0.1) and for 127.0.0.1 itself (a separate Outpost process trusts `cert` through
 * NODE_EXTRA_CA_CERTS). `answers` are the statuses to give next (then 200).
 */
export function startHttpsReceiver() {
  const dir = mkdtempSync(path.join(tmpdir(), "outpost-hook-tls-"));
  const [key, certFile] = [path.join(dir, "key.pem"), path.join(dir, "cert.pem")];
  const openssl = Bun.spawnSync([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    key,
    "-out",
    certFile,
    "-days",
    "1",
    "-subj",
    "/CN=hooks.test",
    "-addext",
    "subjectAltName=DNS:hooks.test,IP:127.0.0.1",
  ]);
  if (openssl.exitCode !== 0) throw new Error("openssl failed");
  const cert = readFileSync(certFile, "utf8");
  const received: { body: string; signature: string | null; host: string | null; at: number }[] = [];
  const answers: number[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert, key: readFileSync(key, "utf8") },
    async fetch(request) {
      received.push({
        body: await request.text(),
        signature: request.headers.get("x-outpost-signature"),
        host: request.headers.get("host"),
        at: Date.now(),
      });
      return new Response("", { status: answers.shift() ?? 200 });
    },
  });
  return {
    cert,
    received,
    answers,
    url: `https://hooks.test:${server.port}/outpost`,
    port: server.port,
    stop() {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
