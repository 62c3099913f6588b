// Console behaviour: live updates over Server-Sent Events, device selection and bulk actions.
(() => {
  const page = document.querySelector("[data-live-page]");
  const kind = page?.getAttribute("data-live-page");
  const deviceId = page?.getAttribute("data-device-id");

  // ---------- selection (device list) ----------
  function rows() {
    return [...document.querySelectorAll("[data-select-row]")];
  }
  function updateSelection() {
    const all = rows();
    const selected = all.filter((box) => box.checked);
    const master = document.querySelector("[data-select-all]");
    if (master) {
      master.checked = all.length > 0 && selected.length === all.length;
      master.indeterminate = selected.length > 0 && selected.length < all.length;
    }
    const count = document.querySelector("[data-selected-count]");
    if (count) {
      count.textContent = selected.length === 0 ? "Select all on this page" : `${selected.length} selected`;
    }
    for (const button of document.querySelectorAll("[data-bulk-action]"))
      button.disabled = selected.length === 0;
    for (const box of all) box.closest("tr")?.classList.toggle("selected", box.checked);
    return selected.length;
  }
  document.addEventListener("change", (event) => {
    if (event.target.matches("[data-select-all]")) {
      for (const box of rows()) box.checked = event.target.checked;
    }
    if (event.target.matches("[data-select-all], [data-select-row]")) updateSelection();
  });
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-bulk-action]");
    if (!button) return;
    const n = updateSelection();
    const verb = button.value === "reject" ? "Reject" : "Approve";
    button.form.setAttribute(
      "data-confirm",
      `${verb} ${n} selected device${n === 1 ? "" : "s"}? Only devices still pending approval change.`,
    );
  });
  document.addEventListener("htmx:afterSettle", updateSelection);
  document.addEventListener("DOMContentLoaded", updateSelection);
  if (document.readyState !== "loading") updateSelection();

  // ---------- live updates ----------
  if (!page || typeof EventSource !== "function") return;
  const status = document.querySelector("[data-live-status]");
  const statusText = document.querySelector("[data-live-status-text]");
  function setStatus(state, text) {
    if (!status) return;
    status.dataset.state = state;
    if (statusText) statusText.textContent = text;
  }

  // One refresh of a part of the page at a time: one asked for while another is on its way runs after it,
  // against the part then in the page. (htmx would queue it with its target resolved at once: the part the
  // first is about to replace. Swapped into that detached element, htmx throws half-way and loses what
  // hx-preserve had set aside: the device page's install form, typed text and all.)
  const refreshes = new Map(); // region → what to run first when it is asked for again meanwhile, or null
  function refreshRegion(region, beforeRequest = () => {}) {
    if (refreshes.has(region)) {
      refreshes.set(region, beforeRequest);
      return;
    }
    refreshes.set(region, null);
    beforeRequest();
    const url = location.pathname + location.search;
    window.htmx.ajax("GET", url, { target: region, select: region, swap: "outerHTML" }).finally(() => {
      const again = refreshes.get(region);
      refreshes.delete(region);
      if (again) refreshRegion(region, again);
    });
  }

  let liveRefreshInFlight = false;
  function offerRefresh() {
    document.querySelector("[data-live-notice]")?.removeAttribute("hidden");
  }
  /** Someone is typing in the list's own forms (a view's name, a tag for the selection). */
  function typingInList() {
    const results = document.getElementById("device-results");
    if (!results) return false;
    const fields = [...results.querySelectorAll("input[type=text], input[type=search], textarea")];
    return fields.some((field) => field === document.activeElement || field.value !== field.defaultValue);
  }
  /** Never pull the list from under a selection or typed text: true (and a refresh offered) then. */
  function keepWork() {
    if (!rows().some((box) => box.checked) && !typingInList()) return false;
    offerRefresh();
    return true;
  }
  /** A live refresh yields to what someone is doing; one they asked for (the Refresh button) does not. */
  function refreshDeviceList({ asked = false } = {}) {
    if (!window.htmx || !document.getElementById("device-results")) return;
    if (!asked && keepWork()) return;
    refreshRegion("#device-results", () => {
      liveRefreshInFlight = !asked;
    });
  }
  // Someone may select rows or type while a live refresh is on its way: keep what they did then.
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (!liveRefreshInFlight || event.detail.target?.id !== "device-results") return;
    liveRefreshInFlight = false;
    if (keepWork()) event.detail.shouldSwap = false;
  });
  // A refresh held back while a pointer was pressed in the list (ui/static/app.js): not over a selection
  // the press made either.
  document.addEventListener("outpost:replay-swap", (event) => {
    if (event.target.id === "device-results" && keepWork()) event.preventDefault();
  });
  document.addEventListener("click", (event) => {
    if (!event.target.closest("[data-live-refresh]")) return;
    document.querySelector("[data-live-notice]")?.setAttribute("hidden", "");
    for (const box of rows()) box.checked = false;
    updateSelection();
    refreshDeviceList({ asked: true });
  });

  /** Puts in the fresh counts of a `fleet` event (or of the page fetched anew) where the page shows them. */
  function showCounts(countFor) {
    for (const el of document.querySelectorAll("[data-live]")) {
      const value = countFor(el.getAttribute("data-live"), "value");
      if (value !== undefined) el.textContent = value;
    }
    for (const el of document.querySelectorAll("[data-live-hint]")) {
      const value = countFor(el.getAttribute("data-live-hint"), "hint");
      if (value !== undefined) el.textContent = value;
    }
  }
  /** The part of the device page's open tab a device event can change: the install form is hx-preserve
   * (the swap keeps what someone typed or chose in it, and the very element a post in flight answers
   * into); on Terminal only the sessions list, never the terminal. */
  function refreshDeviceTab() {
    document.body.dispatchEvent(new CustomEvent("live:device-self"));
    const tab = new URLSearchParams(location.search).get("tab") || "overview";
    const region =
      { commands: "#tab-panel", scripts: "#tab-panel", overview: "#tab-panel" }[tab] ||
      (tab === "terminal" && document.getElementById("terminal-sessions") ? "#terminal-sessions" : "");
    if (!region) return;
    refreshRegion(region);
  }
  /** A change made before the stream was up (after the page rendered, or while reconnecting) sent an event
   * nobody heard: refresh once what such an event would have, with the same care for what someone is doing. */
  async function catchUp() {
    if (!window.htmx) return;
    if (kind === "devices") refreshDeviceList();
    if (kind === "device") refreshDeviceTab();
    if (!document.querySelector("[data-live], [data-live-hint]")) return;
    try {
      const response = await fetch(location.href, {
        // A background request, like htmx's: it neither shows nor consumes a flash message (ui/page.ts).
        headers: { accept: "text/html", "HX-Request": "true" },
      });
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      showCounts((name, what) => {
        const el = fresh.querySelector(
          what === "value" ? `[data-live="${CSS.escape(name)}"]` : `[data-live-hint="${CSS.escape(name)}"]`,
        );
        return el ? el.textContent : undefined;
      });
    } catch {
      // The next fleet event brings the counts.
    }
  }

  const source = new EventSource("/live/events");
  // The page was rendered before its stream was up: the first open catches up, and so does every open
  // after an error (a reconnect); nothing else does, so a stream that stays up never swaps for nothing.
  let missed = true;
  source.addEventListener("open", () => {
    setStatus("live", "Live");
    if (!missed) return;
    missed = false;
    void catchUp();
  });
  source.addEventListener("error", () => {
    missed = true;
    setStatus("down", "Reconnecting…");
  });
  source.addEventListener("fleet", (event) => {
    let counts;
    try {
      counts = JSON.parse(event.data);
    } catch {
      return;
    }
    showCounts((name, what) => {
      const value = counts[name];
      if (typeof value !== "number") return undefined;
      const text = value.toLocaleString("en-US");
      return what === "value" ? text : `${text} offline`;
    });
    if (kind === "devices") refreshDeviceList();
    if (kind === "device") document.body.dispatchEvent(new CustomEvent("live:device-self"));
  });
  source.addEventListener("device", (event) => {
    if (kind !== "device" || !window.htmx) return;
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (data.id === deviceId) refreshDeviceTab();
  });
  window.addEventListener("pagehide", () => source.close());
})();
