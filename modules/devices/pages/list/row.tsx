import { Time } from "../../../../ui/components";
import { Checkbox } from "../../../../ui/form";
import { ApprovalBadge, OnlineBadge } from "../../../../ui/widgets";
import type { DeviceSummary } from "../../rows";
import { type DeviceQuery, devicesUrl } from "./query";

/** One device in the list: its links filter the list by the value clicked. */
export function DeviceRow({
  device,
  query,
  canManage,
}: {
  device: DeviceSummary;
  query: DeviceQuery;
  canManage: boolean;
}) {
  return (
    <tr data-device-id={device.id}>
      {canManage ? (
        <td class="select-cell">
          <Checkbox
            name="ids"
            value={device.id}
            form="bulk-form"
            data={{ "select-row": true }}
            ariaLabel={`Select ${device.name}`}
          />
        </td>
      ) : (
        ""
      )}
      <td class="c-name">
        <a href={`/devices/${device.id}`} class="device-link" safe>
          {device.name}
        </a>
      </td>
      <td class="mono c-mac" safe>
        {device.macAddress}
      </td>
      <td class="c-product">
        {device.productName ? (
          <a
            class="cell-filter"
            href={devicesUrl(query, { product: device.productName })}
            title="Show only this product"
            safe
          >
            {device.productName}
          </a>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
      <td class="mono hide-sm" safe>
        {device.ipv4Address ?? "—"}
      </td>
      <td class="c-approval">
        <a
          class="cell-filter"
          href={devicesUrl(query, { approval_status: device.approvalStatus })}
          title="Show only this status"
        >
          <ApprovalBadge status={device.approvalStatus} />
        </a>
        {device.identityConflictAt ? (
          <span
            class="badge danger"
            title="Another agent claims this MAC address: decide on the device's page"
          >
            identity conflict
          </span>
        ) : (
          ""
        )}
      </td>
      <td class="c-online">
        <a
          class="cell-filter"
          href={devicesUrl(query, { connectivity_status: device.online ? "online" : "offline" })}
          title="Show only this connectivity"
        >
          <OnlineBadge
            online={device.online}
            lastSeenAt={device.lastSeenAt}
            pending={device.approvalStatus === "pending"}
          />
        </a>
      </td>
      <td class="c-seen">
        {device.approvalStatus === "pending" && !device.lastSeenAt ? (
          <span class="muted small" title="last registration attempt">
            asked <Time value={device.lastRegistrationAt} />
          </span>
        ) : (
          <Time value={device.lastSeenAt} />
        )}
      </td>
    </tr>
  );
}
