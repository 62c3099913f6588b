// The device list's query box companions: the syntax beside it, a query's error pointing at the bad
// token, "Save as view", and the tag controls of the bulk bar. The language itself lives in
// modules/fleet (docs/fleet.md); these only render its text and post to its routes.
import { LABEL_TEXT_MAX } from "../../../../shared/labels";
import { CsrfField } from "../../../../ui/components";

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

export function QuerySyntax() {
  return (
    <details id="query-help" class="card query-help">
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

export function SaveViewForm({ csrfToken, query }: { csrfToken: string; query: string }) {
  return (
    <form class="inline-form save-view" method="post" action="/views">
      <CsrfField token={csrfToken} />
      <input type="hidden" name="query" value={query} />
      <label for="save-view-name">Save this query as a view</label>
      <input
        type="text"
        id="save-view-name"
        name="name"
        required
        maxlength="100"
        placeholder="Berlin gateways"
      />
      <button class="btn small" type="submit">
        Save view
      </button>
    </form>
  );
}

/** Add or remove one tag on the selected devices (the bulk bar's selection; posted to /devices/bulk-tags). */
export function BulkTagControls() {
  return (
    <div class="actions bulk-tags">
      <label class="visually-hidden" for="bulk-tag">
        Tag (key=value)
      </label>
      <input
        type="text"
        id="bulk-tag"
        name="tag"
        placeholder="key=value"
        autocomplete="off"
        maxlength={String(LABEL_TEXT_MAX)}
      />
      <button
        class="btn small"
        type="submit"
        formaction="/devices/bulk-tags"
        name="action"
        value="add-tag"
        data-tag-action
      >
        Add tag
      </button>
      <button
        class="btn small"
        type="submit"
        formaction="/devices/bulk-tags"
        name="action"
        value="remove-tag"
        data-tag-action
      >
        Remove tag
      </button>
      <button
        class="btn small"
        type="submit"
        formaction="/rollouts/new"
        formmethod="get"
        data-rollout-selection
        title="Act on the selected devices in waves (rollouts)"
      >
        Roll out…
      </button>
    </div>
  );
}
