import os from "node:os";
import { ApiError } from "./api-client.ts";
import { backoffDelayMs, sleep } from "./backoff.ts";
import { detectIdentity } from "./identity.ts";
import type { AgentContext } from "./poller.ts";
import {
  type DeviceCredentials,
  loadCredentials,
  loadOrCreateDeviceSecret,
  loadSentLabels,
  markDeviceSecretBound,
  sameLabels,
  saveCredentials,
  saveSentLabels,
} from "./state.ts";
import { buildSchemaDefinition } from "./telemetry.ts";
import { AGENT_VERSION } from "./version.ts";

export class RegistrationError extends Error {
  override name = "RegistrationError";
}

/** The attempts ran out while the device waits for an operator: registered, not yet approved. */
export class PendingApprovalError extends RegistrationError {
  override name = "PendingApprovalError";
  constructor(readonly deviceId: string) {
    super(`device ${deviceId} is waiting for operator approval`);
  }
}

/** The registration request body. */
export function buildRegistrationBody(
  ctx: Pick<AgentContext, "config" | "store">,
  existingUuid: string | null,
) {
  const identity = detectIdentity(ctx.config.interface);
  const metadata: Record<string, unknown> = {
    hostname: identity.hostname,
    ip_address: identity.ip_address,
    name: identity.name,
    interface: identity.interface,
    agent_version: AGENT_VERSION,
    os: { platform: os.platform(), release: os.release(), arch: os.arch() },
  };
  if (existingUuid) metadata.client_uuid = existingUuid;
  let heldToken: string | undefined;
  try {
    heldToken = loadCredentials(ctx.config.state_dir)?.token;
  } catch {
    heldToken = undefined;
  }
  return {
    mac_address: identity.mac_address,
    product_name: ctx.config.product_name,
    metadata,
    // Always sent: the server replaces the device's labels with these (an empty set clears them).
    labels: ctx.config.labels,
    schema_definition: buildSchemaDefinition(ctx.config.product_name, ctx.store.latest()),
    // Proof of identity: the device's secret, and the token it holds (binds the secret to a device
    // registered before secrets existed).
    device_secret: loadOrCreateDeviceSecret(ctx.config.state_dir).secret,
    ...(heldToken ? { api_token: heldToken } : {}),
    ...(ctx.config.enrolment_token ? { enrolment_token: ctx.config.enrolment_token } : {}),
  };
}

/** The server accepted a registration: it holds the secret and the labels it carried now. */
function registrationAccepted(config: AgentContext["config"]) {
  markDeviceSecretBound(config.state_dir);
  saveSentLabels(config.state_dir, config.labels);
}

/** Client errors that retrying cannot fix (bad MAC, invalid schema, oversized body). */
function isPermanent(err: unknown): boolean {
  return err instanceof ApiError && [400, 413, 422].includes(err.status);
}

/**
 * One registration attempt (used by the poll loop after a 401/403/404): stores and returns new
 * credentials when the server issues a token, otherwise null.
 */
export async function registerOnce(
  ctx: AgentContext,
  existingUuid: string | null,
  signal?: AbortSignal,
): Promise<DeviceCredentials | null> {
  const reply = await ctx.api.register(buildRegistrationBody(ctx, existingUuid), signal);
  registrationAccepted(ctx.config);
  if (typeof reply.api_token !== "string" || reply.api_token === "") return null;
  const creds = { uuid: reply.id, token: reply.api_token };
  saveCredentials(ctx.config.state_dir, creds);
  return creds;
}

/**
 * The labels in the configuration changed since the server last accepted them (or were never sent by
 * this agent): register once to send them. A failure is logged and tried again at the next start.
 */
export async function sendChangedLabels(
  ctx: AgentContext,
  creds: DeviceCredentials,
): Promise<DeviceCredentials> {
  const sent = loadSentLabels(ctx.config.state_dir);
  if (sent && sameLabels(sent, ctx.config.labels)) return creds;
  try {
    const renewed = await registerOnce(ctx, creds.uuid);
    ctx.logger.info({ device_id: creds.uuid, labels: ctx.config.labels }, "labels sent to the server");
    return renewed ?? creds;
  } catch (err) {
    ctx.logger.warn(`could not send the changed labels yet: ${(err as Error).message}`);
    return creds;
  }
}

export interface RegisterOptions {
  signal: AbortSignal;
  random?: () => number;
  onPending?: (attempt: number, delayMs: number) => void;
}

/**
 * Register until the server issues a token: capped exponential backoff with jitter between attempts
 * (`register_retry_base_ms` doubling up to `register_retry_max_s`) after errors; while the device waits
 * for approval it asks every `register_pending_poll_s` (jittered) so approval takes effect within seconds;
 * `register_max_attempts` (0 = unlimited) bounds the loop. Credentials are stored only with a token.
 */
export async function registerDevice(
  ctx: AgentContext,
  options: RegisterOptions,
): Promise<DeviceCredentials> {
  const { config, logger } = ctx;
  let existing: string | null = null;
  try {
    existing = loadCredentials(config.state_dir)?.uuid ?? null;
  } catch {
    existing = null;
  }
  const capMs = config.register_retry_max_s * 1000;
  for (
    let attempt = 1;
    config.register_max_attempts === 0 || attempt <= config.register_max_attempts;
    attempt++
  ) {
    if (options.signal.aborted) throw new RegistrationError("registration interrupted");
    let problem: string;
    let rejected = false;
    let pending = false;
    try {
      const reply = await ctx.api.register(buildRegistrationBody(ctx, existing), options.signal);
      registrationAccepted(config);
      if (typeof reply.api_token === "string" && reply.api_token !== "") {
        const creds = { uuid: reply.id, token: reply.api_token };
        saveCredentials(config.state_dir, creds);
        logger.info({ device_id: reply.id }, "registered; credentials stored");
        return creds;
      }
      existing = reply.id;
      rejected = reply.approval_status === "rejected";
      pending = !rejected;
      problem = rejected
        ? `device ${reply.id} was rejected by an operator; still retrying in case it is approved later`
        : `device ${reply.id} is waiting for operator approval (status: ${reply.approval_status ?? "pending"})`;
    } catch (err) {
      if (options.signal.aborted) throw new RegistrationError("registration interrupted");
      if (isPermanent(err)) throw new RegistrationError(`registration rejected: ${(err as Error).message}`);
      problem = (err as Error).message;
    }
    if (config.register_max_attempts !== 0 && attempt >= config.register_max_attempts) {
      if (pending && existing) throw new PendingApprovalError(existing);
      throw new RegistrationError(`registration did not complete after ${attempt} attempts: ${problem}`);
    }
    // Waiting for approval asks again at a steady pace, so an approved device starts within seconds;
    // errors (server down, 429) back off.
    const pendingMs = config.register_pending_poll_s * 1000;
    const delay = pending
      ? backoffDelayMs(1, pendingMs, pendingMs, options.random)
      : backoffDelayMs(attempt, config.register_retry_base_ms, capMs, options.random);
    if (rejected) logger.error({ attempt, retry_in_ms: delay }, `registration refused: ${problem}`);
    else logger.warn({ attempt, retry_in_ms: delay }, `registration not complete: ${problem}`);
    options.onPending?.(attempt, delay);
    if (!(await sleep(delay, options.signal))) throw new RegistrationError("registration interrupted");
  }
  throw new RegistrationError("registration did not complete");
}
