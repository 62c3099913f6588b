// Remote access panel: asks the server to open (or reuse) this page's lease, keeps it alive with a
// live connection (the server renews the lease while the stream is open and ends it when the page goes
// away), and re-renders the panel from the server's state events. On the device page's other tabs it
// runs as a keeper (data-keeper): the same lease, nothing shown.
(() => {
  const root = document.getElementById("remote-access");
  if (!root) return;
  const deviceId = root.dataset.deviceId;
  const csrf = root.dataset.csrf || "";
  const base = `/devices/${encodeURIComponent(deviceId)}/remote-access`;
  let source;
  let leaseId = "";

  const keeper = root.dataset.keeper === "1";

  function show(html) {
    if (keeper) {
      const template = document.createElement("template");
      template.innerHTML = html;
      leaseId = template.content.querySelector("[data-remote-panel]")?.dataset.leaseId || "";
      return;
    }
    root.querySelector("[data-remote-panel]")?.remove();
    root.querySelector("section.card")?.remove();
    root.insertAdjacentHTML("afterbegin", html);
    leaseId = root.querySelector("[data-remote-panel]")?.dataset.leaseId || "";
  }

  fetch(`${base}/panel`, { method: "POST", headers: { "x-csrf-token": csrf }, credentials: "same-origin" })
    .then((r) => r.text())
    .then((html) => {
      show(html);
      source = new EventSource(`${base}/live${leaseId ? `?lease=${encodeURIComponent(leaseId)}` : ""}`);
      source.addEventListener("state", (event) => show(JSON.parse(event.data).html));
    });

  window.addEventListener("pagehide", () => {
    source?.close();
    if (!leaseId) return;
    const body = new FormData();
    body.append("_csrf", csrf);
    body.append("lease_id", leaseId);
    body.append("beacon", "1");
    navigator.sendBeacon(`${base}/leave`, body);
  });
})();
