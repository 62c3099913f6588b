import type { CommandResult, ServerCommand } from "./commands/types.ts";

/** A failed API call. `status` 0 means the request never got an HTTP answer. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null = null,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

export interface RegisterReply {
  id: string;
  api_token?: string;
  approval_status?: string;
}

export interface HeartbeatReply {
  commands: ServerCommand[];
  remote_access_token?: string;
  /** While set, poll this often instead of poll_interval_s (fast tunnel start). */
  poll_interval_seconds?: number;
  /** The tunnel server's host key fingerprint, which the tunnel client pins. */
  tunnel_host_key?: string;
}

/**
 * Extract the payload from a `GET .../command_payloads/{ref}` reply. Kept in one place so the shape is
 * easy to adjust. Accepted: the enveloped form `{data: {payload}}`, and the bare payload object the
 * Outpost server (and the reference server) answer, e.g. `{content_type, name, data}`.
 */
export function parseCommandPayloadReply(body: unknown): unknown {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const data = (body as { data?: unknown }).data;
    if (data && typeof data === "object" && !Array.isArray(data) && "payload" in data)
      return (data as { payload: unknown }).payload;
    return body;
  }
  if (typeof body === "string") return body;
  throw new ApiError("command payload reply is empty or not an object", 200, "invalid_reply");
}

const REF_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export function isValidPayloadRef(ref: unknown): ref is string {
  return typeof ref === "string" && REF_RE.test(ref) && !ref.includes("..");
}

/** HTTP client for the device API (`/api/v1/devices/...`). */
export class DeviceApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
    private readonly userAgent = "outpost-agent",
  ) {}

  private url(pathname: string, apiKey?: string): string {
    const u = new URL(this.baseUrl + pathname);
    if (apiKey !== undefined) u.searchParams.set("api_key", apiKey);
    return u.toString();
  }

  private async request(
    method: string,
    url: string,
    body: unknown,
    expected: number[],
    signal?: AbortSignal,
    timeoutMs = this.timeoutMs,
  ): Promise<unknown> {
    let response: Response;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      response = await fetch(url, {
        method,
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "user-agent": this.userAgent,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
    } catch (err) {
      const e = err as Error;
      const reason = signal?.aborted
        ? "aborted: the agent is stopping"
        : e.name === "TimeoutError" || timeout.aborted
          ? `timed out after ${timeoutMs} ms`
          : e.message;
      throw new ApiError(`${method} ${redact(url)} failed: ${reason}`, 0);
    }
    const text = await response.text().catch(() => "");
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    if (!expected.includes(response.status)) {
      const err = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
      const retryAfter = Number(response.headers.get("retry-after"));
      throw new ApiError(
        `${method} ${redact(url)} answered ${response.status}${err?.code ? ` ${err.code}` : ""}${err?.message ? `: ${err.message}` : ""}`,
        response.status,
        err?.code ?? null,
        Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null,
      );
    }
    return parsed;
  }

  /** `POST /api/v1/devices/register` → `data.id` and, once approved, `data.api_token`. */
  async register(body: Record<string, unknown>, signal?: AbortSignal): Promise<RegisterReply> {
    const url = this.url("/api/v1/devices/register");
    const reply = (await this.request("POST", url, body, [200, 201], signal)) as {
      data?: RegisterReply;
    } | null;
    const data = reply?.data;
    if (!data || typeof data.id !== "string" || data.id === "")
      throw new ApiError("register reply has no data.id", 201, "invalid_reply");
    return data;
  }

  /** `POST /api/v1/devices/{id}/heartbeat?api_key=` → commands and optional remote_access_token. */
  async heartbeat(
    deviceId: string,
    token: string,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<HeartbeatReply> {
    const reply = (await this.request(
      "POST",
      this.url(`/api/v1/devices/${encodeURIComponent(deviceId)}/heartbeat`, token),
      body,
      [200, 202],
      signal,
    )) as {
      data?: {
        commands?: unknown;
        remote_access_token?: unknown;
        poll_interval_seconds?: unknown;
        tunnel_host_key?: unknown;
      };
    } | null;
    const data = reply?.data ?? {};
    const commands = Array.isArray(data.commands) ? (data.commands as ServerCommand[]) : [];
    const result: HeartbeatReply = { commands };
    if (typeof data.remote_access_token === "string" && data.remote_access_token !== "") {
      result.remote_access_token = data.remote_access_token;
    }
    const hint = data.poll_interval_seconds;
    if (typeof hint === "number" && Number.isInteger(hint) && hint >= 1 && hint <= 3600) {
      result.poll_interval_seconds = hint;
    }
    if (typeof data.tunnel_host_key === "string" && /^SHA256:[A-Za-z0-9+/]{43}$/.test(data.tunnel_host_key)) {
      result.tunnel_host_key = data.tunnel_host_key;
    }
    return result;
  }

  /**
   * `GET /api/v1/devices/{id}/wait?api_key=&timeout_s=&remote_access=` → why to poll now, or null when
   * the server held the wait for up to `seconds` without work for this device.
   */
  async wait(
    deviceId: string,
    token: string,
    seconds: number,
    holdsRemoteAccess: boolean,
    signal?: AbortSignal,
  ): Promise<string | null> {
    const url = new URL(this.url(`/api/v1/devices/${encodeURIComponent(deviceId)}/wait`, token));
    url.searchParams.set("timeout_s", String(seconds));
    url.searchParams.set("remote_access", holdsRemoteAccess ? "1" : "0");
    const reply = (await this.request(
      "GET",
      url.toString(),
      undefined,
      [200],
      signal,
      seconds * 1000 + this.timeoutMs,
    )) as {
      data?: { wake?: unknown };
    } | null;
    const wake = reply?.data?.wake;
    return typeof wake === "string" && wake !== "" ? wake : null;
  }

  /** `GET /api/v1/devices/{id}/command_payloads/{ref}?api_key=` → the deferred payload. */
  async fetchCommandPayload(
    deviceId: string,
    token: string,
    ref: string,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const url = this.url(
      `/api/v1/devices/${encodeURIComponent(deviceId)}/command_payloads/${encodeURIComponent(ref)}`,
      token,
    );
    return parseCommandPayloadReply(await this.request("GET", url, undefined, [200], signal));
  }

  /** `POST /api/v1/devices/{id}/command_results?api_key=` with `{results:[...]}`. */
  async postCommandResults(deviceId: string, token: string, results: CommandResult[]): Promise<unknown> {
    const url = this.url(`/api/v1/devices/${encodeURIComponent(deviceId)}/command_results`, token);
    return this.request("POST", url, { results }, [200, 202]);
  }
}

/** Never print tokens: hide the api_key query parameter. */
export function redact(url: string): string {
  return url.replace(/([?&]api_key=)[^&]*/g, "$1***");
}
