import { Elysia } from "elysia";
import { AppError, errorBody } from "./errors";
import { BodyError } from "./json-body";
import type { Logger } from "./logger";
import { httpRequestDuration } from "./metrics";
import { securityHeaders } from "./security-headers";
import { checkUrlText, unstorableTextError, unstorableTextPath } from "./text-input";
import {
  checkCredentialsOf,
  formValidationFailure,
  type SchemaValidation,
  validationFailure,
} from "./validation";

/** Paths answered with JSON errors; everything else is a browser page. */
export function isApiPath(pathname: string): boolean {
  return (
    /^\/(api(\/|$)|e2e\/)/.test(pathname) ||
    pathname === "/healthz" ||
    pathname === "/readyz" ||
    pathname === "/socket" ||
    pathname.startsWith("/downloads/")
  );
}

/** A page script's fetch that asked for JSON only (the terminal's "Open terminal"): errors answer JSON. */
function asksForJson(request: Request): boolean {
  const accept = request.headers.get("accept") ?? "";
  return accept.includes("application/json") && !accept.includes("text/html");
}

export type ErrorPageRenderer = (input: {
  status: number;
  title: string;
  message: string;
  requestId: string;
}) => string;

/**
 * The client address the per-address limits (sign-in, device registration) count against: the TCP
 * peer. `X-Forwarded-For` is deliberately ignored — anyone can send it — so behind a proxy every
 * client shares the proxy's address.
 */
export function clientAddress(
  request: Request,
  server: { requestIP(r: Request): { address: string } | null } | null,
): string {
  return server?.requestIP(request)?.address ?? "unknown";
}

const requestIds = new WeakMap<Request, string>();

export function requestIdOf(request: Request): string {
  return requestIds.get(request) ?? "-";
}

/** `logger` with the request's id on each line: what a handler logs about its request, as the access log does. */
export function requestLogger(logger: Logger, request: Request): Logger {
  return logger.child({ requestId: requestIdOf(request) });
}

const TITLES: Record<number, string> = {
  400: "Bad request",
  401: "Sign in required",
  403: "Not allowed",
  404: "Page not found",
  405: "Method not allowed",
  409: "Conflict",
  413: "Request too large",
  429: "Too many requests",
  500: "Something went wrong",
};

/** Lets a surface with its own error format (JSON:API) render errors for its paths. */
export type HttpErrorMapper = (error: AppError, request: Request) => Response | undefined;

/**
 * The status a request was answered with, for what runs after the response (metrics, audit): a
 * handler that returns a `Response` (a redirect, a page with its own status) leaves `set.status`
 * at 200, so its own status counts.
 */
export function answeredStatus(context: {
  set: { status?: number | string };
  responseValue?: unknown;
}): number {
  if (context.responseValue instanceof Response) return context.responseValue.status;
  const status = Number(context.set.status ?? 200);
  return Number.isInteger(status) ? status : 200;
}

/** When each request arrived (for the request-duration metric). */
const requestStarts = new WeakMap<Request, number>();

/**
 * Request ids, access logs and the one place errors become responses: typed JSON for API paths,
 * an HTML page for browser paths, and a generic 500 that never shows internals.
 */
export function httpPlugin(options: {
  logger: Logger;
  renderErrorPage: ErrorPageRenderer;
  mappers?: HttpErrorMapper[];
  /** BASE_URL is https: add Strict-Transport-Security. */
  https?: boolean;
  /** Other origins a console form may lead to (CSP form-action), e.g. the devices' own hostnames. */
  formTargets?: string[];
  /** Time every request for `outpost_http_request_duration_seconds` (only when metrics are served). */
  requestMetrics?: boolean;
}) {
  const { logger, renderErrorPage, mappers = [], requestMetrics = false } = options;
  const headersForAll = securityHeaders(options.https === true, options.formTargets);

  function respond(error: AppError, request: Request): Response {
    for (const mapper of mappers) {
      const mapped = mapper(error, request);
      if (mapped) return mapped;
    }
    const requestId = requestIdOf(request);
    const headers: Record<string, string> = {
      ...headersForAll,
      "x-request-id": requestId,
      ...(error.headers ?? {}),
    };
    const { pathname, search } = new URL(request.url);
    if (isApiPath(pathname) || asksForJson(request))
      return Response.json(errorBody(error), { status: error.status, headers });
    if (error.status === 401) {
      const next = encodeURIComponent(pathname + search);
      return new Response(null, { status: 303, headers: { ...headers, location: `/login?next=${next}` } });
    }
    const html = renderErrorPage({
      status: error.status,
      title: TITLES[error.status] ?? "Error",
      message: error.message,
      requestId,
    });
    return new Response(html, {
      status: error.status,
      headers: { ...headers, "content-type": "text/html; charset=utf-8" },
    });
  }

  /** The one answer to an error: typed JSON, an HTML page, or a generic 500. */
  function errorResponse(code: string | number, error: unknown, request: Request): Response {
    if (error instanceof AppError) return respond(error, request);
    switch (code) {
      case "NOT_FOUND":
        return respond(new AppError(404, "not_found", "There is nothing at this address."), request);
      case "PARSE":
        return respond(new AppError(400, "invalid_json", "The request body is not valid JSON"), request);
      case "VALIDATION": {
        // A console page or form refused by its schema: a 400 page in words for a person.
        const failure = error as unknown as SchemaValidation;
        const { pathname } = new URL(request.url);
        const page = !isApiPath(pathname) && !asksForJson(request);
        return respond(page ? formValidationFailure(failure) : validationFailure(failure), request);
      }
    }
    const status = (error as { status?: number }).status;
    if (status === 413)
      return respond(new AppError(413, "payload_too_large", "The request body is too large"), request);
    const sqlState = databaseErrorCode(error);
    if (sqlState?.startsWith("22") || sqlState === "54000") {
      // A value PostgreSQL cannot take (out of range, too long for an index): the input's fault.
      logger.warn({ err: error, requestId: requestIdOf(request), sqlState }, "input refused by the database");
      return respond(
        new AppError(400, "invalid_request", "A value in the request cannot be stored"),
        request,
      );
    }
    logger.error({ err: error, requestId: requestIdOf(request), url: request.url }, "unhandled error");
    return respond(
      new AppError(
        500,
        "internal_error",
        "An internal error occurred. The request id identifies it in the server log.",
      ),
      request,
    );
  }

  return new Elysia({ name: "outpost-http" })
    .onRequest(({ request, set }) => {
      const given = request.headers.get("x-request-id");
      const id = given && /^[\w.-]{1,64}$/.test(given) ? given : crypto.randomUUID();
      requestIds.set(request, id);
      if (requestMetrics) requestStarts.set(request, performance.now());
      Object.assign(set.headers, headersForAll);
      set.headers["x-request-id"] = id;
      checkUrlText(request.url);
    })
    .onTransform({ as: "global" }, ({ body }) => {
      // Bodies parsed by Elysia (forms, JSON) and by readJsonBody alike; a BodyError is raised later.
      const field = unstorableTextPath(body);
      if (field) throw unstorableTextError(field);
    })
    .onBeforeHandle({ as: "global" }, ({ body }) => {
      // A body readJsonBody could not read fails its route's schema (validationFailure); this is for
      // a route whose schema a BodyError would pass.
      if (body instanceof BodyError) throw body.error;
    })
    .onAfterResponse({ as: "global" }, (context) => {
      const { request, route } = context;
      const status = answeredStatus(context);
      const started = requestStarts.get(request);
      if (started !== undefined) {
        // The route template (`/devices/:id`), never the raw path: one series per route.
        httpRequestDuration.observe(
          { method: request.method, route: route ?? "unmatched", status: String(status) },
          (performance.now() - started) / 1000,
        );
      }
      logger.debug(
        { requestId: requestIdOf(request), method: request.method, url: request.url, status },
        "request",
      );
    })
    .onError({ as: "global" }, async ({ code, error, request, set }) => {
      let response: Response;
      try {
        if (code === "VALIDATION") await checkCredentialsOf(request);
        response = errorResponse(code, error, request);
      } catch (credentials) {
        response = errorResponse("UNKNOWN", credentials, request);
      }
      // So that what runs after the response (metrics, audit) sees the status really sent.
      set.status = response.status;
      return response;
    });
}

/** The SQLSTATE of a PostgreSQL error, also when drizzle wraps it. */
function databaseErrorCode(error: unknown): string | undefined {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 3;
    e = e.cause as typeof e, i++
  ) {
    if (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return undefined;
}
