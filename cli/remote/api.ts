import { CliError, type Credentials } from "./credentials";

/** An error reply of the API: `{error: {code, message}}` with its status. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message, 1);
    this.name = "ApiError";
  }
}

/** Words for the replies an operator meets, by error code (else the server's own message). */
const EXPLAINED: Record<string, string> = {
  unauthorized: "the API token is invalid or revoked: run `outpost login` with a valid one",
  forbidden: "remote access not allowed: this token's role is viewer (operator or admin needed)",
  token_required: "this needs an API token (Authorization: Bearer)",
  device_offline: "the device is offline: remote access needs a device that is online",
  device_not_found: "no approved device with this id",
};

/** Calls the API with the token; a non-2xx answer throws an ApiError with the operator's words. */
export async function api<T>(
  credentials: Credentials,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${credentials.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${credentials.token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual",
    });
  } catch (error) {
    const message = (error as Error).message;
    // A private CA (Caddy's `tls internal`, a company CA): the system does not trust it yet.
    const hint = /certificate|self.signed|issuer/i.test(message)
      ? " (its certificate is not trusted here: add its CA to the system, or NODE_EXTRA_CA_CERTS=<ca.pem>)"
      : "";
    throw new CliError(`cannot reach ${credentials.url}: ${message}${hint}`, 1);
  }
  if (response.ok) return (response.status === 204 ? undefined : await response.json()) as T;
  const reply = (await response.json().catch(() => undefined)) as
    | { error?: { code?: string; message?: string } }
    | undefined;
  const code = reply?.error?.code ?? `http_${response.status}`;
  const message =
    EXPLAINED[code] ??
    reply?.error?.message ??
    `${credentials.url} answered ${response.status} to ${method} ${path}`;
  throw new ApiError(response.status, code, message);
}

export interface DeviceSummary {
  id: string;
  name: string;
  online: boolean;
  approval_status: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CANDIDATES_SHOWN = 10;

/**
 * A device by id, by name (display, reported or derived; case-insensitive, exact) or by a fleet query
 * (docs/fleet.md) that matches exactly one approved device. Several matches and no exact name: an
 * error listing them.
 */
export async function resolveDevice(credentials: Credentials, reference: string): Promise<DeviceSummary> {
  const wanted = reference.trim();
  if (!wanted) throw new CliError("name a device: its name, its id or a query matching one device");
  const query =
    /[\s:"]/.test(wanted) && !UUID.test(wanted)
      ? wanted // already a query (`tag:site=berlin pump`)
      : `"${wanted}"`;
  const params = new URLSearchParams({ q: query, approval_status: "approved", limit: "50" });
  const { data } = await api<{ data: DeviceSummary[] }>(credentials, "GET", `/api/v1/devices?${params}`);
  const exact = data.filter(
    (device) => device.id === wanted.toLowerCase() || device.name.toLowerCase() === wanted.toLowerCase(),
  );
  if (exact.length === 1) return exact[0]!;
  const matches = exact.length > 1 ? exact : data;
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new CliError(`device not found: no approved device matches "${wanted}"`, 1);
  const listed = matches
    .slice(0, CANDIDATES_SHOWN)
    .map((device) => `  ${device.name}  ${device.id}  ${device.online ? "online" : "offline"}`)
    .join("\n");
  const more = matches.length > CANDIDATES_SHOWN ? `\n  … and ${matches.length - CANDIDATES_SHOWN} more` : "";
  throw new CliError(
    `"${wanted}" is ambiguous: ${matches.length}${matches.length === 50 ? "+" : ""} devices match; name one by id or exact name:\n${listed}${more}`,
    1,
  );
}
