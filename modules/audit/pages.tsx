import { EmptyState, PageHead, Time } from "../../ui/components";
import { Layout, type PageContext } from "../../ui/layout";
import { type Column, DataTable } from "../../ui/table";
import type { AuditEvent, AuditFilters } from "./service";

export interface AuditPageProps {
  filters: AuditFilters;
  events: AuditEvent[];
  nextCursor: string | undefined;
  /** The query string of the current filters (for the next-page link). */
  query: string;
}

const dateValue = (date: Date | undefined) => (date ? date.toISOString().slice(0, 16) : "");

function Outcome({ status }: { status: number }) {
  const tone = status < 400 ? "ok" : status === 401 || status === 403 || status === 429 ? "danger" : "warn";
  return <span class={`badge ${tone}`} safe>{`${status < 400 ? "done" : "refused"} · ${status}`}</span>;
}

/** An action name a narrow cell may break after its dots (`remote_access.` / `end`), and nowhere else. */
function ActionName({ name }: { name: string }) {
  return (
    <>
      {name.split(/(?<=\.)/).map((part, i) => (
        <>
          {i > 0 ? <wbr /> : ""}
          <span safe>{part}</span>
        </>
      ))}
    </>
  );
}

const COLUMNS: Column<AuditEvent>[] = [
  { header: "When", render: (event) => <Time value={event.at} /> },
  { header: "Who", class: "mono wrap", text: (event) => event.actor },
  { header: "Action", class: "mono", render: (event) => <ActionName name={event.action} /> },
  { header: "Target", class: "mono small wrap", text: (event) => event.target ?? "—" },
  { header: "Outcome", render: (event) => <Outcome status={event.status} /> },
  { header: "From", class: "mono small hide-sm wrap", text: (event) => event.address ?? "—" },
  { header: "Details", class: "small details", text: (event) => detailsText(event.details) },
];

/** `reason: page_left · ids: a, b`: words a cell can wrap between (JSON on one line could not). */
function detailsText(details: Record<string, unknown>): string {
  return Object.entries(details)
    .map(([key, value]) => {
      const text = Array.isArray(value)
        ? value.map((item) => (typeof item === "string" ? item : JSON.stringify(item))).join(", ")
        : typeof value === "string"
          ? value
          : JSON.stringify(value);
      return `${key}: ${text}`;
    })
    .join(" · ");
}

/** The audit log (admins): filters, newest first, keyset pages. */
export function AuditPage({ ctx, props }: { ctx: PageContext; props: AuditPageProps }) {
  const { filters } = props;
  return (
    <Layout ctx={ctx} title="Audit log">
      <PageHead
        title="Audit log"
        subtitle="Who did what: every change by operators, API tokens and CI runners, and every sign-in."
      >
        {/* Every event these filters match (not just this page). */}
        <a
          class="btn"
          href={`/audit.csv${props.query ? `?${props.query}` : ""}`}
          id="export-audit-csv"
          download=""
        >
          Export CSV
        </a>
      </PageHead>
      <form method="get" action="/audit" class="card toolbar form-grid audit-filters">
        <label>
          Who
          <input name="actor" value={filters.actor ?? ""} placeholder="email, token name or runner" />
        </label>
        <label>
          Action
          <input name="action" value={filters.action ?? ""} placeholder="e.g. device.approve" />
        </label>
        <label>
          Target
          <input name="target" value={filters.target ?? ""} placeholder="e.g. device:<id>" />
        </label>
        <label>
          From (UTC)
          <input type="datetime-local" name="from" value={dateValue(filters.from)} />
        </label>
        <label>
          To (UTC)
          <input type="datetime-local" name="to" value={dateValue(filters.to)} />
        </label>
        <div class="actions">
          <button class="btn primary" type="submit">
            Filter
          </button>
          <a class="btn" href="/audit">
            Clear
          </a>
        </div>
      </form>
      {props.events.length === 0 ? (
        <EmptyState icon="audit" title="Nothing recorded" text="No event matches these filters." />
      ) : (
        <section class="card audit-log">
          <DataTable columns={COLUMNS} rows={props.events} empty="" stackOnPhone />
          <nav class="pager" aria-label="Audit pages">
            <span />
            <span class="actions">
              {props.nextCursor ? (
                <a
                  class="btn small"
                  href={`/audit?${props.query}${props.query ? "&" : ""}cursor=${encodeURIComponent(props.nextCursor)}`}
                >
                  Older →
                </a>
              ) : (
                ""
              )}
            </span>
          </nav>
        </section>
      )}
    </Layout>
  );
}
