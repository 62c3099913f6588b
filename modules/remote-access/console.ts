import type { Sql } from "postgres";
import { getDevice } from "../devices/service";
import type { Principal } from "../platform/access";
import { latestTelemetry } from "../telemetry/service";
import type { RemoteAccessPanelProps } from "./device-tab";
import { activeLeases, CONSOLE_LEASE_SECONDS, type Lease, openLease, remoteAccessClosure } from "./service";
import { tunnelState } from "./tunnel/state";

/** What the console panel shows; opens this operator's console lease when `open` and allowed. */
export async function panelState(
  sql: Sql,
  input: {
    deviceId: string;
    principal: Principal;
    open: boolean;
    leaseId?: string;
    /** Open a lease even though an operator closed the device's remote access (Reopen). */
    reopen?: boolean;
    maxMinutes: number;
    onlineWindowSeconds: number;
    csrfToken: string;
  },
): Promise<RemoteAccessPanelProps | undefined> {
  const device = await getDevice(sql, input.deviceId, { onlineWindowSeconds: input.onlineWindowSeconds });
  if (!device) return undefined;
  const { principal } = input;
  const canOperate = principal.kind === "session" && principal.role !== "viewer";
  let leases = await activeLeases(sql, device.id);
  const mine = (lease: Lease) =>
    principal.kind === "session" &&
    lease.ownerKind === "console" &&
    lease.operatorId === principal.operatorId &&
    (input.leaseId === undefined || lease.id === input.leaseId);
  let myLease = leases.find(mine);
  // After Close remote access, the closing operator's page visits open nothing until they reopen it.
  // Another operator opening the device page opens it as the contract says (a visit requests remote
  // access); pages that were open before the Close never reopen it themselves (their stream opens nothing).
  let closure = leases.length === 0 ? await remoteAccessClosure(sql, device.id) : undefined;
  const closedByMe = closure !== undefined && principal.kind === "session" && closure.by === principal.email;
  const mayOpen = input.open && canOperate && device.online && device.approvalStatus === "approved";
  if (!myLease && mayOpen && (!closedByMe || input.reopen)) {
    myLease = await openLease(sql, {
      deviceId: device.id,
      ownerKind: "console",
      operatorId: principal.kind === "session" ? principal.operatorId : undefined,
      holder: principal.kind === "session" ? principal.email : "",
      ttlSeconds: CONSOLE_LEASE_SECONDS,
      maxMinutes: input.maxMinutes,
      onlineWindowSeconds: input.onlineWindowSeconds,
    });
    leases = [myLease, ...leases];
    closure = undefined;
  }
  const tunnel = await tunnelState(sql, device.id);
  const status = (await latestTelemetry(sql, device.id))?.payload.connection_status as
    | { error?: unknown }
    | undefined;
  return {
    deviceId: device.id,
    online: device.online,
    canOperate,
    myLease,
    leases,
    closure,
    tunnel,
    agentError: typeof status?.error === "string" && status.error !== "" ? status.error : undefined,
    csrfToken: input.csrfToken,
  };
}
