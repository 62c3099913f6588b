import { Badge, CsrfField, EmptyState, PageHead } from "../../../ui/components";
import { Hidden, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import type { SchemaOption } from "../../builder/service";
import type { Report } from "../model";

export interface ReportListProps {
  reports: Report[];
  /** Each report's scope in words, by report id (modules/fleet describeScope). */
  scopes: Map<string, string>;
  name: string;
  fields: string[];
  dir: "asc" | "desc";
  /** Field options of every schema, for the "contains all these fields" picker. */
  options: SchemaOption[];
  canManage: boolean;
  notice?: string | undefined;
}

function listHref(p: { name: string; fields: string[]; dir: string }, change: Partial<typeof p> = {}) {
  const next = { ...p, ...change };
  const params = new URLSearchParams();
  if (next.name) params.set("name", next.name);
  for (const f of next.fields) params.append("field", f);
  params.set("sort_dir", next.dir);
  return `/reports?${params}`;
}

/** Custom Reports (reference §6.3): name filter, field chips (all must match), sort by name. */
export function ReportListPage({ ctx, props }: { ctx: PageContext; props: ReportListProps }) {
  const filtered = props.name !== "" || props.fields.length > 0;
  const arrow = props.dir === "asc" ? "↑" : "↓";
  return (
    <Layout ctx={ctx} title="Custom Reports">
      <PageHead
        title="Custom Reports"
        subtitle="Telemetry across the fleet: raw rows, per-device figures or time buckets, charted and exported as CSV."
      >
        {props.canManage ? (
          <a class="btn primary" href="/reports/new">
            Create Report
          </a>
        ) : (
          ""
        )}
      </PageHead>
      {props.notice ? (
        <div class="flash info" role="status" safe>
          {props.notice}
        </div>
      ) : (
        ""
      )}
      <form method="get" action="/reports" class="card toolbar filters" id="report-filters">
        <TextField
          type="search"
          name="name"
          label="Filter by report name"
          value={props.name}
          placeholder="Fuzzy match, case-insensitive"
          maxLength={120}
        />
        {props.fields.map((f) => (
          <Hidden name="field" value={f} />
        ))}
        <label>
          <span>Filter by included schema fields</span>
          <select name="field">
            <option value="">Add a field…</option>
            {props.options
              .filter((o) => !props.fields.includes(o.key.toLowerCase()))
              .map((o) => (
                <option value={o.key.toLowerCase()} safe>{`${o.label} (${o.key})`}</option>
              ))}
          </select>
        </label>
        <Hidden name="sort_dir" value={props.dir} />
        <div class="actions">
          <button class="btn" type="submit">
            Apply
          </button>
          <a class="btn" href={`/reports?reset=1&sort_dir=${props.dir}`}>
            Clear
          </a>
        </div>
      </form>
      {props.fields.length ? (
        <nav class="chips" aria-label="Reports must contain these fields">
          <span class="muted small">Contains all of:</span>
          {props.fields.map((f) => (
            <a
              class="chip"
              href={listHref(props, { fields: props.fields.filter((x) => x !== f) })}
              title={`Remove ${f}`}
            >
              <span safe>{f}</span>
              <span aria-hidden="true" class="chip-x">
                ×
              </span>
              <span class="visually-hidden">(remove)</span>
            </a>
          ))}
        </nav>
      ) : (
        ""
      )}
      {props.reports.length === 0 && !filtered ? (
        <EmptyState
          icon="reports"
          title="No reports yet"
          text="No reports found. Create one to get started."
        />
      ) : (
        <Card title={`${props.reports.length} report${props.reports.length === 1 ? "" : "s"}`}>
          <DataTable
            id="report-table"
            rows={props.reports}
            empty="No reports found. Create one to get started."
            stackOnPhone
            columns={[
              {
                header: `Name ${arrow}`,
                render: (r) => (
                  <span>
                    {props.canManage ? (
                      <>
                        <a
                          class="icon-link"
                          href={`/reports/${r.id}/delete`}
                          title="Delete"
                          aria-label={`Delete ${r.name}`}
                        >
                          🗑
                        </a>{" "}
                        <a
                          class="icon-link"
                          href={`/reports/${r.id}/edit`}
                          title="Edit"
                          aria-label={`Edit ${r.name}`}
                        >
                          ✎
                        </a>{" "}
                      </>
                    ) : (
                      ""
                    )}
                    <a href={`/reports/${r.id}`} safe>
                      {r.name}
                    </a>
                  </span>
                ),
              },
              {
                header: "Schema Fields",
                render: (r) => (
                  <span class="chips">
                    {r.config.fields.map((f) => (
                      <Badge label={f.alias || f.path} />
                    ))}
                  </span>
                ),
              },
              {
                header: "Product",
                text: (r) => r.config.schema_id ?? "all products",
              },
              {
                header: "Scope",
                text: (r) => props.scopes.get(r.id),
              },
              {
                header: "Updated",
                class: "muted",
                text: (r) => r.updatedAt.toISOString().slice(0, 16).replace("T", " "),
              },
            ]}
          />
          <p class="small">
            <a
              href={listHref(props, { dir: props.dir === "asc" ? "desc" : "asc" })}
              class="sort-link"
              id="sort-name"
            >
              {props.dir === "asc" ? "Sort by name, Z to A" : "Sort by name, A to Z"}
            </a>
          </p>
        </Card>
      )}
    </Layout>
  );
}

/** The delete confirmation (the reference's "Delete Report" modal as a page). */
export function DeleteReportPage({ ctx, report }: { ctx: PageContext; report: Report }) {
  return (
    <Layout ctx={ctx} title="Delete Report">
      <PageHead title="Delete Report" />
      <section class="card">
        <p>
          Are you sure you want to delete <b safe>{report.name}</b>? This action cannot be undone.
        </p>
        <form method="post" action={`/reports/${report.id}/delete`} class="actions">
          <CsrfField token={ctx.csrfToken} />
          <a class="btn" href="/reports">
            Cancel
          </a>
          <button class="btn danger" type="submit">
            Delete
          </button>
        </form>
      </section>
    </Layout>
  );
}
