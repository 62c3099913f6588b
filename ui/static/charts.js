// Draws the server-rendered charts ([data-chart] JSON: {t, series:[{label, values}], kind}) with
// uPlot, served from /assets. Sizes follow the container; colours follow the page's CSS tokens.
(() => {
  const PALETTE = ["#1f6feb", "#2ea043", "#d29922", "#cf222e", "#8250df", "#0a8f8f"];

  function css(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function draw(el) {
    if (el.dataset.drawn || typeof window.uPlot !== "function") return;
    let spec;
    try {
      spec = JSON.parse(el.getAttribute("data-chart"));
    } catch {
      return;
    }
    const muted = css("--muted", "#5b6b7c");
    const grid = css("--border", "#dde3ea");
    const bars = spec.kind === "bars" && window.uPlot.paths && window.uPlot.paths.bars;
    let points = 0;
    const series = [{}].concat(
      spec.series.map((s, i) => {
        points += s.values.filter((v) => v !== null).length;
        const color = PALETTE[i % PALETTE.length];
        return {
          label: s.label,
          stroke: color,
          width: 2,
          fill: bars || spec.series.length === 1 ? `${color}33` : undefined,
          paths: bars ? window.uPlot.paths.bars({ size: [0.7, 40] }) : undefined,
          points: { show: !bars && s.values.length < 60 },
          spanGaps: false,
        };
      }),
    );
    const height = Number.parseInt(el.style.minHeight, 10) || 220;
    const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
    const compact = (v) => {
      const abs = Math.abs(v);
      if (abs >= 1e12) return `${+(v / 1e12).toFixed(1)}T`;
      if (abs >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
      if (abs >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
      if (abs >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
      return `${+v.toFixed(2)}`;
    };
    // A categorical x axis (bars per device): t is 0..n-1 and the ticks show the labels.
    const categories = Array.isArray(spec.categories) ? spec.categories : null;
    const opts = {
      width: Math.max(240, el.clientWidth),
      height,
      series,
      axes: [
        categories
          ? Object.assign(
              { splits: () => spec.t, values: (_u, splits) => splits.map((i) => categories[i] ?? "") },
              axis,
            )
          : axis,
        Object.assign(
          { size: 52, values: (_u, splits) => splits.map(compact) },
          // Counts (bars) get whole-number ticks.
          bars
            ? {
                incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6],
              }
            : {},
          axis,
        ),
      ],
      scales: {
        // uPlot widens a single sample to 86400/ms seconds (about 2.7 years); centre it in an hour.
        x: {
          time: !categories,
          range: (_u, min, max) =>
            categories
              ? [-0.5, spec.t.length - 0.5]
              : spec.t.length === 1
                ? [spec.t[0] - 1800, spec.t[0] + 1800]
                : [min, max],
        },
        y: bars ? { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } : {},
      },
      legend: { show: true },
      hooks: {
        setScale: [
          (u, key) => {
            if (key === "x") el.dataset.xSpan = String(Math.round(u.scales.x.max - u.scales.x.min));
          },
        ],
      },
      cursor: { drag: { x: true, y: false } },
    };
    const data = [spec.t].concat(spec.series.map((s) => s.values));
    const plot = new window.uPlot(opts, data, el);
    el.dataset.drawn = "1";
    el.dataset.points = String(points);
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        const width = Math.max(240, el.clientWidth);
        if (Math.abs(width - plot.width) > 4) plot.setSize({ width, height });
      }).observe(el);
    }
  }

  function drawAll(root) {
    for (const el of (root || document).querySelectorAll("[data-chart]")) draw(el);
  }

  document.addEventListener("DOMContentLoaded", () => drawAll());
  document.addEventListener("htmx:afterSettle", (event) => drawAll(event.target));
  if (document.readyState !== "loading") drawAll();
})();
