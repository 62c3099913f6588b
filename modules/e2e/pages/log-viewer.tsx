import { Badge } from "../../../ui/components";
import type { RunRow } from "../model";
import { type E2EPageData, StatusBadge } from "./common";

export function LogViewer({
  log,
}: {
  log: NonNullable<Extract<E2EPageData["detail"], { run: RunRow }>["log"]>;
}) {
  if (log.error) {
    return (
      <p class="muted" role="status" safe>
        {log.error}
      </p>
    );
  }
  const steps = log.lines.filter((line) => line.kind === "step");
  const width = Math.max(2, String(steps.length).length);
  let stepNumber = 0;
  return (
    <div class="log-viewer">
      <ol class="log-steps">
        {log.lines.map((line) => {
          if (line.kind === "invalid") {
            return (
              <li class="log-line invalid">
                <Badge tone="warn" label="unreadable" /> <span safe>{line.problem ?? ""}</span>
                <pre safe>{line.raw.slice(0, 500)}</pre>
              </li>
            );
          }
          const e = line.entry!;
          const str = (key: string) => (e[key] === undefined || e[key] === null ? "" : String(e[key]));
          if (line.kind === "journey") {
            return (
              <li class="log-line journey">
                <strong safe>{`JOURNEY ${str("event").toUpperCase()}`}</strong>{" "}
                <StatusBadge status={str("status") || "running"} />{" "}
                <span class="muted small" safe>
                  {[
                    str("timestamp"),
                    e.duration_ms !== undefined ? `${str("duration_ms")} ms` : "",
                    e.steps_run !== undefined
                      ? `${str("steps_passed")}/${str("steps_run")} steps passed`
                      : "",
                    str("failure_step") ? `failed at ${str("failure_step")} (${str("failure_code")})` : "",
                  ]
                    .filter(Boolean)
                    .join(" · ")}
                </span>
              </li>
            );
          }
          stepNumber += 1;
          const label = `STEP ${String(stepNumber).padStart(width, "0")}`;
          return (
            <li class={`log-line step ${str("status")}`}>
              <div>
                <strong safe>{label}</strong>{" "}
                <span class="mono" safe>
                  {str("step_id") || str("action")}
                </span>{" "}
                <StatusBadge status={str("status")} />
                <span class="muted small" safe>
                  {[
                    `${str("action")} → ${str("expect")}`,
                    e.http_status !== undefined ? `HTTP ${str("http_status")}` : "",
                    e.duration_ms !== undefined ? `${str("duration_ms")} ms` : "",
                  ]
                    .filter(Boolean)
                    .join(" · ")}
                </span>
              </div>
              {str("error_message") ? (
                <div class="log-error" safe>
                  {`${str("error_code")}: ${str("error_message")}`}
                </div>
              ) : (
                ""
              )}
              <details>
                <summary class="muted small">Raw entry</summary>
                <pre safe>{JSON.stringify(e, null, 2).slice(0, 4000)}</pre>
              </details>
            </li>
          );
        })}
      </ol>
      {log.truncated ? <p class="muted small">Only the first 200 000 characters are shown.</p> : ""}
    </div>
  );
}
