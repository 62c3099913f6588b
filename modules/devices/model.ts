import type { Device } from "./service";

/** A device on the wire (snake_case, ISO 8601 UTC timestamps). */
export function deviceJson(device: Device, options: { schema?: boolean } = {}) {
  return {
    id: device.id,
    mac_address: device.macAddress,
    product_name: device.productName,
    approval_status: device.approvalStatus,
    ipv4_address: device.ipv4Address,
    metadata: device.metadata,
    ...(options.schema === false ? {} : { schema: device.schema }),
    schema_version: device.schemaVersion,
    last_seen_at: device.lastSeenAt?.toISOString() ?? null,
    online: device.online,
    remote_access_requested: device.remoteAccessRequested,
    approval_changed_at: device.approvalChangedAt?.toISOString() ?? null,
    created_at: device.createdAt.toISOString(),
    updated_at: device.updatedAt.toISOString(),
  };
}

export type DeviceJson = ReturnType<typeof deviceJson>;
