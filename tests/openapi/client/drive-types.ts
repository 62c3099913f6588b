/** A reply the generated client received (tests/openapi/client/drive.ts), as the contract test reads it. */
export interface Reply {
  method: string;
  path: string;
  status: number;
  contentType: string;
  body: unknown;
}
