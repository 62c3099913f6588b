/**
 * The TypeBox schemas each API route checks its body with (the routes parse bodies themselves, so
 * the generator cannot see them in the route), and the documented replies. Keyed by path, then
 * method, in the shape @elysiajs/openapi takes as `references`.
 */
import type { TSchema } from "@sinclair/typebox";
import { AlertJson, AlertRuleInput, AlertStatusUpdate } from "../alerts/model";
import { AuditListReply } from "../audit/model";
import { BuilderValidationBody } from "../builder/model";
import { CommandResultsBody } from "../commands/model";
import { ApprovalBody, RegistrationBody, RegistrationReply } from "../devices/model";
import { CreateRunBodySchema, ResultSubmitSchema } from "../e2e/model";
import { HeartbeatBody, HeartbeatReplySchema, WaitQuery, WaitReplySchema } from "../heartbeat/model";
import { ResourceDocument } from "../jsonapi/model";
import { OpenLeaseBody } from "../remote-access/model";
import { ReportInputSchema } from "../reports/model";

type Reference = { body?: TSchema; query?: TSchema; response?: Record<number, TSchema> };

export const REFERENCES: Record<string, Record<string, Reference>> = {
  "/api/v1/devices/register": { post: { body: RegistrationBody, response: { 201: RegistrationReply } } },
  "/api/v1/devices/:device_id/heartbeat": {
    post: { body: HeartbeatBody, response: { 200: HeartbeatReplySchema } },
  },
  "/api/v1/devices/:device_id/wait": { get: { query: WaitQuery, response: { 200: WaitReplySchema } } },
  "/api/v1/devices/:device_id/command_results": { post: { body: CommandResultsBody } },
  "/api/v1/devices/approval": { post: { body: ApprovalBody } },
  "/api/v1/audit": { get: { response: { 200: AuditListReply } } },
  "/api/v1/builder-configurations/validate": { post: { body: BuilderValidationBody } },
  "/api/v1/devices/:device_id/remote_access": { post: { body: OpenLeaseBody } },
  "/api/v1/reports": { post: { body: ReportInputSchema } },
  "/api/v1/reports/:id": { patch: { body: ReportInputSchema } },
  "/api/json/devices/:id": { patch: { body: ResourceDocument } },
  "/api/json/pending_commands": { post: { body: ResourceDocument } },
  "/api/json/alert_rules": { post: { body: ResourceDocument } },
  "/api/json/alert_rules/:id": { patch: { body: ResourceDocument } },
  "/api/json/alerts/:id": { patch: { body: ResourceDocument } },
  "/api/json/custom_reports": { post: { body: ResourceDocument } },
  "/api/json/custom_reports/:id": { patch: { body: ResourceDocument } },
  "/e2e/runs": { post: { body: CreateRunBodySchema } },
  "/e2e/runs/:runId/results": { post: { body: ResultSubmitSchema } },
};

/** Schemas the document lists by name (attributes of JSON:API resources). */
export const NAMED_SCHEMAS: Record<string, TSchema> = {
  AlertRuleInput,
  AlertStatusUpdate,
  Alert: AlertJson,
};
