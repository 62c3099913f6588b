/**
 * Streamed CSV downloads (RFC 4180): UTF-8, a header row, CRLF line ends, fields quoted when they
 * hold a comma, quote, CR or LF (quotes doubled). Text cells that a spreadsheet would run as a
 * formula (starting with = + - @, tab or CR; OWASP "CSV injection") get a leading apostrophe, so the
 * cell shows as text; numbers stay numbers (-5 is a value, not a formula).
 *
 * Written by hand rather than with a CSV package: quoting is the dozen lines below, and the
 * streaming and the injection guard, the parts that matter here, no library does for us.
 */

export type CsvValue = string | number | boolean | Date | null | undefined;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  if (typeof value === "boolean") return value ? "true" : "false";
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(values: readonly CsvValue[]): string {
  return `${values.map(csvCell).join(",")}\r\n`;
}

/**
 * The rows of a keyset-paged list, one page a batch (for `csvResponse`): `page(cursor)` is asked
 * for the first page, then for the page after each `next` it returns, until it returns none.
 */
export async function* keysetBatches<Item, Cursor>(
  page: (cursor: Cursor | undefined) => Promise<{ items: readonly Item[]; next: Cursor | undefined }>,
  row: (item: Item) => readonly CsvValue[],
): AsyncGenerator<readonly (readonly CsvValue[])[]> {
  let cursor: Cursor | undefined;
  // Bounded: each list's cursor only moves forward, and its last page has no next cursor.
  for (;;) {
    const { items, next } = await page(cursor);
    yield items.map(row);
    if (next === undefined) return;
    cursor = next;
  }
}

/** A filename safe in Content-Disposition (ASCII fallback plus the UTF-8 form). */
function disposition(filename: string): string {
  const ascii = filename.replace(/[^\w.\- ]+/g, "_").slice(0, 150) || "export.csv";
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/**
 * A download of `header` then every row `batches` yields. Rows are pulled one batch at a time when
 * the client is ready for more (highWaterMark 0: nothing is read ahead), so memory holds one batch
 * whatever the size; a cancelled download stops the generator, which stops querying.
 */
export function csvResponse(
  filename: string,
  header: readonly string[],
  batches: AsyncIterator<readonly (readonly CsvValue[])[]>,
): Response {
  const encoder = new TextEncoder();
  let headerSent = false;
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          headerSent = true;
          controller.enqueue(encoder.encode(csvLine(header)));
          return;
        }
        try {
          const next = await batches.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value.map(csvLine).join("")));
        } catch (error) {
          // Headers are gone already: the client sees a truncated download, the log sees why.
          controller.error(error);
        }
      },
      async cancel() {
        await batches.return?.(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(stream, {
    headers: {
      "content-type": "text/csv; charset=utf-8; header=present",
      "content-disposition": disposition(filename),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    },
  });
}
