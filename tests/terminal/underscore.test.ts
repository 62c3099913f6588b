// Underscores in the live terminal (issue 42: xterm.js at 14 px in Debian's Chromium drew `x86_64` as
// "x86 64": the glyph lay below the row's box and was clipped). Writes a line of underscores into the
// terminal of a device page, takes a screenshot of the cells it occupies and counts the pixels that are
// not the terminal's background: a visible underscore draws a horizontal stroke in every cell.
import { afterAll, describe, expect, test } from "bun:test";
import { signedIn } from "../console/helpers";
import { onlineDevice } from "../devices/helpers";
import { startTestApp } from "../helpers/app";
import { LAPTOP, launchBrowser, screenshot } from "../helpers/browser";

const app = await startTestApp();
const browser = await launchBrowser();
afterAll(() => browser.close());

const UNDERSCORES = 24;

describe("the live terminal draws underscores", () => {
  test("every cell of a line of underscores has a stroke; x86_64 shows its underscore", async () => {
    const device = await onlineDevice(app);
    const context = await signedIn(browser, app, "operator", LAPTOP);
    const page = await context.newPage();
    await page.goto(`${app.url}/devices/${device.id}?tab=terminal`);
    await page.waitForFunction(
      () => (document.getElementById("terminal") as { terminal?: unknown } | null)?.terminal,
    );
    // What a shell would print: the terminal as the page set it up, written to as the socket does.
    const cell = await page.evaluate(async (count) => {
      const root = document.getElementById("terminal") as HTMLElement & {
        terminal: { write(data: string, done: () => void): void; rows: number; cols: number };
      };
      await new Promise<void>((done) => root.terminal.write(`${"_".repeat(count)}\r\nx86_64\r\n`, done));
      await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
      const screen = root.querySelector(".xterm-screen")!.getBoundingClientRect();
      return {
        x: screen.left,
        y: screen.top,
        width: screen.width / root.terminal.cols,
        height: screen.height / root.terminal.rows,
      };
    }, UNDERSCORES);
    await screenshot(page, "terminal-underscores");

    // Pixels of the first two rows, read back in the page from its own screenshot.
    const shot = await page.screenshot({
      clip: { x: cell.x, y: cell.y, width: cell.width * UNDERSCORES, height: cell.height * 2 },
    });
    const inked = await page.evaluate(
      async ({ png, cell, count }) => {
        const image = new Image();
        image.src = `data:image/png;base64,${png}`;
        await image.decode();
        const canvas = document.createElement("canvas");
        canvas.width = image.width;
        canvas.height = image.height;
        const context = canvas.getContext("2d")!;
        context.drawImage(image, 0, 0);
        const scale = image.width / (cell.width * count);
        const { data } = context.getImageData(0, 0, image.width, image.height);
        // The background is #0f172a: a pixel far from it is ink.
        const ink = (x: number, y: number) => {
          const i = (y * image.width + x) * 4;
          return (
            Math.abs(data[i]! - 0x0f) + Math.abs(data[i + 1]! - 0x17) + Math.abs(data[i + 2]! - 0x2a) > 96
          );
        };
        const inkIn = (column: number, row: number) => {
          let n = 0;
          const x0 = Math.floor(column * cell.width * scale);
          const x1 = Math.floor((column + 1) * cell.width * scale);
          const y0 = Math.floor(row * cell.height * scale);
          const y1 = Math.min(image.height, Math.floor((row + 1) * cell.height * scale));
          for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) if (ink(x, y)) n++;
          return n;
        };
        return {
          underscores: Array.from({ length: count }, (_, column) => inkIn(column, 0)),
          // `x86_64`: the underscore is its fourth character.
          x86: Array.from({ length: 6 }, (_, column) => inkIn(column, 1)),
        };
      },
      { png: shot.toString("base64"), cell, count: UNDERSCORES },
    );
    for (const pixels of inked.underscores) expect(pixels).toBeGreaterThan(2);
    for (const pixels of inked.x86) expect(pixels).toBeGreaterThan(2);
    await context.close();
  }, 60_000);
});
