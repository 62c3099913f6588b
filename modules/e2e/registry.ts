/**
 * The action/expect registry: every action the Outpost runner implements and the one expect token
 * it allows. Run creation rejects journeys that use anything else; the runner's action table
 * (modules/e2e/runner/actions.ts) implements exactly these.
 */
export const ACTION_EXPECTS: Readonly<Record<string, string>> = Object.freeze({
  register_device: "uuid_returned",
  fetch_dashboard: "dashboard_payload",
  runtime_register_device: "runtime_device_registered",
  runtime_approve_device: "device_approved",
  runtime_queue_payload_ref_command: "command_payload_available",
  runtime_expect_missing_payload_ref: "command_payload_missing",
  runtime_reject_invalid_command_results: "command_results_rejected",
  runtime_poll_with_scripts: "scripts_polled_under_budget",
  runtime_verify_telemetry: "telemetry_persisted",
  runtime_cleanup: "runtime_resources_cleaned",
  // A step an outside harness runs and reports through the run API (the system suite, tests/system).
  harness_step: "harness_reported",
});

export function allowedExpect(action: string): string | undefined {
  return Object.hasOwn(ACTION_EXPECTS, action) ? ACTION_EXPECTS[action] : undefined;
}
