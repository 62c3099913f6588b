import { redact, redactText } from "../redaction";

/** What a step's HTTP exchange leaves in the e2e_log.v1 step row. */
export interface HttpTrace {
  method: string;
  path: string;
  http_status?: number;
  response_type?: "json_response" | "html_response" | "text_response" | "empty_response";
  bytes?: number;
  truncated?: boolean;
  body_preview?: string;
  body_json?: unknown;
}

/** A step failure with one of the e2e_log.v1 error codes. */
export class ActionError extends Error {
  constructor(
    readonly code:
      | "ASSERTION_FAILED"
      | "HTTP_REQUEST_FAILED"
      | "HTTP_STATUS_UNEXPECTED"
      | "RESPONSE_PARSE_FAILED"
      | "TIMEOUT"
      | "RESPONSE_TYPE_VIOLATION"
      | "EXPECTATION_INVALID"
      | "PRECONDITION_FAILED",
    message: string,
    readonly expected?: unknown,
    readonly actual?: unknown,
  ) {
    super(message);
    this.name = "ActionError";
  }
}

const PREVIEW_BYTES = 500;
const JSON_LIMIT = 64 * 1024;

/** The first PREVIEW_BYTES of a response body for the log, secrets redacted. */
export function previewOf(text: string): string {
  let parsed: unknown;
  let isJson = false;
  try {
    parsed = JSON.parse(text);
    isJson = typeof parsed === "object" && parsed !== null;
  } catch {
    // not JSON: mask the text itself
  }
  const safe = isJson ? JSON.stringify(redact(parsed)) : redactText(text);
  return safe.slice(0, PREVIEW_BYTES).trim();
}

export interface HttpResponse {
  status: number;
  json: any;
  text: string;
  contentType: string;
}

export interface RequestOptions {
  json?: unknown;
  body?: string;
  headers?: Record<string, string>;
  /** Accepted statuses; anything else is HTTP_STATUS_UNEXPECTED. */
  expect?: number[];
  timeoutMs?: number;
}

/** fetch for actions: records every exchange for the journey log and turns surprises into ActionErrors. */
export class ActionHttp {
  readonly traces: HttpTrace[] = [];

  constructor(
    readonly baseUrl: string,
    readonly signal: AbortSignal,
  ) {}

  async request(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    const trace: HttpTrace = { method, path: redact(path) as string };
    this.traces.push(trace);
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    let body = options.body;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers["content-type"] ??= "application/json";
    }
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(options.timeoutMs ?? 30_000)]),
      });
    } catch (error) {
      const name = (error as Error).name;
      if (name === "TimeoutError") throw new ActionError("TIMEOUT", `${method} ${trace.path} timed out`);
      throw new ActionError(
        "HTTP_REQUEST_FAILED",
        `${method} ${trace.path} failed: ${(error as Error).message}`,
      );
    }
    const text = await response.text();
    const contentType = response.headers.get("content-type") ?? "";
    trace.http_status = response.status;
    trace.bytes = Buffer.byteLength(text);
    trace.response_type =
      text === ""
        ? "empty_response"
        : contentType.includes("json")
          ? "json_response"
          : contentType.includes("html")
            ? "html_response"
            : "text_response";
    trace.truncated = trace.bytes > PREVIEW_BYTES;
    // The preview never holds a secret: JSON is previewed from its redacted form; other text has
    // secret-looking pairs masked before it is cut (so a cut cannot leave half a secret visible).
    trace.body_preview = previewOf(text);
    let json: unknown;
    if (trace.response_type === "json_response") {
      try {
        json = JSON.parse(text);
      } catch {
        throw new ActionError("RESPONSE_PARSE_FAILED", `${method} ${trace.path} answered invalid JSON`);
      }
      if (trace.bytes <= JSON_LIMIT) trace.body_json = redact(json);
    }
    if (options.expect && !options.expect.includes(response.status)) {
      const detail = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ActionError(
        "HTTP_STATUS_UNEXPECTED",
        `${method} ${trace.path} answered ${response.status}, expected ${options.expect.join(" or ")}${
          detail?.code ? ` (${detail.code}: ${detail.message ?? ""})` : ""
        }`,
        options.expect,
        response.status,
      );
    }
    return { status: response.status, json, text, contentType };
  }
}

export function assert(
  condition: unknown,
  message: string,
  expected?: unknown,
  actual?: unknown,
): asserts condition {
  if (!condition) throw new ActionError("ASSERTION_FAILED", message, expected, actual);
}
