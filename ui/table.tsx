import type { Children } from "@kitajs/html";

/** A card with a heading row (title, optional actions on the right) and its content. */
export function Card(props: { title: string; id?: string; actions?: Children; children: Children }) {
  return (
    <section class="card" id={props.id}>
      <div class="card-head">
        <h2 safe>{props.title}</h2>
        {props.actions ?? ""}
      </div>
      {props.children}
    </section>
  );
}

export interface Column<Row> {
  header: string;
  /** The cell as text: escaped here. */
  text?: (row: Row) => string | number | null | undefined;
  /** The cell as markup (badges, links, forms): whatever it prints must already be escaped. */
  render?: (row: Row) => JSX.Element;
  /** Classes of the header and the cells: `num`, `mono`, `muted`, `hide-sm`, `row-actions`. */
  class?: string;
  /** The header is for screen readers only (an actions column). */
  hiddenHeader?: boolean;
}

/**
 * The one data table of the console: a scrolling wrapper, a header row and one row per item, or the
 * `empty` sentence when there are none. `stackOnPhone` turns each row into a labelled block at phone
 * width, so no column is lost.
 */
export function DataTable<Row>(props: {
  columns: Column<Row>[];
  rows: Row[];
  empty: string;
  stackOnPhone?: boolean;
  id?: string;
  /** Attributes of a row's <tr> (e.g. `data-command-id`), for scripts and tests. */
  rowAttributes?: (row: Row) => Record<string, string>;
}) {
  if (props.rows.length === 0) {
    return (
      <p class="muted" id={props.id} safe>
        {props.empty}
      </p>
    );
  }
  return (
    <div class="table-wrap" id={props.id}>
      <table class={props.stackOnPhone ? "stack-sm" : undefined}>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th class={column.class}>
                {column.hiddenHeader ? (
                  <span class="visually-hidden" safe>
                    {column.header}
                  </span>
                ) : (
                  <span safe>{column.header}</span>
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) =>
            tableRow(props.columns, row, props.stackOnPhone === true, props.rowAttributes?.(row)),
          )}
        </tbody>
      </table>
    </div>
  );
}

function tableRow<Row>(
  columns: Column<Row>[],
  row: Row,
  labelled: boolean,
  attributes: Record<string, string> | undefined,
) {
  return (
    <tr {...attributes}>
      {columns.map((column) => {
        const label = labelled && !column.hiddenHeader ? column.header : undefined;
        if (column.render) {
          return (
            <td class={column.class} data-label={label}>
              {column.render(row)}
            </td>
          );
        }
        return (
          <td class={column.class} data-label={label} safe>
            {String(column.text?.(row) ?? "")}
          </td>
        );
      })}
    </tr>
  );
}
