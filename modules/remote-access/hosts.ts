/** Device hostnames: `dev-<uuid without dashes>.<BASE_DOMAIN>` (ARCHITECTURE.md, wire conventions). */

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function deviceLabel(deviceId: string): string {
  return `dev-${deviceId.replace(/-/g, "").toLowerCase()}`;
}

export function deviceHost(deviceId: string, baseDomain: string): string {
  return `${deviceLabel(deviceId)}.${baseDomain.toLowerCase()}`;
}

/** `dev-<32hex>` → the device uuid, or undefined. */
export function deviceIdFromLabel(label: string): string | undefined {
  const match = /^dev-([0-9a-f]{32})$/.exec(label.toLowerCase());
  if (!match) return undefined;
  const h = match[1]!;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The device uuid a host (optionally with `:port`) names under `baseDomain`, or undefined. */
export function deviceIdFromHost(host: string | null | undefined, baseDomain: string): string | undefined {
  if (!host) return undefined;
  const name = host.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  const suffix = `.${baseDomain.toLowerCase()}`;
  if (!name.endsWith(suffix)) return undefined;
  return deviceIdFromLabel(name.slice(0, -suffix.length));
}

/** Lower-cased hostname, or undefined when `value` is not one (no port, no scheme, no IP literal brackets). */
export function normaliseHostname(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const name = value.trim().toLowerCase().replace(/\.$/, "");
  return HOSTNAME.test(name) ? name : undefined;
}
