/**
 * The audit name of every state-changing route (`METHOD /route`), the route parameter that names
 * its target, and the body fields worth keeping (never secrets: no passwords, tokens, scripts or
 * webhook URLs). A new state-changing route must be listed here or in NOT_AUDITED
 * (tests/audit/audit.test.ts checks the app's route table against both).
 */
export interface AuditAction {
  action: string;
  /** `kind:param`: the target is `kind:<value of :param>`. */
  target?: `${string}:${string}`;
  fields?: string[];
}

export const AUDITED_ROUTES: Record<string, AuditAction> = {
  "POST /logout": { action: "session.sign_out" },
  "POST /setup": { action: "setup.complete" },
  "POST /auth/oidc/link": { action: "oidc.link_start" },
  "POST /jobs/run": { action: "job.run", fields: ["task"] },
  "POST /api/v1/jobs/:task/run": { action: "job.run", target: "job:task" },
  "POST /api/v1/devices/approval": { action: "device.approval", fields: ["approval_status", "ids"] },
  "PATCH /api/json/devices/:id": { action: "device.update", target: "device:id" },
  "DELETE /api/json/devices/:id": { action: "device.delete", target: "device:id" },
  "POST /api/json/pending_commands": { action: "command.queue" },
  "DELETE /api/json/pending_commands/:id": { action: "command.cancel", target: "command:id" },
  "POST /devices/bulk": { action: "device.bulk", fields: ["action", "ids"] },
  "POST /devices": { action: "device.preauthorize", fields: ["mac_address", "approved"] },
  "POST /devices/:id/approve": { action: "device.approve", target: "device:id" },
  "POST /devices/:id/reject": { action: "device.reject", target: "device:id" },
  "POST /devices/:id/revoke": { action: "device.revoke", target: "device:id" },
  "POST /devices/:id/identity": { action: "device.identity", target: "device:id", fields: ["decision"] },
  "POST /devices/:id/claim-token": { action: "device.claim_token_reissue", target: "device:id" },
  "POST /devices/:id/delete": { action: "device.delete", target: "device:id" },
  "POST /devices/:id/commands": { action: "command.queue", target: "device:id", fields: ["type", "name"] },
  "POST /devices/:id/scripts": { action: "script.install", target: "device:id" },
  "POST /devices/:id/run-once": {
    action: "script.run_once",
    target: "device:id",
    fields: ["name", "timeout_seconds"],
  },
  "POST /devices/:id/commands/:commandId/cancel": { action: "command.cancel", target: "command:commandId" },
  "POST /devices/:id/terminal": { action: "terminal.start", target: "device:id" },
  "POST /api/v1/devices/:device_id/terminal": { action: "terminal.start", target: "device:device_id" },
  "POST /terminal/sessions/:id/end": { action: "terminal.end_session", target: "terminal_session:id" },
  "POST /terminal/settings": { action: "settings.terminal_recording", fields: ["record_input"] },
  "POST /devices/:id/host-key/accept": { action: "device.host_key_accept", target: "device:id" },
  "POST /settings/enrolment-tokens": {
    action: "enrolment_token.create",
    fields: ["name", "approve", "max_uses", "product_name"],
  },
  "POST /settings/enrolment-tokens/:id/revoke": {
    action: "enrolment_token.revoke",
    target: "enrolment_token:id",
  },
  "POST /settings/monitoring": { action: "settings.monitoring" },
  "POST /settings/notifications": { action: "settings.notifications" },
  "POST /settings/notifications/webhook-secret": { action: "settings.webhook_secret" },
  "POST /settings/notifications/test": { action: "settings.notification_test" },
  "POST /settings/operators": { action: "operator.create", fields: ["email", "role"] },
  "POST /settings/operators/:id/role": { action: "operator.role", target: "operator:id", fields: ["role"] },
  "POST /settings/operators/:id/disable": { action: "operator.disable", target: "operator:id" },
  "POST /settings/operators/:id/enable": { action: "operator.enable", target: "operator:id" },
  "POST /settings/operators/:id/reset-factors": { action: "operator.factors_reset", target: "operator:id" },
  "POST /settings/second-factor": {
    action: "settings.second_factor",
    fields: [
      "required_admin",
      "required_operator",
      "required_viewer",
      "fresh_admin",
      "fresh_operator",
      "fresh_viewer",
    ],
  },
  "POST /account/totp": { action: "factor.totp_started", fields: ["name"] },
  "POST /account/totp/confirm": { action: "factor.enrol_totp" },
  "POST /account/passkeys": { action: "factor.enrol_webauthn", fields: ["name"] },
  "POST /account/factors/:id/rename": { action: "factor.rename", target: "factor:id", fields: ["name"] },
  "POST /account/factors/:id/delete": { action: "factor.remove", target: "factor:id" },
  "POST /account/recovery-codes": { action: "factor.recovery_codes" },
  "POST /account/verify": { action: "factor.verify", fields: ["method"] },
  "POST /settings/tokens": { action: "token.create", fields: ["name", "role"] },
  "POST /settings/tokens/:id/revoke": { action: "token.revoke", target: "token:id" },
  "POST /e2e": { action: "e2e.runs_delete", fields: ["ids"] },
  "POST /e2e/runs": { action: "e2e.run_create", fields: ["suite_id", "environment_label", "trigger_source"] },
  "POST /e2e/runs/:runId/cancel": { action: "e2e.run_cancel", target: "e2e_run:runId" },
  "POST /e2e/runs/:runId/results": { action: "e2e.results", target: "e2e_run:runId" },
  "PUT /e2e/runs/:runId/results/:journeyId/log": { action: "e2e.log", target: "e2e_run:runId" },
  "POST /api/v1/devices/:device_id/remote_access": {
    action: "remote_access.open",
    target: "device:device_id",
  },
  "DELETE /api/v1/devices/:device_id/remote_access/:lease_id": {
    action: "remote_access.close",
    target: "remote_access_lease:lease_id",
  },
  "POST /api/v1/devices/:device_id/forwards": { action: "forward.open", target: "device:device_id" },
  "DELETE /api/v1/devices/:device_id/forwards/:lease_id": {
    action: "forward.close",
    target: "remote_access_lease:lease_id",
  },
  "POST /devices/:id/remote-access/open": {
    action: "remote_access.web_ui",
    target: "device:id",
    fields: ["lease_id"],
  },
  "POST /devices/:id/remote-access/close": { action: "remote_access.close", target: "device:id" },
  "POST /devices/:id/remote-access/reopen": { action: "remote_access.reopen", target: "device:id" },
  "POST /api/json/alert_rules": { action: "alert_rule.create" },
  "PATCH /api/json/alert_rules/:id": { action: "alert_rule.update", target: "alert_rule:id" },
  "DELETE /api/json/alert_rules/:id": { action: "alert_rule.delete", target: "alert_rule:id" },
  "PATCH /api/json/alerts/:id": { action: "alert.update", target: "alert:id" },
  "POST /alerts/rules": { action: "alert_rule.create", fields: ["name"] },
  "POST /alerts/rules/:id": { action: "alert_rule.update", target: "alert_rule:id" },
  "POST /alerts/rules/:id/delete": { action: "alert_rule.delete", target: "alert_rule:id" },
  "POST /alerts/bulk": { action: "alert.bulk", fields: ["action", "ids"] },
  "POST /api/v1/reports": { action: "report.create", fields: ["name"] },
  "PATCH /api/v1/reports/:id": { action: "report.update", target: "report:id" },
  "DELETE /api/v1/reports/:id": { action: "report.delete", target: "report:id" },
  "POST /api/json/custom_reports": { action: "report.create" },
  "PATCH /api/json/custom_reports/:id": { action: "report.update", target: "report:id" },
  "DELETE /api/json/custom_reports/:id": { action: "report.delete", target: "report:id" },
  "POST /reports": { action: "report.create", fields: ["name"] },
  "POST /reports/:id": { action: "report.update", target: "report:id" },
  "POST /reports/:id/delete": { action: "report.delete", target: "report:id" },
  // Fleet (docs/fleet.md): tags, names and notes, saved views.
  "POST /api/v1/devices/:device_id/tags": { action: "device.tags.set", target: "device:device_id" },
  "DELETE /api/v1/devices/:device_id/tags/:key": { action: "device.tags.remove", target: "device:device_id" },
  "POST /api/v1/devices/tags": { action: "device.tags.bulk" },
  "PATCH /api/v1/devices/:device_id/profile": { action: "device.profile", target: "device:device_id" },
  "POST /devices/bulk-tags": { action: "device.tags.bulk", fields: ["action", "tag", "ids"] },
  "POST /devices/:id/tags": { action: "device.tags.set", target: "device:id", fields: ["tag"] },
  "POST /devices/:id/tags/remove": { action: "device.tags.remove", target: "device:id", fields: ["key"] },
  "POST /devices/:id/profile": { action: "device.profile", target: "device:id" },
  "POST /api/v1/views": { action: "view.create", fields: ["name", "query"] },
  "PUT /api/v1/views/:view_id": { action: "view.update", target: "view:view_id" },
  "DELETE /api/v1/views/:view_id": { action: "view.delete", target: "view:view_id" },
  "POST /views": { action: "view.create", fields: ["name", "query"] },
  // Rollouts (docs/fleet.md): one record per rollout created and per operator action on it.
  "POST /api/v1/rollouts": { action: "rollout.create" },
  "POST /api/v1/rollouts/:rollout_id/pause": { action: "rollout.pause", target: "rollout:rollout_id" },
  "POST /api/v1/rollouts/:rollout_id/resume": { action: "rollout.resume", target: "rollout:rollout_id" },
  "POST /api/v1/rollouts/:rollout_id/cancel": { action: "rollout.cancel", target: "rollout:rollout_id" },
  "POST /rollouts": { action: "rollout.create" },
  "POST /rollouts/:id/pause": { action: "rollout.pause", target: "rollout:id" },
  "POST /rollouts/:id/resume": { action: "rollout.resume", target: "rollout:id" },
  "POST /rollouts/:id/cancel": { action: "rollout.cancel", target: "rollout:id" },
  "POST /views/:view_id": { action: "view.update", target: "view:view_id" },
  "POST /views/:view_id/delete": { action: "view.delete", target: "view:view_id" },
};

/**
 * State-changing routes that are not audited here: devices' own calls (registration, heartbeats,
 * results — their effects are the device's state and history), a POST that only reads (builder
 * validation), and sign-in with its second step, which records its own events (success and failure,
 * with the email tried; factors enrolled at sign-in) in the operators feature. A device page's
 * remote-access panel (`…/panel`, on every visit) and its leaving beacon (`…/leave`) are page visits, not
 * decisions: the leases they open and end are recorded by the remote-access feature itself
 * (`remote_access.start`, `remote_access.end`).
 */
export const NOT_AUDITED = new Set([
  "POST /login",
  "POST /login/second-factor",
  "POST /login/enrol/totp",
  "POST /login/enrol/totp/confirm",
  "POST /login/enrol/passkeys",
  "POST /devices/:id/remote-access/panel",
  "POST /devices/:id/remote-access/leave",
  "POST /api/v1/builder-configurations/validate",
  "POST /api/v1/devices/register",
  "POST /api/v1/devices/:device_id/heartbeat",
  "POST /api/v1/devices/:device_id/command_results",
]);
