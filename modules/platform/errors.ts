/** An error whose code, status and message are safe to show to the caller. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new AppError(400, "invalid_request", message, details);
export const unauthorized = (message = "Authentication required") =>
  new AppError(401, "unauthorized", message);
export const forbidden = (message = "Your role does not allow this action") =>
  new AppError(403, "forbidden", message);
export const notFound = (message = "Not found", code = "not_found") => new AppError(404, code, message);

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(error: AppError): ErrorBody {
  const body: ErrorBody = { error: { code: error.code, message: error.message } };
  if (error.details !== undefined) body.error.details = error.details;
  return body;
}
