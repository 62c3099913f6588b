import { EmptyState, PageHead, Time } from "../../ui/components";
import { TextField } from "../../ui/form";
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

const MAX_VALUE = 120;

/** One value as a reader sees it: text as is, lists joined, `none` for null, objects as short JSON. */
function shown(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = "none";
  else if (typeof value === "string") text = value === "" ? '""' : value;
  else if (Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null))
    // A list (the ids of a bulk action) is shown whole: an auditor needs every item, and the cell wraps.
    return value.length === 0 ? "none" : value.map(shown).join(", ");
  else if (typeof value === "object") text = JSON.stringify(value);
  else text = String(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

/**
 * The details as lines: `field: value`, and each changed field as `field: before → after` (from
 * `details.changes`), so an approval or a role change reads as what it did.
 */
export function detailLines(details: Record<string, unknown>): string[] {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(details)) {
    if (key === "changes" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      const changes = Object.entries(value as Record<string, { from?: unknown; to?: unknown }>);
      if (changes.length === 0) lines.push("no field changed");
      for (const [field, change] of changes)
        lines.push(`${field}: ${shown(change?.from)} → ${shown(change?.to)}`);
    } else lines.push(`${key}: ${shown(value)}`);
  }
  return lines;
}

function Details({ details }: { details: Record<string, unknown> }) {
  const lines = detailLines(details);
  if (lines.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="audit-details">
      {lines.map((line) => (
        <li safe>{line}</li>
      ))}
    </ul>
  );
}

const COLUMNS: Column<AuditEvent>[] = [
  { header: "When", render: (event) => <Time value={event.at} /> },
  { header: "Who", class: "mono wrap", text: (event) => event.actor },
  { header: "Action", class: "mono", render: (event) => <ActionName name={event.action} /> },
  { header: "Target", class: "mono small wrap", text: (event) => event.target ?? "—" },
  { header: "Outcome", render: (event) => <Outcome status={event.status} /> },
  { header: "From", class: "mono small hide-sm wrap", text: (event) => event.address ?? "—" },
  { header: "Details", class: "small details", render: (event) => <Details details={event.details} /> },
];

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
        <TextField
          name="actor"
          label="Who"
          value={filters.actor ?? ""}
          maxLength={320}
          placeholder="email, token name or runner"
        />
        <TextField
          name="action"
          label="Action"
          value={filters.action ?? ""}
          maxLength={320}
          placeholder="e.g. device.approve"
        />
        <TextField
          name="target"
          label="Target"
          value={filters.target ?? ""}
          maxLength={320}
          placeholder="e.g. device:<id>"
        />
        <TextField type="datetime-local" name="from" label="From (UTC)" value={dateValue(filters.from)} />
        <TextField type="datetime-local" name="to" label="To (UTC)" value={dateValue(filters.to)} />
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
