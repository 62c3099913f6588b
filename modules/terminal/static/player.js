// Plays an asciicast v2 recording in xterm.js: play/pause, seek (the screen is rebuilt from the start
// up to the chosen time), speed. Long pauses are shortened to 2 s, as asciinema's idle limit does.
(() => {
  const root = document.getElementById("player");
  if (!root || !window.Terminal) return;
  const screen = root.querySelector("[data-player-screen]");
  const playButton = root.querySelector("[data-player-play]");
  const seek = root.querySelector("[data-player-seek]");
  const clock = root.querySelector("[data-player-time]");
  const speedSelect = root.querySelector("[data-player-speed]");
  const IDLE_LIMIT = 2;

  const term = new window.Terminal({
    convertEol: false,
    disableStdin: true,
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    fontSize: 14,
    scrollback: 5000,
    theme: { background: "#0f172a", foreground: "#e2e8f0" },
  });
  term.open(screen);

  let events = [];
  let duration = 0;
  let position = 0; // seconds of (idle-limited) recording shown
  let index = 0; // next event to write
  let playing = false;
  let timer;
  let lastTick = 0;

  const format = (s) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}`;

  function render() {
    seek.value = String(duration ? Math.round((position / duration) * 1000) : 0);
    clock.textContent = `${format(position)} / ${format(duration)}`;
    playButton.textContent = playing ? "Pause" : position >= duration ? "Replay" : "Play";
    root.dataset.position = String(position);
    root.dataset.index = String(index);
  }

  function apply(event) {
    if (event.kind === "o") term.write(event.data);
    else if (event.kind === "r") {
      const [cols, rows] = event.data.split("x").map(Number);
      if (cols > 0 && rows > 0) term.resize(cols, rows);
    }
  }

  function advanceTo(target) {
    while (index < events.length && events[index].at <= target) apply(events[index++]);
    position = Math.min(target, duration);
  }

  function seekTo(target) {
    term.reset();
    index = 0;
    advanceTo(target);
    render();
  }

  function tick() {
    const now = performance.now();
    const speed = Number(speedSelect.value) || 1;
    advanceTo(position + ((now - lastTick) / 1000) * speed);
    lastTick = now;
    if (position >= duration) pause();
    render();
  }

  function play() {
    if (position >= duration) seekTo(0);
    playing = true;
    lastTick = performance.now();
    timer = setInterval(tick, 33);
    render();
  }

  function pause() {
    playing = false;
    clearInterval(timer);
    render();
  }

  fetch(root.dataset.src, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.text() : Promise.reject(new Error(String(response.status)))))
    .then((text) => {
      const lines = text.split("\n").filter((line) => line.trim() !== "");
      const header = JSON.parse(lines[0]);
      const columns = header.width || 80;
      // A recording keeps its width: on a narrow screen the font shrinks a little, then the screen scrolls.
      const fits = Math.floor((screen.clientWidth - 12) / (columns * 0.62));
      term.options.fontSize = Math.max(10, Math.min(14, fits));
      term.resize(columns, header.height || 24);
      let previous = 0;
      let shifted = 0;
      for (const line of lines.slice(1)) {
        let event;
        try {
          event = JSON.parse(line);
        } catch {
          continue;
        }
        const [at, kind, data] = event;
        shifted += Math.min(at - previous, IDLE_LIMIT);
        previous = at;
        events.push({ at: shifted, kind, data });
      }
      events = events.filter((e) => e.kind === "o" || e.kind === "r");
      duration = events.length ? events[events.length - 1].at : 0;
      root.dataset.loaded = "1";
      seekTo(0);
      if (root.dataset.autoplay === "1") play();
    })
    .catch((error) => {
      clock.textContent = `The recording could not be loaded (${error.message}).`;
    });

  playButton.addEventListener("click", () => (playing ? pause() : play()));
  seek.addEventListener("input", () => {
    seekTo((Number(seek.value) / 1000) * duration);
  });
  speedSelect.addEventListener("change", () => {
    lastTick = performance.now();
  });
  root.player = { term, seekTo: (s) => seekTo(s), duration: () => duration };
})();
