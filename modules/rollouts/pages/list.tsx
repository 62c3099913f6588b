// The rollouts page (`/rollouts`): every rollout, newest first, with its progress.
import { EmptyState, PageHead, Time } from "../../../ui/components";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import { describeAction } from "../actions";
import type { RolloutJson } from "../model";
import { StatusBadge } from "./progress";

export interface RolloutsPageProps {
  rollouts: RolloutJson[];
  nextCursor: string | null;
  canOperate: boolean;
}

export function RolloutsPage({ ctx, props }: { ctx: PageContext; props: RolloutsPageProps }) {
  return (
    <Layout ctx={ctx} title="Rollouts">
      <PageHead
        title="Rollouts"
        subtitle="Actions on many devices, in waves, with a canary and a failure threshold."
      >
        {props.canOperate ? (
          <a class="btn" href="/devices">
            Choose devices…
          </a>
        ) : (
          ""
        )}
      </PageHead>
      {props.rollouts.length === 0 ? (
        <EmptyState
          icon="devices"
          title="No rollouts yet"
          text="Select devices, or search the device list, then choose Roll out… to act on them in waves."
        />
      ) : (
        <Card title="Rollouts">
          <DataTable
            id="rollouts-table"
            rows={props.rollouts}
            empty="No rollouts."
            stackOnPhone
            rowAttributes={(r) => ({ "data-rollout-id": r.id })}
            columns={[
              {
                header: "Name",
                render: (r) => (
                  <a href={`/rollouts/${r.id}`} safe>
                    {r.name}
                  </a>
                ),
              },
              { header: "Action", class: "hide-sm", text: (r) => describeAction(r.action) },
              { header: "Status", render: (r) => <StatusBadge rollout={r} /> },
              {
                header: "Progress",
                text: (r) =>
                  `${r.counts.succeeded + r.counts.failed + r.counts.skipped} / ${r.total} done · ${r.counts.failed} failed`,
              },
              { header: "Started by", class: "hide-sm", text: (r) => r.created_by },
              { header: "Started", class: "hide-sm", render: (r) => <Time value={new Date(r.created_at)} /> },
            ]}
          />
          {props.nextCursor ? (
            <nav class="pager" aria-label="Pages">
              <a
                class="btn small"
                rel="next"
                href={`/rollouts?after=${encodeURIComponent(props.nextCursor)}`}
              >
                Next →
              </a>
            </nav>
          ) : (
            ""
          )}
        </Card>
      )}
    </Layout>
  );
}
