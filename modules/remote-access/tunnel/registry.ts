import type { Connection } from "ssh2";
import type { WorkConnections } from "./data-plane";

/** A device's live tunnel in this process: its SSH connection and the forwards it asked for. */
export interface DeviceTunnel {
  deviceId: string;
  client: Connection;
  /** Forward name (`http`, `ssh`) → the port accepted for it (the client matches channels on both). */
  forwards: Map<string, number>;
  /** The agent's TLS work connections (the data plane); streams fall back to SSH channels without. */
  work: WorkConnections;
  connectedAt: Date;
  tokenExpiresAt: number;
  close(reason: string): void;
}

/**
 * Tunnels by device, for the vhost front and the multiplexer. A device has at most one tunnel: a new
 * connection replaces (and closes) the old one.
 */
export class TunnelRegistry {
  private readonly tunnels = new Map<string, DeviceTunnel>();

  get(deviceId: string): DeviceTunnel | undefined {
    return this.tunnels.get(deviceId);
  }

  set(tunnel: DeviceTunnel): void {
    const previous = this.tunnels.get(tunnel.deviceId);
    this.tunnels.set(tunnel.deviceId, tunnel);
    if (previous && previous !== tunnel) previous.close("replaced by a new connection");
  }

  /** Removes `tunnel` if it is still the device's current one. */
  delete(tunnel: DeviceTunnel): boolean {
    if (this.tunnels.get(tunnel.deviceId) !== tunnel) return false;
    this.tunnels.delete(tunnel.deviceId);
    return true;
  }

  all(): DeviceTunnel[] {
    return [...this.tunnels.values()];
  }
}
