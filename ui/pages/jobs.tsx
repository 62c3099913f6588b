import type { JobOverview, knownTasks, listRecentRuns, QueuedJob } from "../../modules/jobs/service";
import { Badge, PageHead, PostButton, Time } from "../components";
import { Layout, type PageContext } from "../layout";

export interface JobsPageProps {
  overview: JobOverview;
  tasks: ReturnType<typeof knownTasks>;
  queue: QueuedJob[];
  runs: Awaited<ReturnType<typeof listRecentRuns>>;
  canRun: boolean;
}

function RunStatus({ status }: { status: string }) {
  const tone = status === "succeeded" ? "ok" : status === "failed" ? "danger" : "info";
  return <Badge tone={tone} label={status} />;
}

function queueState(job: QueuedJob) {
  if (job.lockedAt) return <Badge tone="info" label="running" />;
  if (job.attempts >= job.maxAttempts) return <Badge tone="danger" label="failed" />;
  if (job.attempts > 0) return <Badge tone="warn" label="retrying" />;
  return <Badge label="queued" />;
}

export function JobsActivity({ props }: { props: JobsPageProps }) {
  const { overview } = props;
  return (
    <div
      id="jobs-activity"
      class="stack"
      hx-get="/jobs?fragment=activity"
      hx-trigger="every 5s"
      hx-swap="outerHTML"
    >
      <div class="grid stats">
        <div class="card stat">
          <div class="label">Queued</div>
          <div class="value">{overview.queued}</div>
        </div>
        <div class="card stat">
          <div class="label">Running</div>
          <div class="value">{overview.running}</div>
        </div>
        <div class="card stat">
          <div class="label">Succeeded, 24 h</div>
          <div class="value">{overview.succeeded24h}</div>
        </div>
        <div class="card stat">
          <div class="label">Failed, 24 h</div>
          <div class="value">{overview.failed24h}</div>
          <div class="hint">{overview.failed} given up in the queue</div>
        </div>
      </div>
      <section class="card">
        <div class="card-head">
          <h2>In the queue</h2>
        </div>
        {props.queue.length === 0 ? (
          <p class="muted">Nothing waiting: every job has run.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Job</th>
                  <th>Task</th>
                  <th>State</th>
                  <th>Run at</th>
                  <th class="num">Attempts</th>
                  <th>Last error</th>
                </tr>
              </thead>
              <tbody>
                {props.queue.map((job) => (
                  <tr>
                    <td class="mono" safe>
                      {job.id}
                    </td>
                    <td safe>{job.taskIdentifier}</td>
                    <td>{queueState(job)}</td>
                    <td>
                      <Time value={job.runAt} />
                    </td>
                    <td class="num" safe>
                      {`${job.attempts} / ${job.maxAttempts}`}
                    </td>
                    <td class="muted" safe>
                      {job.lastError?.slice(0, 200) ?? ""}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section class="card">
        <div class="card-head">
          <h2>Recent runs</h2>
        </div>
        {props.runs.length === 0 ? (
          <p class="muted">No job has run yet.</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Task</th>
                  <th>Status</th>
                  <th>Started</th>
                  <th class="num">Duration</th>
                  <th class="num">Attempt</th>
                  <th>Worker</th>
                  <th>Error</th>
                </tr>
              </thead>
              <tbody>
                {props.runs.map((run) => (
                  <tr>
                    <td safe>{run.taskIdentifier}</td>
                    <td>
                      <RunStatus status={run.status} />
                    </td>
                    <td>
                      <Time value={run.startedAt} />
                    </td>
                    <td class="num" safe>
                      {run.durationMs === null ? "—" : `${run.durationMs} ms`}
                    </td>
                    <td class="num">{run.attempt}</td>
                    <td class="mono muted" safe>
                      {run.workerId ?? ""}
                    </td>
                    <td class="muted" safe>
                      {run.error?.slice(0, 200) ?? ""}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}

export function JobsPage({ ctx, props }: { ctx: PageContext; props: JobsPageProps }) {
  return (
    <Layout ctx={ctx} title="Jobs">
      <PageHead
        title="Jobs"
        subtitle="Durable background work: schedules, the queue and recent runs. Refreshes every 5 seconds."
      />
      <JobsActivity props={props} />
      <section class="card">
        <div class="card-head">
          <h2>Tasks</h2>
        </div>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Task</th>
                <th>What it does</th>
                <th>Schedule (UTC)</th>
                {props.canRun ? (
                  <th>
                    <span class="visually-hidden">Actions</span>
                  </th>
                ) : (
                  ""
                )}
              </tr>
            </thead>
            <tbody>
              {props.tasks.map((task) => (
                <tr>
                  <td class="mono" safe>
                    {task.identifier}
                  </td>
                  <td safe>{task.description}</td>
                  <td>{task.schedule ? `${task.schedule.label} (${task.schedule.cron})` : "on demand"}</td>
                  {props.canRun ? (
                    <td>
                      <PostButton
                        action="/jobs/run"
                        csrfToken={ctx.csrfToken}
                        label="Run now"
                        fields={{ task: task.identifier }}
                      />
                    </td>
                  ) : (
                    ""
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </Layout>
  );
}
