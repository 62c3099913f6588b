/**
 * Remote-access tunnel boundary. The tunnel client itself is a later issue; the poller only talks to
 * this interface: it reports `status()` in every heartbeat and hands over the heartbeat's
 * `remote_access_token` through `apply()` after the commands ran.
 */
export interface ConnectionStatus {
  state: "connected" | "connecting" | "disconnected";
  active: boolean;
  /** When the tunnel came up (ISO 8601), while connected. */
  since?: string;
  error?: string;
}

export interface TunnelController {
  status(): ConnectionStatus;
  /** Called after every change of `status()` (the daemon publishes it for `outpost-agent status`). */
  onChange?: (status: ConnectionStatus) => void;
  /** Start, restart or stop the tunnel according to the token of the latest heartbeat (absent = stop). */
  apply(remoteAccessToken: string | undefined, hostKeyFingerprint?: string): Promise<void>;
  stop(): Promise<void>;
}

/** Placeholder until the tunnel client exists: always disconnected; notes requests once. */
export class DisabledTunnel implements TunnelController {
  private warned = false;

  constructor(private readonly onRequested: (message: string) => void = () => {}) {}

  status(): ConnectionStatus {
    return { state: "disconnected", active: false };
  }

  async apply(remoteAccessToken: string | undefined): Promise<void> {
    if (remoteAccessToken && !this.warned) {
      this.warned = true;
      this.onRequested("server requested remote access, but this agent has no tunnel client yet");
    }
    if (!remoteAccessToken) this.warned = false;
  }

  async stop(): Promise<void> {}
}
