import { Badge, PageHead, PostButton, Time } from "../../ui/components";
import { Layout, type PageContext } from "../../ui/layout";
import { Card, DataTable } from "../../ui/table";
import type { JobOverview, JobRun, KnownTask, QueuedJob } from "./service";

export interface JobsPageProps {
  overview: JobOverview;
  tasks: KnownTask[];
  queue: QueuedJob[];
  runs: JobRun[];
  canRun: boolean;
}

function RunStatus({ status }: { status: string }) {
  const tone = status === "succeeded" ? "ok" : status === "failed" ? "danger" : "info";
  return <Badge tone={tone} label={status} />;
}

function QueueState({ job }: { job: QueuedJob }) {
  if (job.lockedAt) return <Badge tone="info" label="running" />;
  if (job.attempts >= job.maxAttempts) return <Badge tone="danger" label="failed" />;
  if (job.attempts > 0) return <Badge tone="warn" label="retrying" />;
  return <Badge label="queued" />;
}

function Stat(props: { label: string; value: number; hint?: string }) {
  return (
    <div class="card stat">
      <div class="label" safe>
        {props.label}
      </div>
      <div class="value">{props.value}</div>
      {props.hint ? (
        <div class="hint" safe>
          {props.hint}
        </div>
      ) : (
        ""
      )}
    </div>
  );
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
        <Stat label="Queued" value={overview.queued} />
        <Stat label="Running" value={overview.running} />
        <Stat label="Succeeded, 24 h" value={overview.succeeded24h} />
        <Stat
          label="Failed, 24 h"
          value={overview.failed24h}
          hint={`${overview.failed} given up in the queue`}
        />
      </div>
      <Card title="In the queue">
        <DataTable
          rows={props.queue}
          empty="Nothing is waiting in the queue."
          stackOnPhone
          columns={[
            { header: "Job", class: "mono", text: (job) => job.id },
            { header: "Task", text: (job) => job.taskIdentifier },
            { header: "State", render: (job) => <QueueState job={job} /> },
            { header: "Run at", render: (job) => <Time value={job.runAt} /> },
            { header: "Attempts", class: "num", text: (job) => `${job.attempts} / ${job.maxAttempts}` },
            { header: "Last error", class: "muted", text: (job) => job.lastError?.slice(0, 200) },
          ]}
        />
      </Card>
      <Card
        title="Recent runs"
        actions={
          <a class="btn small" href="/jobs/runs.csv" id="export-runs-csv">
            Export CSV
          </a>
        }
      >
        <DataTable
          rows={props.runs}
          empty="No job has run yet."
          stackOnPhone
          columns={[
            { header: "Task", text: (run) => run.taskIdentifier },
            { header: "Status", render: (run) => <RunStatus status={run.status} /> },
            { header: "Started", render: (run) => <Time value={run.startedAt} /> },
            {
              header: "Duration",
              class: "num",
              text: (run) => (run.durationMs === null ? "—" : `${run.durationMs} ms`),
            },
            { header: "Attempt", class: "num", text: (run) => run.attempt },
            { header: "Worker", class: "mono muted", text: (run) => run.workerId },
            { header: "Error", class: "muted", text: (run) => run.error?.slice(0, 200) },
          ]}
        />
      </Card>
    </div>
  );
}

function scheduleText(task: KnownTask): string {
  return task.schedule ? `${task.schedule.label} (${task.schedule.cron})` : "on demand";
}

export function JobsPage({ ctx, props }: { ctx: PageContext; props: JobsPageProps }) {
  const runColumn = {
    header: "Actions",
    hiddenHeader: true,
    class: "row-actions",
    render: (task: KnownTask) => (
      <PostButton
        action="/jobs/run"
        csrfToken={ctx.csrfToken}
        label="Run now"
        fields={{ task: task.identifier }}
      />
    ),
  };
  return (
    <Layout ctx={ctx} title="Jobs">
      <PageHead
        title="Jobs"
        subtitle="Durable background work: schedules, the queue and recent runs. Refreshes every 5 seconds."
      />
      <JobsActivity props={props} />
      <Card title="Tasks">
        <DataTable
          rows={props.tasks}
          empty="No tasks are registered."
          stackOnPhone
          columns={[
            { header: "Task", class: "mono", text: (task) => task.identifier },
            { header: "What it does", text: (task) => task.description },
            { header: "Schedule (UTC)", text: scheduleText },
            ...(props.canRun ? [runColumn] : []),
          ]}
        />
      </Card>
    </Layout>
  );
}
