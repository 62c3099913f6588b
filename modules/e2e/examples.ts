/** Examples of the E2E API's replies, for the OpenAPI document (each is checked against its schema). */
const RUN_ID = "0193a5c4-7b1e-7c6a-9f0e-2d4b8c1a9e77";

export const RUN_EXAMPLE = {
  id: RUN_ID,
  suite_id: "smoke",
  journey_ids: ["login", "device_list"],
  environment_label: "staging",
  trigger_source: "ci",
  protocol_version: "1",
  status: "running",
  started_at: "2026-11-28T12:00:00.000Z",
  finished_at: null,
};

export const RESULT_EXAMPLE = {
  id: "0193a5c4-8f20-7d11-8a3b-5e6f7a8b9c0d",
  journey_id: "login",
  status: "failed",
  failure_step: "submit credentials",
  failure_reason: "expected 303, got 500",
  log_ref: `${RUN_ID}/login`,
  started_at: "2026-11-28T12:00:01.000Z",
  finished_at: "2026-11-28T12:00:04.250Z",
  duration_ms: 3250,
};

export const LOG_EXAMPLE = {
  run_id: RUN_ID,
  journey_id: "login",
  content: '{"step":"open sign-in page","status":"passed"}\n',
};

export const LOG_STORED_EXAMPLE = {
  run_id: RUN_ID,
  journey_id: "login",
  log_ref: `${RUN_ID}/login`,
  bytes: 48,
};
