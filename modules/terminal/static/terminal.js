// The device page's Terminal tab: "Open terminal" asks the server for a session (a key the device
// authorizes, a session ref, a socket token), joins terminal:<device> on /socket and runs xterm.js.
// Frames are JSON: {event, topic?, payload} (docs/terminal.md).
(() => {
  const root = document.getElementById("terminal");
  if (!root || !window.Terminal) return;
  const deviceId = root.dataset.deviceId;
  const csrf = root.dataset.csrf || "";
  const screen = root.querySelector("[data-terminal-screen]");
  const status = root.querySelector("[data-terminal-status]");
  const startButton = root.querySelector("[data-terminal-start]");
  const endButton = root.querySelector("[data-terminal-end]");
  const fullButton = root.querySelector("[data-terminal-fullscreen]");
  const copyButton = root.querySelector("[data-terminal-copy]");
  const pasteButton = root.querySelector("[data-terminal-paste]");

  const term = new window.Terminal({
    cursorBlink: true,
    convertEol: false,
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    fontSize: 14,
    // At line height 1 the DOM renderer's 16 px rows clip DejaVu Sans Mono's underscore (Debian's
    // monospace), which lies below the glyph box: `x86_64` read "x86 64" (issue 42). 1.2 gives it room.
    lineHeight: 1.2,
    scrollback: 5000,
    theme: { background: "#0f172a", foreground: "#e2e8f0" },
  });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  fit.fit();

  let socket;
  let state = "idle";
  let slowTimer;

  function setStatus(text, tone) {
    status.textContent = text;
    status.dataset.tone = tone || "";
    root.dataset.state = state;
  }

  function send(frame) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
  }

  function finished(text, tone) {
    clearTimeout(slowTimer);
    state = "ended";
    setStatus(text, tone);
    startButton.textContent = "Start new session";
    startButton.hidden = false;
    startButton.disabled = false;
    endButton.hidden = true;
  }

  async function start() {
    startButton.disabled = true;
    state = "starting";
    setStatus("Asking the device to authorize a key…");
    term.reset();
    let session;
    try {
      const response = await fetch(`/devices/${encodeURIComponent(deviceId)}/terminal`, {
        method: "POST",
        headers: { "x-csrf-token": csrf, accept: "application/json" },
        credentials: "same-origin",
      });
      const body = await response.json();
      if (!response.ok)
        return finished(body.error?.message || `Could not start (${response.status})`, "danger");
      session = body.data;
    } catch {
      return finished("Could not reach the server", "danger");
    }
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(
      `${scheme}://${location.host}/socket?token=${encodeURIComponent(session.socket_token)}`,
    );
    slowTimer = setTimeout(() => {
      if (state !== "connected") setStatus("Still connecting to the device's SSH tunnel…", "warn");
    }, 8000);
    socket.addEventListener("open", () => {
      fit.fit();
      send({
        event: "join",
        topic: `terminal:${deviceId}`,
        payload: {
          session_ref: session.session_ref,
          command_id: session.command_id,
          columns: term.cols,
          rows: term.rows,
        },
      });
    });
    socket.addEventListener("message", (message) => {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      const payload = frame.payload || {};
      switch (frame.event) {
        case "status":
          state = payload.state;
          if (payload.state === "authorizing") setStatus("Waiting for the device to authorize the key…");
          else if (payload.state === "connecting") setStatus("Connecting…");
          else if (payload.state === "connected") {
            clearTimeout(slowTimer);
            setStatus("Connected", "ok");
            endButton.hidden = false;
            startButton.hidden = true;
            term.focus();
          }
          break;
        case "output":
          term.write(payload.data);
          break;
        case "session_warning":
          setStatus(payload.message, "warn");
          break;
        case "join_error":
          finished(`Could not open the terminal: ${joinErrorText(payload)}`, "danger");
          socket.close();
          break;
        case "ended":
          finished(`Ended: ${payload.label || payload.reason}`);
          break;
      }
    });
    socket.addEventListener("close", () => {
      if (state !== "ended") finished("Disconnected", "warn");
    });
  }

  function joinErrorText(payload) {
    const texts = {
      ssh_authorization_timeout: "the device did not authorize the key in time (is it polling?)",
      ssh_authorization_failed: "the device refused to authorize the key",
      host_key_mismatch: "the device's SSH host key changed; an admin must accept the new key on this tab",
      device_not_connected: "the device's tunnel is not connected yet",
      device_not_answering: "the device's tunnel did not answer",
      ssh_authentication_failed: "the device's sshd refused the key",
      session_expired: "this session expired; start a new one",
    };
    return `${texts[payload.code] || payload.message || payload.code} (${payload.reason}/${payload.code})`;
  }

  term.onData((data) => send({ event: "input", payload: { data } }));
  term.onResize(({ cols, rows }) => send({ event: "resize", payload: { columns: cols, rows } }));
  // Ctrl+Shift+C / Ctrl+Shift+V copy and paste, as in desktop terminals (Ctrl+C stays an interrupt).
  term.attachCustomKeyEventHandler((event) => {
    if (event.type !== "keydown" || !event.ctrlKey || !event.shiftKey) return true;
    if (event.code === "KeyC") {
      copySelection();
      return false;
    }
    if (event.code === "KeyV") {
      pasteClipboard();
      return false;
    }
    return true;
  });

  function copySelection() {
    const text = term.getSelection();
    if (text) navigator.clipboard?.writeText(text).catch(() => {});
  }

  function pasteClipboard() {
    navigator.clipboard
      ?.readText()
      .then((text) => term.paste(text))
      .catch(() => {});
  }

  new ResizeObserver(() => fit.fit()).observe(screen);
  startButton.addEventListener("click", start);
  endButton.addEventListener("click", () => send({ event: "leave" }));
  copyButton?.addEventListener("click", copySelection);
  pasteButton?.addEventListener("click", pasteClipboard);
  fullButton.addEventListener("click", () => {
    if (document.fullscreenElement) document.exitFullscreen();
    else root.requestFullscreen?.().catch(() => {});
  });
  document.addEventListener("fullscreenchange", () => setTimeout(() => fit.fit(), 50));
  window.addEventListener("pagehide", () => socket?.close());
  // For tests and debugging: what the screen shows.
  root.terminal = term;
  if (root.dataset.autostart === "1" && !startButton.disabled) start();
})();
