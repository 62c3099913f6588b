/**
 * What the devices feature offers other features and its routes (one import for callers); the
 * logic lives in the files named below, one concern each.
 */
export { type DeviceCondition, deviceConditions } from "./conditions";
export { apiKeyOf, authenticateDevice } from "./device-auth";
export { FleetCounter, type FleetCounts } from "./fleet-counts";
// The devices side of the heartbeat statement (composed in modules/heartbeat/service.ts).
export {
  acceptHeartbeats,
  type HeartbeatRateLimit,
  heartbeatInput,
  refuseHeartbeat,
  type StaleSchema,
  storeAnnouncedSchemas,
} from "./heartbeat-sql";
export {
  activeFilters,
  DEVICE_SORTS,
  type DeviceFilters,
  type DeviceList,
  type DeviceListOptions,
  type DeviceSort,
  deviceNames,
  getDevice,
  listDevices,
  matchingDevices,
  normaliseDeviceFilters,
} from "./listing";
export {
  approveDevices,
  type DeviceUpdate,
  deleteDevice,
  editableFields,
  rejectDevices,
  resolveIdentityConflict,
  revokeDevice,
  setApprovalStatus,
  setDeviceProfile,
  setRemoteAccessRequested,
  updateDevice,
} from "./management";
// Where a form posted from the device list may send the operator back to (same-site /devices paths only).
export { devicesReturn } from "./pages/list/query";
export { type PreRegistration, preRegisterDevice, reissueClaimToken } from "./pre-authorisation";
export { recentDevices } from "./queries";
export {
  consumeRateLimit,
  DEVICE_API_RATE_WINDOW_SECONDS,
  pruneRateCounters,
  rateLimited,
} from "./rate-limits";
export { parseRegistration, registerDevice } from "./registration";
export { devicesOfProduct } from "./report-scope";
export {
  APPROVAL_STATUSES,
  type ApprovalStatus,
  type Device,
  type DeviceSummary,
} from "./rows";
export { pruneSightings, recordSightings } from "./sightings";
export { type DeviceBrief, deviceSummaries, findDeviceIds, silentApprovedDevices } from "./summaries";
export {
  listSchemaProducts,
  productSchemas,
  pruneTelemetrySchemas,
  type SchemaProduct,
} from "./telemetry-schemas";
export {
  type AnnouncedSchema,
  announcedSchema,
  DEVICE_NAME_MAX,
  DEVICE_NOTES_MAX,
  TELEMETRY_LIMITS,
} from "./validation";
export { DeviceWaits, wakeDevice } from "./wake";
