import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Outbound webhooks go to HTTPS URLs whose host resolves only to public addresses: no loopback,
 * private, link-local, carrier-grade NAT, multicast, documentation or otherwise reserved ranges
 * (server-side request forgery). The check runs when the URL is saved; the sender checks again.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv6");
}

/** True for an address a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED.check(address, "ipv4");
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return isPublicAddress(mapped[1]!);
    return !BLOCKED.check(address, "ipv6");
  }
  return false;
}

export const WEBHOOK_RULE = "Webhook URLs must use HTTPS and resolve only to public network addresses.";

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/** Checks a webhook URL; returns the normalised URL or an error message for the form. */
export async function validateWebhookUrl(
  raw: string,
  resolve: Resolver = systemResolver,
): Promise<{ url: string } | { error: string }> {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { error: "Enter a complete URL, such as https://hooks.example.com/outpost." };
  }
  if (url.protocol !== "https:") return { error: `The URL must start with https://. ${WEBHOOK_RULE}` };
  if (url.username || url.password) return { error: "Put credentials in a header, not in the URL." };
  if (raw.length > 2000) return { error: "The URL is too long (at most 2000 characters)." };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await Promise.race([
        resolve(host),
        new Promise<string[]>((_, reject) => setTimeout(() => reject(new Error("timeout")), 3000)),
      ]);
    } catch {
      return { error: `The host ${host} could not be resolved. ${WEBHOOK_RULE}` };
    }
  }
  if (addresses.length === 0 || !addresses.every(isPublicAddress)) {
    return { error: `The host ${host} resolves to a private or reserved address. ${WEBHOOK_RULE}` };
  }
  return { url: url.toString() };
}
