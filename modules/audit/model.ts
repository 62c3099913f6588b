import { type Static, Type as t } from "@sinclair/typebox";

/** Filters of `GET /api/v1/audit` (and of the page and its CSV, read from the same names). */
export const AuditQuery = t.Object({
  actor: t.Optional(
    t.String({ maxLength: 320, description: "exactly: an email, `token <name>` or a runner id" }),
  ),
  action: t.Optional(t.String({ maxLength: 320, examples: ["device.approve"] })),
  target: t.Optional(t.String({ maxLength: 320, examples: ["device:0b6e1f3a-…"] })),
  from: t.Optional(
    t.String({ description: "ISO 8601; without a zone it is UTC", examples: ["2026-11-01T00:00:00Z"] }),
  ),
  to: t.Optional(t.String({ description: "ISO 8601, exclusive; without a zone it is UTC" })),
  limit: t.Optional(
    t.String({
      pattern: "^(500|[1-4][0-9]{2}|[1-9][0-9]?)$",
      description: "1 to 500 (default 50)",
      message: "must be an integer from 1 to 500",
    }),
  ),
  cursor: t.Optional(t.String({ maxLength: 320, description: "`meta.next_cursor` of the previous page" })),
});
export type AuditQuery = Static<typeof AuditQuery>;

/** The same filters on the page (`/audit`) and its CSV; other parameters (a bookmark's) are ignored. */
export const AuditPageQuery = t.Object(t.Omit(AuditQuery, ["limit"]).properties, {
  additionalProperties: true,
});

export const AuditEventJson = t.Object({
  id: t.String({ format: "uuid" }),
  at: t.String({ format: "date-time" }),
  actor_kind: t.Union([
    t.Literal("operator"),
    t.Literal("token"),
    t.Literal("runner"),
    t.Literal("anonymous"),
    t.Literal("cli"),
  ]),
  actor: t.String(),
  action: t.String(),
  target: t.Union([t.String(), t.Null()]),
  status: t.Integer({ description: "HTTP status of the answer: below 400 done, else refused" }),
  address: t.Union([t.String(), t.Null()]),
  details: t.Record(t.String(), t.Unknown()),
});

export const AuditListReply = t.Object({
  data: t.Array(AuditEventJson),
  meta: t.Object({ next_cursor: t.Union([t.String(), t.Null()]) }),
});
