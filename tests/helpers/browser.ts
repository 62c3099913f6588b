import { afterAll } from "bun:test";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const SCREENSHOT_DIR = path.resolve(import.meta.dir, "../../artifacts/screenshots");

const ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];
/** How long the shared Chromium outlives the last file that used it (the next file takes it over). */
const SHARED_IDLE_MS = 5_000;

function launch(extraArgs: string[]): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...ARGS, ...extraArgs] });
}

/** This process's Chromium for files that need no launch flags of their own, and the files using it. */
let shared: { browser: Promise<Browser>; users: number; idle?: ReturnType<typeof setTimeout> } | undefined;

/**
 * Debian's Chromium, headless, with nothing reaching out to the network. With `extraArgs`, one for the
 * calling file, closed after it. Without, the worker's shared one (launching Chromium took ~2.5 s of each
 * browser file on a busy machine): the file gets a handle whose `close()`, also called after the file,
 * closes the contexts the file opened; Chromium itself is closed once no file has used it for a while,
 * or goes with the process (it exits when its pipe to this process closes, even on SIGKILL).
 */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  if (extraArgs.length > 0) {
    const own = await launch(extraArgs);
    afterAll(() => own.close());
    return own;
  }
  if (shared) clearTimeout(shared.idle);
  else shared = { browser: launch([]), users: 0 };
  const mine = shared;
  mine.users++;
  let browser = await mine.browser;
  if (!browser.isConnected()) {
    mine.browser = launch([]);
    browser = await mine.browser;
  }
  const contexts = new Set<BrowserContext>();
  let released = false;
  const close = async () => {
    await Promise.all([...contexts].map((context) => context.close().catch(() => {})));
    contexts.clear();
    if (released) return;
    released = true;
    if (--mine.users > 0) return;
    mine.idle = setTimeout(() => {
      if (shared === mine) shared = undefined;
      void mine.browser.then((b) => b.close()).catch(() => {});
    }, SHARED_IDLE_MS);
    mine.idle.unref?.();
  };
  const handle = new Proxy(browser, {
    get(target, property) {
      if (property === "close") return close;
      if (property === "newContext")
        return async (...args: Parameters<Browser["newContext"]>) => {
          const context = await target.newContext(...args);
          contexts.add(context);
          context.once("close", () => contexts.delete(context));
          return context;
        };
      if (property === "newPage")
        return async (...args: Parameters<Browser["newPage"]>) => {
          const page = await target.newPage(...args);
          contexts.add(page.context());
          page.context().once("close", () => contexts.delete(page.context()));
          return page;
        };
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  afterAll(close);
  return handle;
}

/** Saves a full-page screenshot as a test artifact (artifacts/screenshots/<name>.png). */
export async function screenshot(page: Page, name: string): Promise<string> {
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

export const LAPTOP = { width: 1366, height: 850 };
export const PHONE = { width: 390, height: 844 };
