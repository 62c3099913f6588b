// The "Tags & notes" tab of the device page (listed in modules/console/device-detail/tabs.ts): operators'
// tags (editable), the agent's labels (read-only: the device declares them), display name and notes.

import { LABEL_TEXT_MAX } from "../../shared/labels";
import { Badge, CsrfField, PostButton } from "../../ui/components";
import { TextAreaField, TextField } from "../../ui/form";
import { Card } from "../../ui/table";
import { DEVICE_NAME_MAX, DEVICE_NOTES_MAX } from "../devices/service";
import type { Sql } from "../platform/database";
import { deviceTagsOf, type Tag } from "./tags";

export interface FleetTabData {
  tags: Tag[];
}

export async function loadFleetTab(input: { sql: Sql; device: { id: string } }) {
  return { fleet: { tags: await deviceTagsOf(input.sql, input.device.id) } };
}

const tagText = (key: string, value: string) => (value === "" ? key : `${key}=${value}`);

export function FleetPanel(props: {
  device: {
    id: string;
    name: string;
    displayName: string | null;
    notes: string | null;
    labels: Record<string, string>;
  };
  data: FleetTabData;
  canOperate: boolean;
  csrfToken: string;
}) {
  const { device, data } = props;
  const labels = Object.entries(device.labels).sort(([a], [b]) => (a < b ? -1 : 1));
  const base = `/devices/${device.id}`;
  return (
    <div class="stack" id="fleet-panel">
      <Card title="Tags">
        {data.tags.length === 0 ? (
          <p class="muted">No tags yet.</p>
        ) : (
          <ul class="tag-list" id="operator-tags">
            {data.tags.map((tag) => (
              <li data-tag={tag.key}>
                <a
                  class="tag"
                  href={`/devices?q=${encodeURIComponent(`tag:${tag.key}=${JSON.stringify(tag.value)}`)}`}
                >
                  <span safe>{tagText(tag.key, tag.value)}</span>
                </a>
                {props.canOperate ? (
                  <PostButton
                    action={`${base}/tags/remove`}
                    csrfToken={props.csrfToken}
                    label="Remove"
                    fields={{ key: tag.key }}
                  />
                ) : (
                  ""
                )}
              </li>
            ))}
          </ul>
        )}
        {props.canOperate ? (
          <form class="inline-form" method="post" action={`${base}/tags`} id="add-tag-form">
            <CsrfField token={props.csrfToken} />
            <label>
              <span>Add a tag</span>
              <input
                type="text"
                name="tag"
                required
                placeholder="site=berlin"
                maxlength={String(LABEL_TEXT_MAX)}
              />
            </label>
            <button class="btn small primary" type="submit">
              Add tag
            </button>
          </form>
        ) : (
          ""
        )}
      </Card>
      <Card title="Labels from the device">
        <p class="muted small">
          Declared by the device's agent (<code>labels:</code> in its configuration); change them there.
        </p>
        {labels.length === 0 ? (
          <p class="muted">The agent declares no labels.</p>
        ) : (
          <ul class="tag-list" id="agent-labels">
            {labels.map(([key, value]) => (
              <li>
                <Badge tone="info" label={tagText(key, value)} />
              </li>
            ))}
          </ul>
        )}
      </Card>
      <Card title="Name and notes">
        {props.canOperate ? (
          <form class="stack" method="post" action={`${base}/profile`} id="profile-form">
            <CsrfField token={props.csrfToken} />
            <TextField
              name="display_name"
              label="Display name"
              value={device.displayName ?? ""}
              maxLength={DEVICE_NAME_MAX}
              placeholder={device.displayName ? "" : device.name}
              help="Empty: the name the device reports, else one derived from its MAC."
            />
            <TextAreaField
              name="notes"
              label="Notes"
              value={device.notes ?? ""}
              rows={4}
              maxLength={DEVICE_NOTES_MAX}
            />
            <div>
              <button class="btn small primary" type="submit">
                Save
              </button>
            </div>
          </form>
        ) : (
          <>
            <p safe>{device.displayName ?? device.name}</p>
            <p class="pre-wrap" safe>
              {device.notes ?? "No notes."}
            </p>
          </>
        )}
      </Card>
    </div>
  );
}
