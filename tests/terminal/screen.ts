// The browser terminal's screen, read from xterm.js in Chromium (the live terminal or the player).
import type { Page } from "playwright-core";
import { waitFor } from "./helpers";

/** The terminal's screen as text (xterm's active buffer, trailing blanks cut). */
export function screenText(page: Page, selector = "#terminal"): Promise<string> {
  return page.evaluate((sel) => {
    const root = document.querySelector(sel) as HTMLElement & {
      terminal?: {
        buffer: {
          active: { length: number; getLine(i: number): { translateToString(trim: boolean): string } };
        };
      };
      player?: { term: unknown };
    };
    const term = (root.terminal ?? root.player?.term) as {
      buffer: {
        active: { length: number; getLine(i: number): { translateToString(trim: boolean): string } };
      };
    };
    const lines: string[] = [];
    for (let i = 0; i < term.buffer.active.length; i++)
      lines.push(term.buffer.active.getLine(i).translateToString(true));
    return lines.join("\n");
  }, selector);
}

/** Waits until the screen's lines satisfy `check`; a timeout says what the screen showed. */
export async function untilScreen(
  page: Page,
  check: (lines: string[]) => boolean,
  what: string,
  selector = "#terminal",
): Promise<string> {
  let text = "";
  try {
    await waitFor(
      async () => {
        text = await screenText(page, selector);
        return check(text.split("\n").map((l) => l.trim()));
      },
      15_000,
      what,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; the screen showed: ${JSON.stringify(text)}`);
  }
  return text;
}
