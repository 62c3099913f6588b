// The new-rollout form: only the fields of the chosen action are shown (without this script, all are).
(() => {
  function showFieldsOf(select) {
    for (const field of document.querySelectorAll("[data-for-actions]")) {
      field.hidden = !field.getAttribute("data-for-actions").split(" ").includes(select.value);
    }
  }
  document.addEventListener("change", (event) => {
    if (event.target.matches?.("[data-rollout-action]")) showFieldsOf(event.target);
  });
  const start = () => {
    const select = document.querySelector("[data-rollout-action]");
    if (select) showFieldsOf(select);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
