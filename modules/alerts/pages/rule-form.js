// Rule form: discard confirmation (Cancel or Escape with unsaved edits) and Ctrl/Cmd+Enter to save.
// The snapshot is taken once at load; htmx re-renders of the form (schema changes) keep comparing to it.
(() => {
  const snapshot = () => {
    const form = document.getElementById("rule-form");
    if (!form) return "";
    const data = new FormData(form);
    data.delete("_csrf");
    return new URLSearchParams(data).toString();
  };
  let initial = null;
  let leaving = "/alerts?tab=rules";
  // Editing (reference): "Save Changes" stays disabled until something differs from the rule.
  const syncSave = () => {
    const form = document.getElementById("rule-form");
    const save = form?.querySelector("button[type=submit]");
    if (!form || !save || form.dataset.mode !== "edit" || form.dataset.blocked === "true") return;
    save.disabled = initial !== null && snapshot() === initial;
  };
  document.addEventListener("DOMContentLoaded", () => {
    initial = snapshot();
    syncSave();
  });
  document.addEventListener("input", syncSave);
  document.addEventListener("change", syncSave);
  document.addEventListener("htmx:afterSettle", syncSave);
  const dialog = () => document.getElementById("discard-dialog");
  const requestClose = (href) => {
    leaving = href;
    if (initial !== null && snapshot() !== initial) dialog()?.showModal();
    else location.assign(href);
  };
  document.addEventListener("click", (event) => {
    const cancel = event.target.closest("[data-discard]");
    if (cancel) {
      event.preventDefault();
      requestClose(cancel.getAttribute("href"));
    }
    if (event.target.closest("[data-keep-editing]")) dialog()?.close();
    if (event.target.closest("[data-discard-confirm]")) {
      initial = null;
      location.assign(leaving);
    }
  });
  document.addEventListener("keydown", (event) => {
    const form = document.getElementById("rule-form");
    if (!form) return;
    if (event.key === "Escape" && !dialog()?.open) {
      event.preventDefault();
      requestClose("/alerts?tab=rules");
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
})();
