import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dir, "..");

/** Every file the UI may load, served from the project itself (no CDN). */
const FILES: Record<string, { file: string; type: string; prefix?: string }> = {
  "app.css": { file: "ui/static/app.css", type: "text/css; charset=utf-8" },
  "app.js": { file: "ui/static/app.js", type: "text/javascript; charset=utf-8" },
  "htmx.min.js": { file: "node_modules/htmx.org/dist/htmx.min.js", type: "text/javascript; charset=utf-8" },
  "uplot.min.js": {
    file: "node_modules/uplot/dist/uPlot.iife.min.js",
    type: "text/javascript; charset=utf-8",
  },
  "uplot.min.css": { file: "node_modules/uplot/dist/uPlot.min.css", type: "text/css; charset=utf-8" },
  "charts.js": { file: "ui/static/charts.js", type: "text/javascript; charset=utf-8" },
  "console.js": { file: "ui/static/console.js", type: "text/javascript; charset=utf-8" },
  "fleet.js": { file: "modules/fleet/static/fleet.js", type: "text/javascript; charset=utf-8" },
  "rollouts.js": { file: "modules/rollouts/static/rollouts.js", type: "text/javascript; charset=utf-8" },
  "favicon.svg": { file: "ui/static/favicon.svg", type: "image/svg+xml" },
  "xterm.js": {
    file: "node_modules/@xterm/xterm/lib/xterm.js",
    type: "text/javascript; charset=utf-8",
    // Chromium's compile hint: the terminal runs at once, so compile it while it downloads, off the
    // main thread, instead of function by function on it (half the playback page's blocking time).
    prefix: "//# allFunctionsCalledOnLoad\n",
  },
  "xterm.css": { file: "node_modules/@xterm/xterm/css/xterm.css", type: "text/css; charset=utf-8" },
  "xterm-fit.js": {
    file: "node_modules/@xterm/addon-fit/lib/addon-fit.js",
    type: "text/javascript; charset=utf-8",
  },
  "terminal.js": { file: "modules/terminal/static/terminal.js", type: "text/javascript; charset=utf-8" },
  "terminal-player.js": { file: "modules/terminal/static/player.js", type: "text/javascript; charset=utf-8" },
  "webauthn.js": {
    file: "node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js",
    type: "text/javascript; charset=utf-8",
  },
  "second-factor.js": {
    file: "modules/operators/static/second-factor.js",
    type: "text/javascript; charset=utf-8",
  },
  "alert-rule-form.js": { file: "modules/alerts/pages/rule-form.js", type: "text/javascript; charset=utf-8" },
};

interface Asset {
  body: Blob;
  bytes: Buffer;
  /** The body gzipped, made on the first request that accepts it. */
  gzipped?: Blob;
  type: string;
  etag: string;
}

const cache = new Map<string, Asset>();

function load(name: string): Asset | undefined {
  const entry = FILES[name];
  if (!entry) return undefined;
  let asset = cache.get(name);
  if (!asset) {
    const file = readFileSync(path.join(root, entry.file));
    const body = entry.prefix ? Buffer.concat([Buffer.from(entry.prefix), file]) : file;
    asset = {
      body: new Blob([body]),
      bytes: body,
      type: entry.type,
      etag: `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`,
    };
    cache.set(name, asset);
  }
  return asset;
}

/** URL of an asset with its content hash, so browsers may cache it forever. */
export function assetUrl(name: string): string {
  const asset = load(name);
  if (!asset) throw new Error(`Unknown asset ${name}`);
  return `/assets/${name}?v=${asset.etag.slice(1, 9)}`;
}

export function assetResponse(name: string, request: Request): Response | undefined {
  const asset = load(name);
  if (!asset) return undefined;
  const headers = {
    "content-type": asset.type,
    etag: asset.etag,
    "cache-control": "public, max-age=31536000, immutable",
  };
  if (request.headers.get("if-none-match") === asset.etag)
    return new Response(null, { status: 304, headers });
  // Compressed for browsers that take it: xterm.js is 490 KB as it comes, about a quarter gzipped.
  if (!/\bgzip\b/.test(request.headers.get("accept-encoding") ?? ""))
    return new Response(asset.body, { headers: { ...headers, vary: "accept-encoding" } });
  asset.gzipped ??= new Blob([Bun.gzipSync(new Uint8Array(asset.bytes))]);
  return new Response(asset.gzipped, {
    headers: { ...headers, vary: "accept-encoding", "content-encoding": "gzip" },
  });
}
