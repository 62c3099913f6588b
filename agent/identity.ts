import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** What the agent knows about the device it runs on; re-detected on every poll. */
export interface DeviceIdentity {
  mac_address: string;
  ip_address: string;
  hostname: string;
  name: string;
  interface: string | null;
}

export interface NetInterfaceInfo {
  name: string;
  mac: string;
  up: boolean;
  loopback: boolean;
  ifindex: number;
}

const IFF_UP = 0x1;
const IFF_LOOPBACK = 0x8;
const ZERO_MAC = "00:00:00:00:00:00";

export class IdentityError extends Error {
  override name = "IdentityError";
}

/** Lowercase `aa:bb:cc:dd:ee:ff`, or null when the input is not a 48-bit MAC. */
export function normalizeMac(mac: string): string | null {
  const hex = mac.replace(/[^0-9a-fA-F]/g, "").toLowerCase();
  if (hex.length !== 12) return null;
  return hex.match(/../g)!.join(":");
}

/** Device name derived from the MAC: `device-aabbccddeeff`. */
export function deviceNameFromMac(mac: string): string {
  return `device-${mac.replace(/[^0-9a-fA-F]/g, "").toLowerCase()}`;
}

function readSysfs(file: string): string | null {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
}

/** Interfaces as seen in /sys/class/net (Linux), sorted by ifindex. */
export function listInterfaces(sysClassNet = "/sys/class/net"): NetInterfaceInfo[] {
  let names: string[];
  try {
    names = fs.readdirSync(sysClassNet);
  } catch {
    return listInterfacesFromOs();
  }
  const result: NetInterfaceInfo[] = [];
  for (const name of names) {
    const dir = path.join(sysClassNet, name);
    const mac = normalizeMac(readSysfs(path.join(dir, "address")) ?? "") ?? ZERO_MAC;
    const flags = Number.parseInt(readSysfs(path.join(dir, "flags")) ?? "0", 16) || 0;
    const ifindex = Number.parseInt(readSysfs(path.join(dir, "ifindex")) ?? "0", 10) || 0;
    const operstate = readSysfs(path.join(dir, "operstate"));
    result.push({
      name,
      mac,
      up: (flags & IFF_UP) !== 0 && operstate !== "down",
      loopback: (flags & IFF_LOOPBACK) !== 0 || name === "lo",
      ifindex,
    });
  }
  return result.sort((a, b) => a.ifindex - b.ifindex || a.name.localeCompare(b.name));
}

function listInterfacesFromOs(): NetInterfaceInfo[] {
  return Object.entries(os.networkInterfaces()).map(([name, addrs], i) => ({
    name,
    mac: normalizeMac(addrs?.[0]?.mac ?? "") ?? ZERO_MAC,
    up: true,
    loopback: addrs?.some((a) => a.internal) ?? false,
    ifindex: i + 1,
  }));
}

/**
 * The primary interface: the configured one if given (must exist and have a MAC), else the first
 * (lowest ifindex) interface that is up, not loopback and has a non-zero hardware address.
 */
export function selectPrimaryInterface(
  interfaces: NetInterfaceInfo[],
  override: string | null,
): NetInterfaceInfo {
  if (override) {
    const found = interfaces.find((i) => i.name === override);
    if (!found) throw new IdentityError(`configured interface "${override}" does not exist`);
    if (found.mac === ZERO_MAC)
      throw new IdentityError(`configured interface "${override}" has no hardware address`);
    return found;
  }
  const primary = interfaces.find((i) => i.up && !i.loopback && i.mac !== ZERO_MAC);
  if (!primary)
    throw new IdentityError("no network interface that is up, non-loopback and has a hardware address");
  return primary;
}

/** First IPv4 address of the interface; else the first non-internal IPv4 of any interface; else 0.0.0.0. */
export function detectIpv4(interfaceName: string | null): string {
  const all = os.networkInterfaces();
  const pick = (name: string) => all[name]?.find((a) => a.family === "IPv4" && !a.internal)?.address;
  if (interfaceName) {
    const ip = pick(interfaceName);
    if (ip) return ip;
  }
  for (const name of Object.keys(all)) {
    const ip = pick(name);
    if (ip) return ip;
  }
  return "0.0.0.0";
}

/** Detect MAC, IP, hostname and derived name. */
export function detectIdentity(interfaceOverride: string | null): DeviceIdentity {
  const primary = selectPrimaryInterface(listInterfaces(), interfaceOverride);
  return {
    mac_address: primary.mac,
    ip_address: detectIpv4(primary.name),
    hostname: os.hostname(),
    name: deviceNameFromMac(primary.mac),
    interface: primary.name,
  };
}
