import { createHmac } from "node:crypto";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Config } from "../../platform/config";
import { isPublicAddress, type Resolver } from "../../settings/service";

/**
 * Signed webhook delivery. The host is resolved and every address checked again at send time
 * (DNS may have changed since Settings saved the URL); the request then goes to the checked
 * address itself (TLS still verifies the certificate for the URL's host name), so a second DNS
 * answer cannot redirect it. 5 s timeout, redirects are not followed (a 3xx is a failure).
 */
export const SIGNATURE_HEADER = "X-Outpost-Signature";
export const WEBHOOK_TIMEOUT_MS = 5000;

/** `t=<unix>,v1=<hex>`: HMAC-SHA256 with the Settings secret over `<t>.<body>` (docs/alerts.md). */
export function signWebhook(
  secret: string,
  body: string,
  unixSeconds = Math.floor(Date.now() / 1000),
): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

interface TestOverrides {
  resolve?: Resolver;
  /** PEM of a test receiver's self-signed certificate. */
  ca?: string;
}
const overrides = new WeakMap<object, TestOverrides>();

/** Tests only: a resolver and a trusted certificate for the app of this config. */
export function setWebhookTestOverrides(config: object, value: TestOverrides): void {
  overrides.set(config, value);
}

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

const LOOPBACK = (a: string) => a === "::1" || a.startsWith("127.");

export async function postWebhook(
  config: Config,
  target: string,
  body: string,
  secret: string | null,
): Promise<{ ok: true; status: number } | { ok: false; error: string }> {
  const url = new URL(target);
  if (url.protocol !== "https:") return { ok: false, error: "the webhook URL is not https" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const test = overrides.get(config) ?? {};
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await (test.resolve ?? systemResolver)(host);
  } catch {
    return { ok: false, error: `could not resolve ${host}` };
  }
  // ALERT_WEBHOOK_ALLOW_LOOPBACK_FOR_TESTS (off by default) admits loopback receivers only.
  const allowed = (a: string) => isPublicAddress(a) || (config.alertWebhookAllowLoopback && LOOPBACK(a));
  if (addresses.length === 0 || !addresses.every(allowed)) {
    return { ok: false, error: `${host} resolves to a private or reserved address` };
  }
  const address = addresses[0]!;
  const pinned = new URL(url);
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "Outpost-Alerts/1",
    host: url.host,
  };
  if (secret) headers[SIGNATURE_HEADER] = signWebhook(secret, body);
  try {
    const response = await fetch(pinned, {
      method: "POST",
      body,
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      tls: { serverName: host, ...(test.ca ? { ca: test.ca } : {}) },
    } as RequestInit);
    await response.body?.cancel().catch(() => {});
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status };
    return { ok: false, error: `the receiver answered ${response.status}` };
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    return {
      ok: false,
      error:
        name === "TimeoutError" ? "timed out after 5 s" : `request failed: ${String(error).slice(0, 200)}`,
    };
  }
}
