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
// IPv6 special ranges (IANA special-purpose registry). Ranges that embed an IPv4 address — IPv4-
// compatible ::/96, IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
// 2002::/16, Teredo 2001::/32 (inside 2001::/23) — are refused whole, whatever they embed: a webhook
// has no business going through a translator. IPv4-mapped ::ffff:0:0/96 is checked as IPv4 below.
for (const [net, prefix] of [
  ["::", 96],
  ["::ffff:0:0:0", 96],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["3fff::", 20],
  ["5f00::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (dotted IPv4 tail allowed); undefined if malformed. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (isIP(dotted[1]!) !== 4) return undefined;
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return groups.map((g) => Number.parseInt(g, 16));
}

/** True for an address a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED.check(address, "ipv4");
  if (family === 6) {
    if (address.includes("%")) return false; // a zone index only makes sense for link-local
    const groups = ipv6Groups(address);
    if (!groups) return false;
    // IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:7f00:1): judged by the IPv4 address.
    if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
      const [hi, lo] = [groups[6]!, groups[7]!];
      return isPublicAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
    }
    // Only global unicast 2000::/3 is assigned for public use; everything else is special.
    if ((groups[0]! & 0xe000) !== 0x2000) return false;
    return !BLOCKED.check(address, "ipv6");
  }
  return false;
}

export const WEBHOOK_URL_MAX = 2000;
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
  if (raw.length > WEBHOOK_URL_MAX) {
    return { error: `The URL is too long (at most ${WEBHOOK_URL_MAX} characters).` };
  }
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
