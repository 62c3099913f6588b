import { assetUrl } from "../../../ui/assets";
import { Badge, CsrfField, PageHead, PostButton, Time } from "../../../ui/components";
import { Hidden, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import type { SessionSummary } from "../sessions";
import { sessionSeconds } from "../sessions";
import { EndReason, formatBytes, formatDuration, SessionsTable } from "./parts";

export function SessionsPage(props: {
  ctx: PageContext;
  sessions: SessionSummary[];
  next: string | undefined;
  filter: { device?: string; operator?: string };
  recordsInput: boolean;
  retentionDays: number;
}) {
  const isAdmin = props.ctx.principal?.role === "admin";
  const query = new URLSearchParams();
  if (props.filter.device) query.set("device", props.filter.device);
  if (props.filter.operator) query.set("operator", props.filter.operator);
  return (
    <Layout ctx={props.ctx} title="Terminal sessions">
      <PageHead
        title="Terminal sessions"
        subtitle={`Browser terminal sessions of the whole fleet, recorded and kept ${props.retentionDays} days.`}
      />
      <Card title="Sessions">
        <form method="get" action="/terminal/sessions" class="inline-form filters">
          {props.filter.device ? <Hidden name="device" value={props.filter.device} /> : ""}
          <TextField
            type="search"
            name="operator"
            label="Operator"
            value={props.filter.operator ?? ""}
            maxLength={254}
            placeholder="email contains…"
          />
          <button class="btn small" type="submit">
            Filter
          </button>
          {props.filter.device || props.filter.operator ? (
            <a class="btn small" href="/terminal/sessions">
              Clear
            </a>
          ) : (
            ""
          )}
        </form>
        <SessionsTable sessions={props.sessions} showDevice empty="No terminal sessions match." />
        {props.next ? (
          <p>
            <a
              class="btn small"
              href={`/terminal/sessions?${new URLSearchParams([...query, ["before", props.next]])}`}
            >
              Older sessions
            </a>
          </p>
        ) : (
          ""
        )}
      </Card>
      <Card title="Recording">
        <p>
          Output is always recorded (asciicast v2, compressed). Keyboard input is{" "}
          {props.recordsInput ? <Badge tone="warn" label="recorded" /> : <Badge label="not recorded" />}
          {props.recordsInput
            ? ": passwords typed at a prompt end up in recordings."
            : ": turn it on only if your auditors need keystrokes; typed passwords would be recorded."}
        </p>
        {isAdmin ? (
          <form method="post" action="/terminal/settings" class="inline-form">
            <CsrfField token={props.ctx.csrfToken} />
            <Hidden name="record_input" value={props.recordsInput ? "off" : "on"} />
            <button class="btn small" type="submit">
              {props.recordsInput ? "Stop recording input" : "Record input in new sessions"}
            </button>
          </form>
        ) : (
          ""
        )}
      </Card>
    </Layout>
  );
}

export function PlaybackPage(props: { ctx: PageContext; session: SessionSummary; canEnd: boolean }) {
  const s = props.session;
  return (
    <Layout ctx={props.ctx} title="Terminal session">
      <PageHead title="Terminal session" subtitle={`${s.operatorEmail} on ${s.deviceName}`}>
        <a class="btn small" href={`/terminal/sessions/${s.id}/recording.cast`} download="">
          Download .cast
        </a>
      </PageHead>
      <Card title="Session">
        <dl class="facts">
          <dt>Device</dt>
          <dd>
            <a href={`/devices/${s.deviceId}?tab=terminal`} safe>
              {s.deviceName}
            </a>
          </dd>
          <dt>Operator</dt>
          <dd safe>{s.operatorEmail}</dd>
          <dt>Started</dt>
          <dd>
            <Time value={s.createdAt} />
          </dd>
          <dt>Ended</dt>
          <dd>
            <Time value={s.endedAt} />
          </dd>
          <dt>Duration</dt>
          <dd safe>{formatDuration(sessionSeconds(s))}</dd>
          <dt>End reason</dt>
          <dd>
            <EndReason session={s} />
          </dd>
          <dt>Recording</dt>
          <dd safe>
            {`${formatBytes(s.recordingBytes)} (${formatBytes(s.storedBytes)} stored, ${s.recordsInput ? "with keyboard input" : "output only"})`}
          </dd>
        </dl>
        {props.canEnd && !s.endedAt ? (
          <PostButton
            action={`/terminal/sessions/${s.id}/end`}
            csrfToken={props.ctx.csrfToken}
            label="End this session"
            tone="danger"
            confirm="End this terminal session now?"
          />
        ) : (
          ""
        )}
      </Card>
      <Card title="Playback">
        {s.recordingBytes > 0 ? (
          <div id="player" class="terminal" data-src={`/terminal/sessions/${s.id}/recording.cast`}>
            <div class="terminal-bar">
              <div class="terminal-actions">
                <button type="button" class="btn small primary" data-player-play>
                  Play
                </button>
                <label class="small">
                  <span class="visually-hidden">Speed</span>
                  <select data-player-speed>
                    <option value="0.5">0.5×</option>
                    <option value="1" selected>
                      1×
                    </option>
                    <option value="2">2×</option>
                    <option value="4">4×</option>
                    <option value="8">8×</option>
                  </select>
                </label>
              </div>
              <span class="terminal-status mono" data-player-time>
                loading…
              </span>
            </div>
            <input
              type="range"
              min="0"
              max="1000"
              value="0"
              class="player-seek"
              data-player-seek
              aria-label="Position"
            />
            <div class="terminal-screen" data-player-screen></div>
            <link rel="stylesheet" href={assetUrl("xterm.css")} />
            <script src={assetUrl("xterm.js")} defer></script>
            <script src={assetUrl("terminal-player.js")} defer></script>
          </div>
        ) : (
          <p class="muted">This session has no recording (it never connected).</p>
        )}
      </Card>
    </Layout>
  );
}
