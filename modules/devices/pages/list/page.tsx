// The device list page and the fragment htmx swaps (filters, chips, rows, bulk bar, pager): one
// renderer for both, so they never differ. One row of the table: row.tsx.
import { assetUrl } from "../../../../ui/assets";
import { CsrfField, EmptyState, PageHead } from "../../../../ui/components";
import { Checkbox, Hidden } from "../../../../ui/form";
import { Layout, type PageContext } from "../../../../ui/layout";
import { QueryErrorNote, QuerySyntax } from "../../../../ui/query-help";
import { type Chip, FilterChips, LiveStatus } from "../../../../ui/widgets";
import type { ConsoleSort } from "../../queries";
import type { DeviceSummary } from "../../rows";
import { DEFAULT_SORT, type DeviceQuery, defaultOrder, devicesUrl, FILTER_KEYS } from "./query";
import { BulkTagControls, SaveViewForm } from "./query-box";
import { DeviceRow } from "./row";

const FILTER_LABELS: Record<(typeof FILTER_KEYS)[number] | "search" | "q" | "view", string> = {
  q: "Query",
  view: "View",
  approval_status: "Approval",
  connectivity_status: "Connectivity",
  product: "Product",
  search: "Search",
};

export interface Matching {
  count: number;
  more: boolean;
}

/** "10,000+ matching of 1,000,000", or "57 matching" when that is the whole fleet. */
export function matchingText(matching: Matching, fleetTotal: number): string {
  const count = `${matching.count.toLocaleString("en-US")}${matching.more ? "+" : ""} matching`;
  return matching.more || matching.count !== fleetTotal
    ? `${count} of ${fleetTotal.toLocaleString("en-US")}`
    : count;
}

/**
 * The matching count, or where to fetch it: `/devices/matching` with the same query, loaded by htmx as
 * soon as the page is in (without script, a link to it).
 */
function MatchingCount({ props }: { props: DevicesPageProps }) {
  if (props.matching) return <span safe>{matchingText(props.matching, props.fleetTotal)}</span>;
  const url = devicesUrl(props.query, {}, "/devices/matching");
  return (
    <span id="device-matching" hx-get={url} hx-trigger="load" hx-swap="outerHTML">
      <a href={url}>count matching devices</a>
    </span>
  );
}

export interface DevicesPageProps {
  query: DeviceQuery;
  devices: DeviceSummary[];
  /** Devices matching the filters, counted up to a cap (`more`: at least that many); undefined: counted
   * by a request of its own once the page is shown (MatchingCount), so a large fleet's count never holds
   * up its first page. */
  matching: Matching | undefined;
  fleetTotal: number;
  next: string | undefined;
  prev: string | undefined;
  canManage: boolean;
  pageSize: number;
  /** The saved view applied (`?view=`), by name. */
  viewName: string | undefined;
  /** Why `?q=` or `?view=` could not be applied (position: where in the query). */
  queryError?: { message: string; position: number | undefined };
}

function SortHeader({
  query,
  column,
  label,
  class: className,
}: {
  query: DeviceQuery;
  column: ConsoleSort;
  label: string;
  class?: string;
}) {
  const active = query.sort === column;
  const nextOrder = active ? (query.order === "asc" ? "desc" : "asc") : defaultOrder(column);
  return (
    <th
      class={className}
      aria-sort={active ? (query.order === "asc" ? "ascending" : "descending") : undefined}
    >
      <a class="sort-link" href={devicesUrl(query, { sort: column, order: nextOrder })}>
        <span safe>{label}</span>
        {active ? <span aria-hidden="true">{query.order === "asc" ? " ▲" : " ▼"}</span> : ""}
      </a>
    </th>
  );
}

function QuickFilters({ query }: { query: DeviceQuery }) {
  /** A link that filters on one status (and keeps the other). */
  const only = (key: "approval_status" | "connectivity_status", value: string) => ({
    label: value[0]!.toUpperCase() + value.slice(1),
    changes: { [key]: value },
    active: query[key] === value,
  });
  const links: {
    label: string;
    changes: Partial<Record<keyof DeviceQuery, string | undefined>>;
    active: boolean;
  }[] = [
    {
      label: "All",
      changes: { approval_status: undefined, connectivity_status: undefined },
      active: !query.approval_status && !query.connectivity_status,
    },
    ...["pending", "approved", "rejected"].map((value) => only("approval_status", value)),
    ...["online", "offline"].map((value) => only("connectivity_status", value)),
  ];
  return (
    <nav class="segmented" aria-label="Quick filters">
      {links.map((link) => (
        <a href={devicesUrl(query, link.changes)} aria-current={link.active ? "true" : undefined} safe>
          {link.label}
        </a>
      ))}
    </nav>
  );
}

function chipsOf(query: DeviceQuery): Chip[] {
  const chips: Chip[] = [];
  for (const key of ["view", "q", "search", ...FILTER_KEYS] as const) {
    const value = query[key];
    if (value)
      chips.push({ label: FILTER_LABELS[key], value, removeHref: devicesUrl(query, { [key]: undefined }) });
  }
  return chips;
}

/** The part htmx swaps on search, paging and live updates. */
export function DeviceResults({ ctx, props }: { ctx: PageContext; props: DevicesPageProps }) {
  const { query, devices, canManage } = props;
  const chips = chipsOf(query).map((chip) =>
    chip.label === "View" && props.viewName ? { ...chip, value: props.viewName } : chip,
  );
  const clearHref = devicesUrl(query, {
    search: undefined,
    q: undefined,
    view: undefined,
    approval_status: undefined,
    connectivity_status: undefined,
    product: undefined,
  });
  const returnTo = devicesUrl(query, { after: query.after, before: query.before });
  return (
    <div id="device-results" class="stack" data-return-to={returnTo}>
      {props.queryError ? <QueryErrorNote query={query.q ?? ""} error={props.queryError} /> : ""}
      <FilterChips chips={chips} clearHref={clearHref} />
      {canManage && query.q && !props.queryError ? (
        <SaveViewForm csrfToken={ctx.csrfToken} query={query.q} />
      ) : (
        ""
      )}
      {props.fleetTotal === 0 ? (
        <EmptyState
          icon="devices"
          title="No devices have registered"
          text="Install the Outpost agent on a Linux device and run `outpost-agent register`, or pre-register a device by MAC. New devices wait here for approval."
        >
          {canManage ? (
            <a class="btn primary" href="/devices/new">
              Add device
            </a>
          ) : (
            ""
          )}
        </EmptyState>
      ) : devices.length === 0 && props.queryError ? (
        ""
      ) : devices.length === 0 ? (
        <EmptyState
          icon="devices"
          title="No devices match"
          text="Nothing matches this search and these filters."
        >
          <a class="btn" href={clearHref}>
            Clear all filters
          </a>
        </EmptyState>
      ) : (
        <>
          {canManage ? (
            <form
              id="bulk-form"
              class="bulk-bar"
              method="post"
              action="/devices/bulk"
              data-bulk-bar
              data-confirm="Change the selected devices? Only devices still pending approval change."
            >
              <CsrfField token={ctx.csrfToken} />
              <Hidden name="return_to" value={returnTo} />
              <label class="select-all">
                <Checkbox data={{ "select-all": true }} ariaLabel="Select all devices on this page" />
                <span data-selected-count>Select all on this page</span>
              </label>
              <div class="actions">
                <button
                  class="btn small primary"
                  type="submit"
                  name="action"
                  value="approve"
                  data-bulk-action
                >
                  Approve selected
                </button>
                <button class="btn small danger" type="submit" name="action" value="reject" data-bulk-action>
                  Reject selected
                </button>
              </div>
              <BulkTagControls />
            </form>
          ) : (
            ""
          )}
          <div class="table-wrap">
            <table class="devices-table">
              <caption class="visually-hidden">Devices</caption>
              <thead>
                <tr>
                  {canManage ? (
                    <th class="select-cell">
                      <span class="visually-hidden">Select</span>
                    </th>
                  ) : (
                    ""
                  )}
                  <SortHeader query={query} column="name" label="Name" />
                  <SortHeader query={query} column="mac_address" label="MAC address" />
                  <SortHeader query={query} column="product_name" label="Product" />
                  <th class="hide-sm">IPv4</th>
                  <SortHeader query={query} column="approval_status" label="Approval" />
                  <th class="hide-sm">Connectivity</th>
                  <SortHeader query={query} column="last_seen_at" label="Last seen" />
                </tr>
              </thead>
              <tbody>
                {devices.map((device) => (
                  <DeviceRow device={device} query={query} canManage={canManage} />
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Pages">
            <span class="muted small">
              {devices.length} shown · <MatchingCount props={props} />
            </span>
            <span class="actions">
              {/* Every device this search, these filters and sort match (not just this page). */}
              <a
                class="btn small"
                href={devicesUrl(query, {}, "/devices.csv")}
                id="export-devices-csv"
                download=""
              >
                Export CSV
              </a>
              {canManage && (query.q || query.view) ? (
                <a
                  class="btn small"
                  id="rollout-matching"
                  href={`/rollouts/new?${new URLSearchParams({ ...(query.q ? { q: query.q } : {}), ...(query.view ? { view: query.view } : {}) })}`}
                >
                  Roll out to all matching…
                </a>
              ) : (
                ""
              )}
              {props.prev ? (
                <>
                  <a class="btn small" href={devicesUrl(query)}>
                    First
                  </a>
                  <a class="btn small" rel="prev" href={devicesUrl(query, { before: props.prev })}>
                    ← Previous
                  </a>
                </>
              ) : (
                ""
              )}
              {props.next ? (
                <a class="btn small" rel="next" href={devicesUrl(query, { after: props.next })}>
                  Next →
                </a>
              ) : (
                ""
              )}
            </span>
          </nav>
        </>
      )}
    </div>
  );
}

export function DevicesPage({ ctx, props }: { ctx: PageContext; props: DevicesPageProps }) {
  const { query } = props;
  return (
    <Layout ctx={ctx} title="Devices">
      <script src={assetUrl("console.js")} defer></script>
      <script src={assetUrl("fleet.js")} defer></script>
      <div data-live-page="devices" hidden></div>
      <PageHead title="Devices" subtitle="Search, filter and approve the devices of your fleet.">
        <LiveStatus />
        {props.canManage ? (
          <a class="btn primary" href="/devices/new">
            Add device
          </a>
        ) : (
          ""
        )}
      </PageHead>
      <div class="card toolbar">
        <form
          method="get"
          action="/devices"
          class="search-form"
          hx-get="/devices"
          hx-target="#device-results"
          hx-select="#device-results"
          hx-swap="outerHTML"
          hx-push-url="true"
          hx-trigger="input changed delay:300ms from:input[name=q], submit"
        >
          <label class="visually-hidden" for="device-search">
            Search devices
          </label>
          {/* A plain input: the kit's TextInput has no `list` (the datalist of suggestions). */}
          <input
            id="device-search"
            type="search"
            name="q"
            value={query.q ?? ""}
            placeholder='tag:site=berlin status:online "pump"'
            autocomplete="off"
            spellcheck="false"
            maxlength="1000"
            list="query-suggestions"
            aria-describedby="query-help"
            data-query-box
          />
          <datalist id="query-suggestions"></datalist>
          {(["search", "view", ...FILTER_KEYS] as const).map((key) =>
            query[key] ? <Hidden name={key} value={query[key]} /> : "",
          )}
          {query.sort !== DEFAULT_SORT ? <Hidden name="sort" value={query.sort} /> : ""}
          {query.order !== defaultOrder(query.sort) ? <Hidden name="order" value={query.order} /> : ""}
          <button class="btn" type="submit">
            Search
          </button>
        </form>
        <QuickFilters query={query} />
        <a class="btn small" href="/views">
          Saved views
        </a>
      </div>
      <QuerySyntax />
      <div class="live-notice" data-live-notice hidden role="status">
        The list changed.{" "}
        <button type="button" class="btn small" data-live-refresh>
          Refresh
        </button>
      </div>
      <DeviceResults ctx={ctx} props={props} />
    </Layout>
  );
}
