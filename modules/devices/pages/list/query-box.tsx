// The device list's query box companions: "Save as view" and the tag controls of the bulk bar (the
// syntax help and a query's error note are the kit's, ui/query-help.tsx: rule and report scopes show
// them too). The language itself lives in modules/fleet (docs/fleet.md).
import { LABEL_TEXT_MAX } from "../../../../shared/labels";
import { CsrfField } from "../../../../ui/components";

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
