import { assetUrl } from "../../../ui/assets";
import { PageHead } from "../../../ui/components";
import { Hidden, TextField } from "../../../ui/form";
import { Layout, type PageContext } from "../../../ui/layout";
import { Card } from "../../../ui/table";
import { Chart, type ChartSeries } from "../../../ui/widgets";
import { BUCKETS, MODES, RANGE_PRESETS, type Report } from "../model";
import { type AppliedView, OPERATOR_LABELS, type ResultsPage, VIEW_OPERATORS, viewQuery } from "../results";
import { MODE_LABELS } from "./form";

export interface ReportDetailProps {
  report: Report;
  /** Whose telemetry it reads, in words (its scope: "View \"Berlin\"", "Whole fleet"…). */
  scope: string;
  results: ResultsPage;
  problems: string[];
  /** The view came from saved preferences (not the URL). */
  fromSaved: boolean;
  canManage: boolean;
  preferencesUnavailable: boolean;
}

const RANGE_LABELS: Record<string, string> = {
  "1h": "1 h",
  "24h": "24 h",
  "7d": "7 d",
  "30d": "30 d",
  custom: "custom",
};
const MAX_CHART_DEVICES = 8;

function href(reportId: string, view: Partial<AppliedView> & { cursor?: string }) {
  return `/reports/${reportId}?${viewQuery(view)}`;
}

/**
 * The chart of the page's rows: per device, bars of each numeric column's average (x = device
 * index, labelled); time buckets, one line per device of the first numeric field's average.
 */
function chartOf(
  results: ResultsPage,
):
  | { kind: "line" | "bars"; t: number[]; series: ChartSeries[]; categories?: string[]; title: string }
  | undefined {
  const { view, rows, columns } = results;
  const avgs = columns.filter((c) => c.type === "number" && c.key.endsWith(".avg"));
  if (rows.length === 0 || avgs.length === 0) return undefined;
  if (view.mode === "per_device") {
    const shown = rows.slice(0, 40);
    return {
      kind: "bars",
      title: `Average per device (${avgs.map((c) => c.key.slice(0, -4)).join(", ")})`,
      t: shown.map((_, i) => i),
      categories: shown.map((r) => String(r.device_id).slice(0, 8)),
      series: avgs
        .slice(0, 6)
        .map((c) => ({ label: c.key, values: shown.map((r) => (r[c.key] as number | null) ?? null) })),
    };
  }
  if (view.mode === "buckets") {
    const column = avgs[0]!.key;
    const devices = [...new Set(rows.map((r) => String(r.device_id)))].slice(0, MAX_CHART_DEVICES);
    const times = [...new Set(rows.map((r) => Date.parse(String(r.bucket)) / 1000))].sort((a, b) => a - b);
    const index = new Map(times.map((t, i) => [t, i]));
    const series = devices.map((d) => {
      const values: (number | null)[] = times.map(() => null);
      for (const r of rows)
        if (String(r.device_id) === d)
          values[index.get(Date.parse(String(r.bucket)) / 1000)!] = r[column] as number | null;
      return { label: d.slice(0, 8), values };
    });
    return {
      kind: "line",
      title: `${column} per ${view.bucket} bucket, one line per device`,
      t: times,
      series,
    };
  }
  return undefined;
}

/** Report detail (reference §6.4, plus modes, chart, CSV and paging). */
export function ReportDetailPage({ ctx, props }: { ctx: PageContext; props: ReportDetailProps }) {
  const { report, results } = props;
  const view = results.view;
  const chart = chartOf(results);
  const csv = `/reports/${report.id}.csv?${viewQuery({ ...view })}`;
  const filterColumn = view.filter?.column ?? results.columns[0]?.key ?? "";
  const operators = [...new Set(Object.values(VIEW_OPERATORS).flat())];
  // Without a filter, preselect the first operator that fits the preselected column's type.
  const columnType = results.columns.find((c) => c.key === filterColumn)?.type ?? "text";
  const operator = view.filter?.operator ?? VIEW_OPERATORS[columnType][0];
  return (
    <Layout ctx={ctx} title={report.name}>
      <link rel="stylesheet" href={assetUrl("uplot.min.css")} />
      <script src={assetUrl("uplot.min.js")} defer></script>
      <script src={assetUrl("charts.js")} defer></script>
      <PageHead
        title={report.name}
        subtitle={`${results.fields.length} column${results.fields.length === 1 ? "" : "s"} · ${report.config.schema_id ?? "all products"} · devices: ${props.scope} · ${view.range.from.slice(0, 16)}Z to ${view.range.to.slice(0, 16)}Z`}
      >
        <a class="btn" href="/reports">
          Back to List
        </a>
        {props.canManage ? (
          <a class="btn" href={`/reports/${report.id}/edit`}>
            Edit
          </a>
        ) : (
          ""
        )}
        <a class="btn primary" href={csv} id="export-csv">
          Export CSV
        </a>
      </PageHead>
      {props.preferencesUnavailable ? (
        <div class="flash info">Saved report view preferences are unavailable for this session.</div>
      ) : (
        ""
      )}
      {props.results.fieldNotices.map((notice) => (
        <div class="flash info" role="status" safe>
          {notice}
        </div>
      ))}
      {props.problems.length ? (
        <div class="flash info" role="status" id="view-problems" safe>
          {props.fromSaved
            ? `Saved report view preferences were invalid and have been reset to safe defaults. (${props.problems.join("; ")})`
            : `Some view settings were not valid and were reset: ${props.problems.join("; ")}`}
        </div>
      ) : (
        ""
      )}
      <div class="toolbar-row">
        <nav class="segmented" aria-label="Mode">
          {MODES.map((m) => (
            <a
              href={href(report.id, { ...view, mode: m, sort: null, filter: null })}
              aria-current={m === view.mode ? "true" : undefined}
              data-mode={m}
              safe
            >
              {MODE_LABELS[m]}
            </a>
          ))}
        </nav>
        {view.mode === "buckets" ? (
          <nav class="segmented" aria-label="Bucket">
            {BUCKETS.map((b) => (
              <a
                href={href(report.id, { ...view, bucket: b })}
                aria-current={b === view.bucket ? "true" : undefined}
              >
                {b}
              </a>
            ))}
          </nav>
        ) : (
          ""
        )}
        <nav class="segmented" aria-label="Time range">
          {RANGE_PRESETS.filter((r) => r !== "custom" || view.range.preset === "custom").map((r) => (
            <a
              href={href(report.id, { ...view, range: { ...view.range, preset: r } })}
              aria-current={r === view.range.preset ? "true" : undefined}
              safe
            >
              {RANGE_LABELS[r]}
            </a>
          ))}
        </nav>
      </div>
      <form method="get" action={`/reports/${report.id}`} class="card toolbar" id="filter-row">
        <Hidden name="mode" value={view.mode} />
        <Hidden name="bucket" value={view.bucket} />
        <Hidden name="range" value={view.range.preset} />
        {view.range.preset === "custom" ? (
          <>
            <Hidden name="from" value={view.range.from} />
            <Hidden name="to" value={view.range.to} />
          </>
        ) : (
          ""
        )}
        {view.sort ? (
          <>
            <Hidden name="sort_by" value={view.sort.by} />
            <Hidden name="sort_dir" value={view.sort.direction} />
          </>
        ) : (
          ""
        )}
        <label>
          <span>Column</span>
          <select name="filter_column">
            {results.columns.map((c) => (
              <option value={c.key} selected={c.key === filterColumn} safe>
                {c.key}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span>Operator</span>
          <select name="filter_operator">
            {operators.map((o) => (
              <option value={o} selected={o === operator} safe>
                {OPERATOR_LABELS[o] ?? o}
              </option>
            ))}
          </select>
        </label>
        <TextField name="filter_value" label="Value" value={view.filter?.value ?? ""} maxLength={200} />
        <div class="actions">
          <button class="btn" type="submit">
            Filter
          </button>
          <a
            class="btn"
            href={href(report.id, {
              mode: view.mode,
              bucket: view.bucket,
              range: view.range,
              sort: view.sort,
            })}
            id="clear-filter"
          >
            Clear
          </a>
        </div>
      </form>
      {chart ? (
        <Card title="Chart">
          <Chart
            id="report-chart"
            title={chart.title}
            t={chart.t}
            series={chart.series}
            kind={chart.kind}
            categories={chart.categories}
          />
        </Card>
      ) : view.mode === "raw" ? (
        <p class="muted small">Switch to Per device or Time buckets to chart the numeric columns.</p>
      ) : (
        ""
      )}
      <Card
        title={`${MODE_LABELS[view.mode]} · ${results.rows.length} row${results.rows.length === 1 ? "" : "s"} on this page`}
      >
        {results.rows.length === 0 ? (
          <p class="muted" id="report-empty">
            No data found matching report criteria.
          </p>
        ) : (
          <div class="table-wrap">
            <table id="report-table">
              <thead>
                <tr>
                  {results.columns.map((c) => {
                    const active = view.sort?.by === c.key;
                    const direction = active && view.sort?.direction === "asc" ? "desc" : "asc";
                    return (
                      <th
                        class={c.type === "number" ? "num" : undefined}
                        aria-sort={
                          active ? (view.sort?.direction === "asc" ? "ascending" : "descending") : undefined
                        }
                      >
                        <a
                          class="sort-link"
                          data-sort={c.key}
                          href={href(report.id, { ...view, sort: { by: c.key, direction } })}
                        >
                          <span safe>{c.key}</span>
                          {active ? (view.sort?.direction === "asc" ? " ↑" : " ↓") : ""}
                        </a>
                      </th>
                    );
                  })}
                </tr>
              </thead>
              <tbody>
                {results.rows.map((row) => (
                  <tr>
                    {results.columns.map((c) =>
                      c.type === "uuid" && row[c.key] ? (
                        <td class="mono">
                          <a href={`/devices/${row[c.key]}`} safe>
                            {String(row[c.key]).slice(0, 8)}
                          </a>
                        </td>
                      ) : (
                        <td class={c.type === "number" ? "num" : c.type === "time" ? "mono" : undefined} safe>
                          {formatCell(row[c.key] ?? null, c.type)}
                        </td>
                      ),
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="pager">
          {props.results.nextCursor ? (
            <a
              class="btn"
              id="next-page"
              href={href(report.id, { ...view, cursor: props.results.nextCursor })}
            >
              Next page
            </a>
          ) : (
            <span class="muted small">End of results.</span>
          )}
          <a class="small" href={href(report.id, view)}>
            First page
          </a>
        </div>
      </Card>
    </Layout>
  );
}

function formatCell(value: string | number | null, type: string): string {
  if (value === null) return "";
  if (type === "number" && typeof value === "number") return String(Math.round(value * 1000) / 1000);
  if (type === "time") return String(value).replace(/\.\d+Z$/, "Z");
  return String(value);
}
