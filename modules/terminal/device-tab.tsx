// The Terminal tab of the device page (listed in modules/console/device-detail/tabs.ts): the browser
// terminal for operators, the device's pinned SSH host key, and its recorded sessions.
import { assetUrl } from "../../ui/assets";
import { PostButton, Time } from "../../ui/components";
import { Card } from "../../ui/table";
import type { Sql } from "../platform/database";
import { type HostKeyView, hostKeyView } from "./host-keys";
import { SessionsTable } from "./pages/parts";
import { listSessions, type SessionSummary } from "./sessions";

export interface TerminalTabData {
  hostKey: HostKeyView | undefined;
  sessions: SessionSummary[];
  more: boolean;
}

const TAB_SESSIONS = 10;

export async function loadTerminalTab(input: { sql: Sql; device: { id: string } }) {
  const [hostKey, list] = await Promise.all([
    hostKeyView(input.sql, input.device.id),
    listSessions(input.sql, { deviceId: input.device.id, limit: TAB_SESSIONS }),
  ]);
  return { terminal: { hostKey, sessions: list.sessions, more: list.next !== undefined } };
}

function HostKey(props: {
  deviceId: string;
  hostKey: HostKeyView | undefined;
  isAdmin: boolean;
  csrfToken: string;
}) {
  const key = props.hostKey;
  if (!key) {
    return (
      <p class="muted small">
        SSH host key: not known yet. The agent reports it with its heartbeats; otherwise the first connection
        pins the key the device shows.
      </p>
    );
  }
  return (
    <div class="host-key">
      <p class="small">
        SSH host key <code safe>{key.fingerprint}</code>{" "}
        <span class="muted">
          (pinned <Time value={key.pinnedAt} />, <span safe>{key.pinnedBy}</span>)
        </span>
      </p>
      {key.reportedFingerprint ? (
        <div class="flash error" role="alert" data-host-key-changed>
          <p>
            The device now reports another SSH host key, <code safe>{key.reportedFingerprint}</code>.
            Terminals are refused until an admin accepts it: do so only if the device was reinstalled or its
            keys regenerated on purpose.
          </p>
          {props.isAdmin ? (
            <PostButton
              action={`/devices/${props.deviceId}/host-key/accept`}
              csrfToken={props.csrfToken}
              label="Accept the new host key"
              tone="danger"
              confirm="Trust the new SSH host key of this device?"
            />
          ) : (
            ""
          )}
        </div>
      ) : (
        ""
      )}
    </div>
  );
}

export function TerminalPanel(props: {
  deviceId: string;
  online: boolean;
  canOperate: boolean;
  isAdmin: boolean;
  csrfToken: string;
  data: TerminalTabData;
}) {
  const usable = props.canOperate && props.online;
  return (
    <>
      <Card title="Terminal">
        {!props.online ? (
          <p class="muted">The device is offline. A terminal opens when it is online again.</p>
        ) : !props.canOperate ? (
          <p class="muted">Your role can watch recorded sessions but not open terminals.</p>
        ) : (
          ""
        )}
        <HostKey
          deviceId={props.deviceId}
          hostKey={props.data.hostKey}
          isAdmin={props.isAdmin}
          csrfToken={props.csrfToken}
        />
        {usable ? (
          <div id="terminal" class="terminal" data-device-id={props.deviceId} data-csrf={props.csrfToken}>
            <div class="terminal-bar">
              <span class="terminal-status" data-terminal-status role="status">
                Not connected
              </span>
              <div class="terminal-actions">
                <button type="button" class="btn small primary" data-terminal-start>
                  Open terminal
                </button>
                <button type="button" class="btn small danger" data-terminal-end hidden>
                  End session
                </button>
                <button
                  type="button"
                  class="btn small"
                  data-terminal-copy
                  title="Copy the selection (Ctrl+Shift+C)"
                >
                  Copy
                </button>
                <button type="button" class="btn small" data-terminal-paste title="Paste (Ctrl+Shift+V)">
                  Paste
                </button>
                <button type="button" class="btn small" data-terminal-fullscreen>
                  Fullscreen
                </button>
              </div>
            </div>
            <div class="terminal-screen" data-terminal-screen></div>
            <link rel="stylesheet" href={assetUrl("xterm.css")} />
            <script src={assetUrl("xterm.js")} defer></script>
            <script src={assetUrl("xterm-fit.js")} defer></script>
            <script src={assetUrl("terminal.js")} defer></script>
          </div>
        ) : (
          ""
        )}
      </Card>
      <Card
        id="terminal-sessions"
        title="Sessions on this device"
        actions={
          props.data.more ? (
            <a class="btn small" href={`/terminal/sessions?device=${props.deviceId}`}>
              All sessions
            </a>
          ) : undefined
        }
      >
        <SessionsTable sessions={props.data.sessions} showDevice={false} empty="No terminal sessions yet." />
      </Card>
    </>
  );
}
