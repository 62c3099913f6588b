// The device list's query box: suggestions for keys, tag keys and tag values (a datalist of whole
// queries, so the browser's own completion offers them), and the bulk bar's tag buttons.
(() => {
  const KEYS = [
    "tag:",
    "status:online",
    "status:offline",
    "approval:pending",
    "approval:approved",
    "approval:rejected",
    "product:",
    "last_seen:>1h",
    "last_seen:<5m",
    "last_seen:never",
  ];

  async function fetchSuggestions(params) {
    const response = await fetch(`/api/v1/tags/suggestions?${new URLSearchParams(params)}`, {
      headers: { accept: "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) return [];
    return (await response.json()).data ?? [];
  }

  /** Completions of the query's last word (each a whole query, for the datalist). */
  async function completions(text) {
    const cut = text.search(/\S*$/);
    const head = text.slice(0, cut);
    const word = text.slice(cut);
    const sign = word.startsWith("-") ? "-" : "";
    const bare = word.slice(sign.length);
    const value = /^tag:([a-z0-9][a-z0-9._/-]*)=((?:[^,]*,)*)([^,]*)$/.exec(bare);
    if (value) {
      const [, key, listed, prefix] = value;
      const values = await fetchSuggestions({ key, prefix });
      return values.map(
        (v) => `${head}${sign}tag:${key}=${listed}${/[\s,"]/.test(v) ? JSON.stringify(v) : v}`,
      );
    }
    const tagKey = /^tag:([a-z0-9._/-]*)$/.exec(bare);
    if (tagKey) {
      const keys = await fetchSuggestions({ prefix: tagKey[1] });
      return keys.map((k) => `${head}${sign}tag:${k}=`);
    }
    if (bare === "") return [];
    return KEYS.filter((k) => k.startsWith(bare) && k !== bare).map((k) => `${head}${sign}${k}`);
  }

  let pending = 0;
  document.addEventListener("input", async (event) => {
    const box = event.target.closest?.("[data-query-box]");
    if (!box) return;
    const ticket = ++pending;
    const options = await completions(box.value).catch(() => []);
    if (ticket !== pending) return; // typed on meanwhile
    const list = document.getElementById(box.getAttribute("list"));
    if (!list) return;
    list.replaceChildren(
      ...options.slice(0, 50).map((value) => Object.assign(document.createElement("option"), { value })),
    );
  });

  // ---------- bulk bar: add or remove a tag on the selected devices ----------
  function selected() {
    return document.querySelectorAll("[data-select-row]:checked").length;
  }
  function updateButtons() {
    const n = selected();
    for (const button of document.querySelectorAll("[data-tag-action], [data-rollout-selection]"))
      button.disabled = n === 0;
  }
  document.addEventListener("change", (event) => {
    if (event.target.matches?.("[data-select-all], [data-select-row]")) updateButtons();
  });
  // "Roll out…" opens the new-rollout form for the selection (a GET): nothing to confirm yet.
  document.addEventListener("click", (event) => {
    const button = event.target.closest?.("[data-rollout-selection]");
    if (button) button.form.removeAttribute("data-confirm");
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest?.("[data-tag-action]");
    if (!button) return;
    const tag = button.form.querySelector("[name=tag]")?.value.trim() ?? "";
    const n = selected();
    const devices = `${n} selected device${n === 1 ? "" : "s"}`;
    button.form.setAttribute(
      "data-confirm",
      button.value === "remove-tag"
        ? `Remove tag ${tag.split("=")[0]} from ${devices}?`
        : `Tag ${devices} with ${tag}?`,
    );
  });
  document.addEventListener("htmx:afterSettle", updateButtons);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", updateButtons);
  else updateButtons();
})();
