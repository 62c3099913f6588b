// Small progressive enhancements; every page works without them.
(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content");
  // htmx requests carry the CSRF token like forms do.
  document.addEventListener("htmx:configRequest", (event) => {
    if (csrf) event.detail.headers["X-CSRF-Token"] = csrf;
  });
  // A polling element skips its refresh while `data-pause-while` matches something (e.g. a ticked
  // row), so a refresh never drops what someone is doing (htmx trigger filters need eval: CSP).
  document.addEventListener("htmx:beforeRequest", (event) => {
    const pause = event.detail.elt?.getAttribute?.("data-pause-while");
    if (pause && document.querySelector(pause)) event.preventDefault();
  });
  // A form refused with 422 answers with itself and its error messages: show them in place.
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  // A click is a press and a release on the same element: a refresh (live or polled) swapped in between
  // would drop it. So a swap into the part of the page under a pressed pointer waits for the release
  // (and the click it makes), then puts in what the server sent.
  let pressed = null;
  const waitingSwaps = new Map();
  document.addEventListener("pointerdown", (event) => (pressed = event.target), true);
  const release = () => {
    pressed = null;
    setTimeout(() => {
      for (const swap of waitingSwaps.values()) swap();
      waitingSwaps.clear();
    });
  };
  for (const type of ["pointerup", "pointercancel"]) document.addEventListener(type, release, true);
  window.addEventListener("blur", release);
  document.addEventListener("htmx:beforeSwap", (event) => {
    const { target, elt, serverResponse, swapOverride, select } = event.detail;
    if (!pressed || !event.detail.shouldSwap || !target?.contains(pressed)) return;
    event.detail.shouldSwap = false;
    const swapStyle = (swapOverride || elt?.getAttribute("hx-swap") || "innerHTML").split(" ")[0];
    const selected = select || elt?.getAttribute("hx-select") || undefined;
    waitingSwaps.set(target, () => {
      if (!target.isConnected) return;
      // The page may refuse it now (the click may have changed what it protects, e.g. ticked a row).
      const replay = new CustomEvent("outpost:replay-swap", { bubbles: true, cancelable: true });
      if (target.dispatchEvent(replay))
        window.htmx.swap(target, serverResponse, { swapStyle }, { select: selected });
    });
  });
  document.addEventListener("click", (event) => {
    const toggle = event.target.closest("[data-nav-toggle]");
    if (toggle) {
      const open = document.body.classList.toggle("nav-open");
      toggle.setAttribute("aria-expanded", String(open));
    } else if (document.body.classList.contains("nav-open") && !event.target.closest(".sidebar")) {
      document.body.classList.remove("nav-open");
    }
    const copy = event.target.closest("[data-copy]");
    if (copy) {
      const target = document.getElementById(copy.getAttribute("data-copy"));
      if (target && navigator.clipboard) {
        navigator.clipboard.writeText(target.textContent.trim()).then(() => {
          copy.textContent = "Copied";
        });
      }
    }
  });
  // A `data-check-all="name"` box ticks or clears its form's boxes of that name (no inline handlers: CSP).
  document.addEventListener("change", (event) => {
    const name = event.target.getAttribute?.("data-check-all");
    if (!name) return;
    for (const box of event.target.form?.querySelectorAll(`input[type=checkbox][name="${name}"]`) ?? [])
      box.checked = event.target.checked;
  });
  // Forms with data-confirm ask before submitting (destructive or bulk actions).
  document.addEventListener("submit", (event) => {
    const message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
