// Over 400 lines on purpose: the three alert lists (active, history, rules) share filters, bulk actions
// and row rendering.
import { Badge, CsrfField, PageHead, PostButton, Time } from "../../../ui/components";
import { Checkbox, Hidden, SelectField, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import { describeScope } from "../../fleet/service";
import type { Alert } from "../lifecycle";
import type { AlertFilters, AlertListItem, AlertSort } from "../listing";
import { ALERT_TYPES, SEVERITIES } from "../model";
import { type AlertRule, ruleScope } from "../rules";

export type AlertTab = "active" | "history" | "rules";

export interface AlertsPageProps {
  tab: AlertTab;
  canManage: boolean;
  filters: AlertFilters & { sort?: AlertSort };
  items: AlertListItem[];
  nextCursor: string | undefined;
  rules: { rule: AlertRule; deprecated: boolean; conflict: string | null }[];
  ruleFilter: string;
  ruleSort: string;
}

const TABS: { id: AlertTab; label: string }[] = [
  { id: "active", label: "Active" },
  { id: "history", label: "History" },
  { id: "rules", label: "Rules" },
];

export function severityTone(severity: string) {
  return severity === "critical" ? "danger" : severity === "warning" ? "warn" : "info";
}

export function StatusBadge({ alert }: { alert: Pick<Alert, "status"> }) {
  const tone = alert.status === "active" ? "danger" : alert.status === "acknowledged" ? "warn" : "ok";
  return <Badge tone={tone} label={alert.status} />;
}

/** The list URL with these query values (undefined or "" drops one). */
export function alertsUrl(params: Record<string, string | number | undefined>, base = "/alerts"): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `${base}?${text}` : base;
}

function filterParams(props: AlertsPageProps) {
  const f = props.filters;
  return {
    tab: props.tab,
    severity: f.severity,
    type: f.type,
    device: f.device,
    rule: f.ruleId,
    sort: f.sort,
  };
}

function AlertFiltersForm({ props }: { props: AlertsPageProps }) {
  const f = props.filters;
  return (
    <form method="get" action="/alerts" class="inline-form filters" id="alert-filters">
      <Hidden name="tab" value={props.tab} />
      <SelectField
        labelStyle="flex: 0 1 150px"
        prompt="Any"
        name="severity"
        label="Severity"
        value={f.severity}
        options={SEVERITIES}
      />
      <SelectField
        labelStyle="flex: 0 1 150px"
        prompt="Any"
        name="type"
        label="Type"
        value={f.type}
        options={ALERT_TYPES}
      />
      {props.tab === "history" ? (
        <SelectField
          labelStyle="flex: 0 1 150px"
          prompt="Any"
          name="status"
          label="Status"
          value={f.status === "open" ? undefined : f.status}
          options={["active", "acknowledged", "resolved"]}
        />
      ) : (
        ""
      )}
      <TextField
        name="device"
        label="Device"
        labelStyle="flex: 1 1 180px"
        value={f.device ?? ""}
        maxLength={100}
        placeholder="MAC, product or id"
      />
      <SelectField
        name="rule"
        label="Rule"
        labelStyle="flex: 0 1 200px"
        prompt="Any"
        value={f.ruleId === undefined ? undefined : String(f.ruleId)}
        options={props.rules.map(({ rule }) => ({ value: String(rule.id), label: rule.name }))}
      />
      <SelectField
        labelStyle="flex: 0 1 150px"
        prompt="Any"
        name="sort"
        label="Sort"
        value={f.sort}
        options={["newest", "oldest", "severity"]}
      />
      <div class="actions">
        <button class="btn" type="submit">
          Apply
        </button>
        <a class="btn" href={`/alerts?tab=${props.tab}`}>
          Clear
        </a>
      </div>
    </form>
  );
}

function AlertTable({ props }: { props: AlertsPageProps }) {
  return (
    <DataTable
      id="alert-table"
      rows={props.items}
      stackOnPhone
      empty={
        props.tab === "active" ? "No open alerts. Everything is quiet." : "No alerts match these filters."
      }
      columns={[
        ...(props.canManage
          ? [
              {
                header: "Select",
                hiddenHeader: true,
                render: (i: AlertListItem) => (
                  <Checkbox name="ids" value={i.alert.id} form="bulk-form" ariaLabel="Select alert" />
                ),
              },
            ]
          : []),
        {
          header: "Severity",
          render: (i) => <Badge tone={severityTone(i.alert.severity)} label={i.alert.severity} />,
        },
        {
          header: "Type",
          render: (i) => (
            <Badge tone={i.alert.type === "offline" ? "danger" : undefined} label={i.alert.type} />
          ),
        },
        {
          header: "Device",
          render: (i) => (
            <a href={`/devices/${i.alert.deviceId}`} class="mono" safe>
              {i.device?.name ?? i.device?.macAddress ?? "-"}
            </a>
          ),
        },
        {
          header: "Message",
          render: (i) => (
            <a href={`/alerts/${i.alert.id}`} safe>
              {i.alert.message}
            </a>
          ),
        },
        {
          header: "Rule",
          class: "hide-sm",
          text: (i) => i.ruleName ?? (i.alert.ruleId ? `#${i.alert.ruleId}` : "—"),
        },
        { header: "Triggered", render: (i) => <Time value={i.alert.triggeredAt} /> },
        { header: "Status", render: (i) => <StatusBadge alert={i.alert} /> },
      ]}
    />
  );
}

function BulkBar({ ctx }: { ctx: PageContext }) {
  return (
    <form method="post" id="bulk-form" class="inline-form" action="/alerts/bulk">
      <CsrfField token={ctx.csrfToken} />
      <TextField
        name="note"
        label="Note (optional)"
        labelStyle="flex: 1 1 240px"
        value=""
        maxLength={1000}
        placeholder="What is being done about it"
      />
      <div class="actions">
        <button class="btn" type="submit" name="action" value="acknowledge">
          Acknowledge selected
        </button>
        <button
          class="btn danger"
          type="submit"
          name="action"
          value="resolve"
          data-confirm="Resolve the selected alerts?"
        >
          Resolve selected
        </button>
      </div>
    </form>
  );
}

function RulesTab({ ctx, props }: { ctx: PageContext; props: AlertsPageProps }) {
  const sortLink = (key: string, label: string) => (
    <a
      href={alertsUrl({
        tab: "rules",
        filter: props.ruleFilter,
        sort: props.ruleSort === key ? `-${key}` : key,
      })}
      safe
    >
      {label}
    </a>
  );
  return (
    <Card
      title="Alert rules"
      actions={
        props.canManage ? (
          <a class="btn primary" href="/alerts/new?tab=rules">
            Add Rule
          </a>
        ) : (
          ""
        )
      }
    >
      <form method="get" action="/alerts" class="inline-form">
        <Hidden name="tab" value="rules" />
        <TextField
          name="filter"
          label="Filter rules"
          labelStyle="flex: 1 1 260px"
          value={props.ruleFilter}
          maxLength={200}
          placeholder="Filter by rule name, schema product, field, operator, or threshold"
        />
        <div class="actions">
          <button class="btn" type="submit">
            Filter
          </button>
          <a class="btn" href="/alerts?tab=rules">
            Clear
          </a>
        </div>
      </form>
      <p class="muted small">
        Sort by {sortLink("name", "rule")}, {sortLink("product_name", "product")},{" "}
        {sortLink("condition_field", "condition")}, {sortLink("operator", "operator")} or{" "}
        {sortLink("severity", "severity")}.
      </p>
      <DataTable
        id="rule-table"
        rows={props.rules}
        stackOnPhone
        empty="No rules defined yet."
        columns={[
          {
            header: "Rule",
            render: ({ rule, deprecated, conflict }) => (
              <span>
                <strong safe>{rule.name}</strong>{" "}
                <span class="muted" safe>
                  {rule.productName}
                </span>{" "}
                {deprecated ? (
                  <span title="No approved device of this product declares this rule's field any more; it cannot be edited.">
                    <Badge tone="warn" label="Deprecated" />
                  </span>
                ) : (
                  ""
                )}
                {conflict ? (
                  <span title={conflict}>
                    <Badge tone="warn" label="Type conflict" />
                  </span>
                ) : (
                  ""
                )}
                {rule.enabled ? "" : <Badge label="disabled" />}
              </span>
            ),
          },
          {
            header: "Condition",
            render: ({ rule }) => (
              <span>
                <code safe>{rule.conditionField}</code>{" "}
                <span safe>{`${rule.operator} ${rule.thresholdValue}`}</span>
                <span class="muted small" safe>
                  {`${rule.forMinutes > 0 ? ` for ${rule.forMinutes} min` : ""}${rule.resolveAfterMinutes === null ? " · manual resolve" : ` · auto-resolve after ${rule.resolveAfterMinutes} min`}${rule.clearThreshold ? ` (clear at ${rule.clearThreshold})` : ""}`}
                </span>
              </span>
            ),
          },
          { header: "Operator", text: ({ rule }) => rule.operator },
          {
            header: "Severity",
            render: ({ rule }) => <Badge tone={severityTone(rule.severity)} label={rule.severity} />,
          },
          {
            header: "Scope",
            class: "hide-sm",
            text: ({ rule }) => describeScope(ruleScope(rule), rule.scopeViewName),
          },
          {
            header: "Actions",
            hiddenHeader: true,
            class: "row-actions",
            render: ({ rule, deprecated }) =>
              props.canManage ? (
                <span class="actions">
                  {deprecated ? (
                    ""
                  ) : (
                    <a class="btn small" href={`/alerts/${rule.id}/edit?tab=rules`}>
                      Edit
                    </a>
                  )}
                  <PostButton
                    action={`/alerts/rules/${rule.id}/delete`}
                    csrfToken={ctx.csrfToken}
                    label="Delete"
                    tone="danger"
                    confirm={`Are you sure you want to delete this rule for ${rule.productName}? This action cannot be undone.`}
                  />
                </span>
              ) : (
                ""
              ),
          },
        ]}
      />
    </Card>
  );
}

export function AlertsPage({ ctx, props }: { ctx: PageContext; props: AlertsPageProps }) {
  const params = filterParams(props);
  return (
    <Layout ctx={ctx} title="Alerts">
      <div data-live-page="alerts" hidden></div>
      <PageHead title="Alerts" subtitle="System notifications and device alerts">
        {props.tab !== "rules" ? (
          <a
            class="btn"
            href={alertsUrl(
              { ...params, tab: undefined, status: props.tab === "active" ? "open" : props.filters.status },
              "/alerts/export.csv",
            )}
          >
            Export CSV
          </a>
        ) : (
          ""
        )}
      </PageHead>
      <nav class="tabs" aria-label="Alert sections">
        {TABS.map((tab) => (
          <a href={`/alerts?tab=${tab.id}`} aria-current={tab.id === props.tab ? "page" : undefined} safe>
            {tab.label}
          </a>
        ))}
      </nav>
      {props.tab === "rules" ? (
        <RulesTab ctx={ctx} props={props} />
      ) : (
        <Card title={props.tab === "active" ? "Active and acknowledged" : "All alerts"}>
          <AlertFiltersForm props={props} />
          {props.canManage && props.items.length > 0 ? <BulkBar ctx={ctx} /> : ""}
          <AlertTable props={props} />
          {props.nextCursor ? (
            <nav class="pager" aria-label="Pages">
              <a
                class="btn small"
                href={alertsUrl({
                  ...params,
                  status: props.tab === "history" ? props.filters.status : undefined,
                  cursor: props.nextCursor,
                })}
              >
                Next page
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
