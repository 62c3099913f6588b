// Pieces the terminal pages share: the sessions table and the end-reason badge.
import { Badge, Time } from "../../../ui/components";
import { type Column, DataTable } from "../../../ui/table";
import { endReasonText } from "../model";
import { type SessionSummary, sessionSeconds } from "../sessions";

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined) return "—";
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h > 0 ? `${h}h ${m}m` : m > 0 ? `${m}m ${s}s` : `${s}s`;
}

export function EndReason({ session }: { session: SessionSummary }) {
  if (!session.endedAt) return <Badge tone="ok" label={session.connectedAt ? "Running" : "Starting"} />;
  const failed = session.endReason === "failed" || session.endReason === "lost";
  const tone = failed
    ? "danger"
    : session.endReason === "exit" || session.endReason === "ended"
      ? undefined
      : "warn";
  return <Badge tone={tone} label={endReasonText(session.endReason, session.exitStatus)} />;
}

export function SessionsTable(props: { sessions: SessionSummary[]; showDevice: boolean; empty: string }) {
  const columns: Column<SessionSummary>[] = [
    {
      header: "Started",
      render: (s) => (
        <a href={`/terminal/sessions/${s.id}`}>
          <Time value={s.createdAt} />
        </a>
      ),
    },
    ...(props.showDevice
      ? [
          {
            header: "Device",
            render: (s: SessionSummary) => (
              <a href={`/devices/${s.deviceId}?tab=terminal`} safe>
                {s.deviceName}
              </a>
            ),
          },
        ]
      : []),
    { header: "Operator", text: (s) => s.operatorEmail },
    { header: "Ended", render: (s) => <Time value={s.endedAt} />, class: "hide-sm" },
    { header: "Duration", text: (s) => formatDuration(sessionSeconds(s)), class: "num" },
    { header: "End reason", render: (s) => <EndReason session={s} /> },
    { header: "Size", text: (s) => formatBytes(s.recordingBytes), class: "num" },
    {
      header: "Recording",
      hiddenHeader: true,
      class: "row-actions",
      render: (s) =>
        s.recordingBytes > 0 ? (
          <a class="btn small" href={`/terminal/sessions/${s.id}`}>
            Play
          </a>
        ) : (
          <span class="muted small">no recording</span>
        ),
    },
  ];
  return (
    <DataTable
      columns={columns}
      rows={props.sessions}
      empty={props.empty}
      stackOnPhone
      rowAttributes={(s) => ({ "data-session-id": s.id })}
    />
  );
}
