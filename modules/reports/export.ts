import { csvResponse } from "../platform/csv";
import type { Sql } from "../platform/database";
import type { ReportOptionsCache } from "./definitions";
import type { Report, ResultView } from "./model";
import { reportBatches, resolveView } from "./results";

/**
 * Every row of a report's view as a streamed CSV download: the header is the table's columns, times
 * are ISO 8601 UTC, and rows are read a keyset batch at a time as the client downloads. The view is
 * checked before the response starts, so a bad parameter is still a typed 400.
 */
export async function reportCsv(
  sql: Sql,
  reportOptions: ReportOptionsCache,
  report: Report,
  view: ResultView,
  { now = new Date(), onlineWindowSeconds }: { now?: Date; onlineWindowSeconds: number },
): Promise<Response> {
  const { columns } = await resolveView(
    sql,
    reportOptions,
    report,
    { ...view, cursor: undefined, limit: undefined },
    { strict: true, now, onlineWindowSeconds },
  );
  const keys = columns.map((c) => c.key);
  async function* rows() {
    for await (const batch of reportBatches(
      sql,
      reportOptions,
      report,
      { ...view, cursor: undefined, limit: undefined },
      { batch: 1000, now, onlineWindowSeconds },
    ))
      yield batch.rows.map((row) => keys.map((k) => row[k] ?? null));
  }
  const stamp = now.toISOString().slice(0, 16).replace(/[:T]/g, "-");
  return csvResponse(`${report.name}-${stamp}.csv`, keys, rows());
}
