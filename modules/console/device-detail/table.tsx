import type { Children } from "@kitajs/html";

export type Column = string | { label: string; class: string };

/**
 * A scrolling table of the device page's panels: the header row from `columns`, plus an unlabelled
 * actions column when `actions` is set; `children` is the <tbody>. Local to this page until the ui kit
 * has a data table that covers it.
 */
export function PanelTable(props: { columns: Column[]; actions: boolean; children: Children }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {props.columns.map((column) =>
              typeof column === "string" ? (
                <th safe>{column}</th>
              ) : (
                <th class={column.class} safe>
                  {column.label}
                </th>
              ),
            )}
            {props.actions ? (
              <th>
                <span class="visually-hidden">Actions</span>
              </th>
            ) : (
              ""
            )}
          </tr>
        </thead>
        {props.children}
      </table>
    </div>
  );
}
