// A device's web UI is untrusted content (issue 41): through the real tunnel, the cookies it sets stay on
// its own host and never take a console name; the front's own pages carry the console's security headers.
import { afterAll, describe, expect, test } from "bun:test";
import net from "node:net";
import type { TunnelClient } from "../../agent/tunnel-client";
import { confineSetCookie } from "../../modules/remote-access/tunnel/device-cookies";
import { startTestApp } from "../helpers/app";
import { launchBrowser } from "../helpers/browser";
import {
  connectTunnel,
  deviceWithLease,
  get,
  leaseTicket,
  openWebUi,
  statusOf,
  tunnelClient,
} from "./helpers";

const DOMAIN = "remote.test";
const app = await startTestApp({ BASE_DOMAIN: DOMAIN });
const tunnel = app.running.tunnel!;
const operator = await app.token("operator");

/** What a hostile device answers: cookies aimed at the console and at every other device. */
const HOSTILE_HEAD = [
  "HTTP/1.1 200 OK",
  "Content-Type: text/html",
  `Set-Cookie: outpost_session=%zz; Domain=${DOMAIN}; Path=/devices`,
  `Set-Cookie: __Host-outpost_session=x; Path=/; Secure`,
  `set-cookie: OUTPOST_CSRF=y; Domain=.${DOMAIN}`,
  `Set-Cookie: __SECURE-outpost_flash=z; Secure; Domain=${DOMAIN}`,
  "Set-Cookie: outpost_remote_access=; Max-Age=0",
  `Set-Cookie: =outpost_session=nameless; Domain=${DOMAIN}`,
  "Set-Cookie: bare-value-without-name",
  `Set-Cookie: theme=dark; Domain=.${DOMAIN}; Path=/; HttpOnly; SameSite=Lax`,
  "Set-Cookie: lang=en;",
  `\tDOMAIN=${DOMAIN}`, // obsolete line folding: a browser would join it to the header above
  `Set-Cookie : spaced=1; domain = ${DOMAIN}`,
];
const BODY = "<!doctype html><title>hostile</title><h1>device page</h1>";

/**
 * A device web UI written on a raw socket (Bun's server would normalise the headers a hostile device
 * sends as it likes): `/ws` switches protocols with a cookie of its own, anything else is the hostile page.
 */
const deviceWeb = net.createServer((socket) => {
  let head = "";
  socket.on("error", () => {});
  socket.on("data", (chunk) => {
    head += chunk.toString("latin1");
    if (!head.includes("\r\n\r\n")) return;
    if (head.startsWith("GET /ws ")) {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSet-Cookie: ws=1; Domain=${DOMAIN}\r\nSet-Cookie: outpost_session=ws\r\n\r\n`,
      );
      return;
    }
    socket.end(`${HOSTILE_HEAD.join("\r\n")}\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`);
  });
});
const webPort = await new Promise<number>((resolve) =>
  deviceWeb.listen(0, "127.0.0.1", () => resolve((deviceWeb.address() as net.AddressInfo).port)),
);
const clients: TunnelClient[] = [];
afterAll(async () => {
  for (const client of clients) await client.stop();
  deviceWeb.close();
});

async function connected() {
  const device = await deviceWithLease(app, operator);
  const client = tunnelClient(app, `http://127.0.0.1:${webPort}`);
  clients.push(client);
  await connectTunnel(client, device.reply);
  const host = `dev-${device.hex}.${DOMAIN}`;
  const { cookie } = await openWebUi(app, device, host);
  return { device, host, cookie };
}

const setCookies = (raw: string) =>
  raw
    .split("\r\n\r\n")[0]!
    .split("\r\n")
    .filter((line) => /^set-cookie\s*:/i.test(line))
    .map((line) => line.replace(/^set-cookie\s*:\s*/i, ""));

describe("cookies a device sets stay on its host", () => {
  test("through the real tunnel: Domain dropped, console-named and nameless cookies dropped, folding undone", async () => {
    const { host, cookie } = await connected();
    const raw = await get(tunnel.httpPort, host, "/", { cookie });
    expect(statusOf(raw)).toBe(200);
    expect(raw).toContain("device page");
    expect(setCookies(raw)).toEqual(["theme=dark; Path=/; HttpOnly; SameSite=Lax", "lang=en", "spaced=1"]);
  });

  test("a WebSocket handshake's cookies too; the switch itself still works", async () => {
    const { host, cookie } = await connected();
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(tunnel.httpPort, "127.0.0.1");
      let received = "";
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error("no 101 in time"));
      }, 5000);
      socket.on("connect", () =>
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
        ),
      );
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1");
        if (!received.includes("\r\n\r\n")) return;
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      });
    });
    expect(raw).toMatch(/^HTTP\/1\.1 101/);
    expect(raw).toMatch(/\r\nConnection: Upgrade\r\n/);
    expect(setCookies(raw)).toEqual(["ws=1"]);
  });

  test("the rule, case by case", () => {
    expect(confineSetCookie("a=1; Domain=remote.test; Path=/")).toBe("a=1; Path=/");
    expect(confineSetCookie("a=1; dOmAiN")).toBe("a=1");
    expect(confineSetCookie("Outpost_Session=1")).toBeUndefined();
    expect(confineSetCookie("__host-outpost_csrf=1; Secure; Path=/")).toBeUndefined();
    expect(confineSetCookie(" =x")).toBeUndefined();
    expect(confineSetCookie("__Host-device=1; Secure; Path=/")).toBe("__Host-device=1; Secure; Path=/");
    expect(confineSetCookie("outpostish=1")).toBe("outpostish=1");
  });

  test("in Chromium: a device's cookie never reaches the console, whose pages keep working", async () => {
    const browser = await launchBrowser([`--host-resolver-rules=MAP *.${DOMAIN} 127.0.0.1`]);
    const { device, host } = await connected();
    const consoleUrl = `http://console.${DOMAIN}:${new URL(app.url).port}`;
    const context = await browser.newContext();
    const session = await app.session("viewer");
    await context.addCookies([
      { name: "outpost_session", value: session.cookie.split("=")[1]!, url: consoleUrl },
    ]);
    const page = await context.newPage();
    const ticket = await leaseTicket(app, device);
    await page.goto(`http://${host}:${tunnel.httpPort}/.outpost/auth?ticket=${ticket}`);
    await page.getByRole("heading", { name: "device page" }).waitFor({ timeout: 10_000 });

    const onConsole = (await context.cookies(`${consoleUrl}/devices`)).map((c) => `${c.name}=${c.value}`);
    expect(onConsole).toEqual([session.cookie]);
    const onDevice = (await context.cookies(`http://${host}/`)).map((c) => c.name).sort();
    expect(onDevice).toEqual(["lang", "outpost_remote_access", "spaced", "theme"]);
    // The cookies stayed host-only: another device's host gets none of them.
    expect(await context.cookies(`http://dev-${"0".repeat(32)}.${DOMAIN}/`)).toEqual([]);
    const consolePage = await page.goto(`${consoleUrl}/devices`);
    expect(consolePage!.status()).toBe(200);
    await context.close();
  }, 60_000);
});

describe("the front's own pages", () => {
  test("400, 403, 404 carry the console's security headers; a device's own answer gets none added", async () => {
    const { host, cookie } = await connected();
    const pages = [
      await new Promise<string>((resolve) => {
        const socket = net.connect(tunnel.httpPort, "127.0.0.1");
        let raw = "";
        socket.on("connect", () => socket.write("NONSENSE\r\n\r\n"));
        socket.on("data", (c: Buffer) => {
          raw += c.toString("latin1");
        });
        socket.on("close", () => resolve(raw));
      }),
      await get(tunnel.httpPort, host), // no access cookie: 403
      await get(tunnel.httpPort, "example.com"), // no such device: 404
    ];
    expect(pages.map(statusOf)).toEqual([400, 403, 404]);
    for (const raw of pages) {
      const head = raw.split("\r\n\r\n")[0]!.toLowerCase();
      expect(head).toContain("content-security-policy: default-src 'self'; script-src 'self';");
      expect(head).toContain("frame-ancestors 'none'");
      expect(head).toContain("x-frame-options: deny");
      expect(head).toContain("x-content-type-options: nosniff");
      expect(head).toContain("referrer-policy: same-origin");
    }
    const devicePage = (await get(tunnel.httpPort, host, "/", { cookie })).split("\r\n\r\n")[0]!;
    expect(devicePage.toLowerCase()).not.toContain("content-security-policy");
  });
});
