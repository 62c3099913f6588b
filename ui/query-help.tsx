// The fleet query language's help and error note (docs/fleet.md), for every box that takes a query:
// the device list's search, and the query scope of alert rules and reports. Plain text only: the
// language itself lives in modules/fleet.
const EXAMPLES: [string, string][] = [
  ["tag:site=berlin", "tag or agent label site is berlin"],
  ["tag:site=berlin,munich", "either value"],
  ["tag:site", "has a site tag"],
  ["-tag:env=lab", "not tagged env=lab"],
  ["status:online", "online (or offline)"],
  ["approval:pending", "pending, approved or rejected"],
  ["product:gateway", "this product"],
  ["last_seen:>1h", "silent for over an hour (never seen too); <5m: seen within 5 minutes; never"],
  ['"pump 7"', "free text: name, MAC, IP, product, hostname"],
  ["status:online OR status:offline", "OR joins terms of one key; spaces mean AND"],
];

/** The syntax, folded (`id`: one per page; `card`: as a card of its own). */
export function QuerySyntax(props: { id?: string; card?: boolean } = {}) {
  return (
    <details id={props.id ?? "query-help"} class={props.card === false ? "query-help" : "card query-help"}>
      <summary>Query syntax</summary>
      <dl class="query-syntax">
        {EXAMPLES.map(([example, meaning]) => (
          <>
            <dt>
              <code safe>{example}</code>
            </dt>
            <dd safe>{meaning}</dd>
          </>
        ))}
      </dl>
      <p class="muted small">
        Terms separated by spaces must all hold. Quote values with spaces: <code>product:"edge gw"</code>.
      </p>
    </details>
  );
}

/** The error, and the query with the bad token marked (position and message from the parser). */
export function QueryErrorNote({
  query,
  error,
}: {
  query: string;
  error: { message: string; position: number | undefined };
}) {
  const at = error.position;
  return (
    <div class="flash error" role="alert" id="query-error">
      <span safe>{`${error.message}${at === undefined ? "" : ` (at character ${at + 1})`}`}</span>
      {at !== undefined && query !== "" ? (
        <pre class="query-at" aria-hidden="true">
          <span safe>{query}</span>
          {"\n"}
          <span safe>{`${" ".repeat(Math.min(at, query.length))}^`}</span>
        </pre>
      ) : (
        ""
      )}
    </div>
  );
}
