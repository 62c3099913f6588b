// Webhook targets must be public: every special-purpose IPv4/IPv6 range is refused, including IPv6
// forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) — table-driven.
import { describe, expect, test } from "bun:test";
import { isPublicAddress, validateWebhookUrl } from "../../modules/settings/webhook";

const REFUSED: [string, string][] = [
  ["0.0.0.0", "this network"],
  ["10.1.2.3", "RFC 1918"],
  ["100.64.1.1", "CGNAT"],
  ["127.0.0.1", "loopback"],
  ["169.254.169.254", "link-local (cloud metadata)"],
  ["172.16.5.4", "RFC 1918"],
  ["192.0.2.10", "documentation"],
  ["192.168.1.1", "RFC 1918"],
  ["198.18.0.1", "benchmarking"],
  ["224.0.0.1", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["::7f00:1", "IPv4-compatible ::127.0.0.1"],
  ["::127.0.0.1", "IPv4-compatible, dotted"],
  ["::808:808", "IPv4-compatible, even of a public IPv4"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["0:0:0:0:0:ffff:a00:1", "IPv4-mapped 10.0.0.1, long form"],
  ["::ffff:0:a00:1", "IPv4-translated"],
  ["64:ff9b::a00:1", "NAT64 of 10.0.0.1"],
  ["64:ff9b::808:808", "NAT64 (any)"],
  ["64:ff9b:1::1", "local-use NAT64"],
  ["2002:a00:1::1", "6to4 of 10.0.0.1"],
  ["2002:808:808::1", "6to4 (any)"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["100::1", "discard-only"],
  ["fec0::1", "site-local"],
  ["fc00::1", "ULA"],
  ["fd12:3456::1", "ULA"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local with zone"],
  ["ff02::1", "multicast"],
  ["4000::1", "outside global unicast 2000::/3"],
  ["not-an-address", "not an IP"],
];

const ACCEPTED: [string, string][] = [
  ["93.184.216.34", "public IPv4"],
  ["8.8.8.8", "public IPv4"],
  ["::ffff:93.184.216.34", "IPv4-mapped public"],
  ["::ffff:5db8:d822", "IPv4-mapped public, hex"],
  ["2606:2800:220:1:248:1893:25c8:1946", "public IPv6"],
  ["2a00:1450:4001:80b::200e", "public IPv6"],
];

describe("webhook addresses", () => {
  test.each(REFUSED)("refuses %s (%s)", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
  test.each(ACCEPTED)("accepts %s (%s)", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  test.each([
    "https://[::127.0.0.1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[64:ff9b::192.168.0.1]/hook",
    "https://[2002:c0a8:1::1]/hook",
    "https://[fec0::1]/hook",
    "https://[fe80::1]/hook",
    "https://[ff05::2]/hook",
  ])("a URL with the literal %s is refused without DNS", async (url) => {
    const noDns = async (): Promise<string[]> => {
      throw new Error("no DNS for literals");
    };
    expect(await validateWebhookUrl(url, noDns)).toEqual({
      error: expect.stringContaining("private or reserved address"),
    });
  });

  test("a public IPv6 literal passes", async () => {
    expect(await validateWebhookUrl("https://[2606:2800:220:1:248:1893:25c8:1946]/hook")).toEqual({
      url: "https://[2606:2800:220:1:248:1893:25c8:1946]/hook",
    });
  });
});
