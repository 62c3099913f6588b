// A rollout's live progress (`/rollouts/:id`): counts per state, a progress bar, the operator's
// buttons, a CSV link and its devices page by page. The #rollout-live section is fetched anew
// (`data-refresh`, the same page of the same state) when the console's live stream says this rollout
// changed (ui/static/console.js, event `rollout`): no polling.

import { assetUrl } from "../../../ui/assets";
import { Badge, PageHead, PostButton, Time } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import { LiveStatus } from "../../../ui/widgets";
import { describeAction } from "../actions";
import { type RolloutJson, TARGET_STATES, type TargetJson, type TargetState } from "../model";

export interface ProgressProps {
  rollout: RolloutJson;
  targets: TargetJson[];
  nextCursor: string | null;
  /** The page shown (`?after=`), kept by the refresh. */
  cursor: string | undefined;
  state: TargetState | undefined;
  canOperate: boolean;
}

const STATE_TONES: Record<TargetState, "ok" | "warn" | "danger" | "info" | undefined> = {
  queued: undefined,
  delivered: "info",
  succeeded: "ok",
  failed: "danger",
  skipped: "warn",
};

export function StatusBadge({ rollout }: { rollout: RolloutJson }) {
  const label =
    rollout.status === "paused" && rollout.pause_reason === "threshold"
      ? "paused: failure threshold"
      : rollout.status;
  const tone = { running: "info", paused: "warn", completed: "ok", cancelled: undefined } as const;
  return <Badge tone={tone[rollout.status]} label={label} />;
}

function ProgressBar({ rollout }: { rollout: RolloutJson }) {
  const done = rollout.counts.succeeded + rollout.counts.failed + rollout.counts.skipped;
  const share = (n: number) => `${((n * 100) / Math.max(1, rollout.total)).toFixed(2)}%`;
  return (
    <div
      class="rollout-bar"
      role="progressbar"
      aria-valuemin="0"
      aria-valuemax={String(rollout.total)}
      aria-valuenow={String(done)}
      aria-label="Devices finished"
    >
      {(["succeeded", "failed", "skipped", "delivered"] as const).map((state) => (
        <span class={`rollout-bar-${state}`} style={`width: ${share(rollout.counts[state])}`}></span>
      ))}
    </div>
  );
}

function Controls({ ctx, rollout }: { ctx: PageContext; rollout: RolloutJson }) {
  const base = `/rollouts/${rollout.id}`;
  return (
    <div class="actions" id="rollout-controls">
      {rollout.status === "running" ? (
        <PostButton action={`${base}/pause`} csrfToken={ctx.csrfToken} label="Pause" />
      ) : (
        ""
      )}
      {rollout.status === "paused" ? (
        <PostButton action={`${base}/resume`} csrfToken={ctx.csrfToken} label="Resume" tone="primary" />
      ) : (
        ""
      )}
      {rollout.status === "running" || rollout.status === "paused" ? (
        <PostButton
          action={`${base}/cancel`}
          csrfToken={ctx.csrfToken}
          label="Cancel"
          tone="danger"
          confirm="Cancel this rollout? Devices not reached yet are skipped; queued commands are withdrawn."
        />
      ) : (
        ""
      )}
    </div>
  );
}

function pageUrl(rollout: RolloutJson, state: TargetState | undefined, after?: string) {
  const params = new URLSearchParams();
  if (state) params.set("state", state);
  if (after) params.set("after", after);
  const query = params.toString();
  return `/rollouts/${rollout.id}${query ? `?${query}` : ""}`;
}

/** The part a live event refreshes: counts, bar, buttons and the device page. */
export function RolloutLive({ ctx, props }: { ctx: PageContext; props: ProgressProps }) {
  const { rollout } = props;
  const refresh = pageUrl(rollout, props.state, props.cursor).replace(
    `/rollouts/${rollout.id}`,
    `/rollouts/${rollout.id}/progress`,
  );
  return (
    <section id="rollout-live" data-status={rollout.status} data-refresh={refresh}>
      <Card title="Progress" actions={<StatusBadge rollout={rollout} />}>
        <ProgressBar rollout={rollout} />
        <dl class="facts rollout-counts">
          {TARGET_STATES.map((state) => (
            <>
              <dt>{state}</dt>
              <dd data-count={state}>
                <a href={pageUrl(rollout, state)} safe>
                  {rollout.counts[state].toLocaleString("en-US")}
                </a>
              </dd>
            </>
          ))}
          <dt>wave</dt>
          <dd>{rollout.canary_size > 0 ? `${rollout.current_wave} of 2` : "1 of 1"}</dd>
        </dl>
        {rollout.pause_reason === "threshold" ? (
          <p class="flash error" role="alert" safe>
            {`More than ${rollout.failure_threshold}% of wave ${rollout.current_wave}'s devices failed: the rollout paused. Look at the failures, then resume (this wave will not pause again) or cancel.`}
          </p>
        ) : (
          ""
        )}
        {props.canOperate ? <Controls ctx={ctx} rollout={rollout} /> : ""}
      </Card>
      <Card
        title={props.state ? `Devices: ${props.state}` : "Devices"}
        actions={
          <a
            class="btn small"
            href={`/api/v1/rollouts/${rollout.id}/results.csv`}
            download=""
            id="rollout-csv"
          >
            CSV
          </a>
        }
      >
        <DataTable
          id="rollout-targets"
          rows={props.targets}
          empty="No devices in this state."
          stackOnPhone
          rowAttributes={(t) => ({ "data-device-id": t.device_id, "data-state": t.state })}
          columns={[
            {
              header: "Device",
              render: (t) => (
                <a href={`/devices/${t.device_id}`} safe>
                  {t.device_name}
                </a>
              ),
            },
            { header: "Wave", class: "hide-sm", text: (t) => String(t.wave) },
            { header: "State", render: (t) => <Badge tone={STATE_TONES[t.state]} label={t.state} /> },
            {
              header: "Finished",
              class: "hide-sm",
              render: (t) => <Time value={t.finished_at ? new Date(t.finished_at) : null} />,
            },
            {
              header: "Result",
              class: "mono",
              text: (t) =>
                t.error ??
                (t.output === null || t.output === undefined ? "" : JSON.stringify(t.output).slice(0, 200)),
            },
          ]}
        />
        <nav class="pager" aria-label="Pages">
          <span class="actions">
            {props.cursor ? (
              <a class="btn small" href={pageUrl(rollout, props.state)}>
                First
              </a>
            ) : (
              ""
            )}
            {props.state ? (
              <a class="btn small" href={pageUrl(rollout, undefined)}>
                Every state
              </a>
            ) : (
              ""
            )}
            {props.nextCursor ? (
              <a class="btn small" rel="next" href={pageUrl(rollout, props.state, props.nextCursor)}>
                Next →
              </a>
            ) : (
              ""
            )}
          </span>
        </nav>
      </Card>
    </section>
  );
}

export function RolloutPage({ ctx, props }: { ctx: PageContext; props: ProgressProps }) {
  const { rollout } = props;
  const target =
    rollout.target.kind === "ids"
      ? "selected devices"
      : [rollout.target.view ? `view ${rollout.target.view}` : "", rollout.target.query ?? ""]
          .filter(Boolean)
          .join(" · ");
  return (
    <Layout ctx={ctx} title={`Rollout ${rollout.name}`}>
      <script src={assetUrl("console.js")} defer></script>
      {rollout.finished_at === null ? (
        <div data-live-page="rollout" data-rollout-id={rollout.id} hidden></div>
      ) : (
        ""
      )}
      <PageHead
        title={rollout.name}
        subtitle={`${describeAction(rollout.action)} on ${rollout.total.toLocaleString("en-US")} devices`}
      >
        {rollout.finished_at === null ? <LiveStatus /> : ""}
        <a class="btn" href="/rollouts">
          Rollouts
        </a>
      </PageHead>
      <Card title="Settings">
        <dl class="facts">
          <dt>Devices</dt>
          <dd safe>{`${target} (fixed when it started)`}</dd>
          <dt>Canary</dt>
          <dd>
            {rollout.canary_size > 0 ? `${rollout.canary_size} devices, then the rest` : "none: one wave"}
          </dd>
          <dt>Concurrency</dt>
          <dd safe>{`${rollout.concurrency} at once`}</dd>
          <dt>Failure threshold</dt>
          <dd safe>{`${rollout.failure_threshold}% of a wave`}</dd>
          <dt>Deadline</dt>
          <dd>
            <Time value={new Date(rollout.deadline)} />
          </dd>
          <dt>Started by</dt>
          <dd safe>{rollout.created_by}</dd>
          <dt>Started</dt>
          <dd>
            <Time value={new Date(rollout.created_at)} />
          </dd>
        </dl>
      </Card>
      <RolloutLive ctx={ctx} props={props} />
    </Layout>
  );
}
