import { EmptyState, PageHead } from "../../../ui/components";
import { SelectField, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { RUN_STATUSES } from "../schema";
import { type E2EPageData, pageUrl } from "./common";
import { FlakyJourneys } from "./health";
import { E2EDetail } from "./run-detail";
import { E2ERunsTable } from "./runs-table";

export function E2EPage({ ctx, data }: { ctx: PageContext; data: E2EPageData }) {
  const { filters } = data;
  return (
    <Layout ctx={ctx} title="E2E runs">
      <PageHead
        title="E2E runs"
        subtitle="Test runs created through the E2E API. The list refreshes every 5 seconds."
      >
        {/* Every run these filters, search and sort match (not just this page). */}
        <a
          class="btn"
          href={pageUrl(filters, { page: undefined }, "", "/e2e.csv")}
          id="export-runs-csv"
          download=""
        >
          Export CSV
        </a>
      </PageHead>
      <form class="card inline-form filters" method="get" action="/e2e">
        <SelectField
          prompt="All"
          name="status"
          label="Status"
          value={filters.status}
          options={[...RUN_STATUSES]}
        />
        <SelectField prompt="All" name="suite" label="Suite" value={filters.suite} options={data.suites} />
        <SelectField
          prompt="All"
          name="environment"
          label="Environment"
          value={filters.environment}
          options={data.environments}
        />
        <SelectField
          prompt="All"
          name="trigger"
          label="Trigger"
          value={filters.trigger}
          options={["manual", "ci"]}
        />
        <TextField
          type="search"
          name="q"
          label="Search"
          value={filters.q ?? ""}
          maxLength={200}
          placeholder="run id, suite, runner, journey…"
        />
        <button class="btn primary" type="submit">
          Apply
        </button>
        {filters.status || filters.suite || filters.environment || filters.trigger || filters.q ? (
          <a class="btn" href="/e2e">
            Clear
          </a>
        ) : (
          ""
        )}
      </form>
      <div class="stack">
        {data.detail ? <E2EDetail data={data} /> : ""}
        <FlakyJourneys
          health={data.health}
          href={(h) => {
            const latest = h.history[0]!.run_id;
            return `${pageUrl(filters, { run: latest, history: h.journey_id })}#journey-history`;
          }}
        />
        <E2ERunsTable data={data} csrfToken={ctx.csrfToken} />
      </div>
    </Layout>
  );
}

export function E2EDisabledPage({ ctx }: { ctx: PageContext }) {
  return (
    <Layout ctx={ctx} title="E2E runs">
      <PageHead title="E2E runs" />
      <EmptyState
        icon="e2e"
        title="E2E runs are turned off"
        text="This server does not accept E2E runs. Set `E2E_ENABLED=true` and `E2E_CONFIG` to the E2E configuration file (docs/e2e.md), then restart Outpost."
      />
    </Layout>
  );
}
