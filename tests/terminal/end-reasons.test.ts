// Every way a terminal session ends has its own words (issue 42: End session read "Ended: closed").
import { describe, expect, test } from "bun:test";
import { END_REASONS, endReasonText } from "../../modules/terminal/model";

describe("end reasons in words", () => {
  test("each code has words of its own, never the code itself", () => {
    const words = Object.values(END_REASONS);
    expect(new Set(words).size).toBe(words.length);
    for (const [code, text] of Object.entries(END_REASONS)) {
      expect(text).not.toBe(code);
      expect(endReasonText(code)).toBe(text);
    }
    expect(endReasonText("ended")).toBe("Ended with End session");
    expect(endReasonText("closed")).toBe("Page closed");
    expect(endReasonText("lost")).toBe("Connection to the device lost");
  });

  test("a shell's exit carries its status; an unknown code (a newer version's) is shown as it is", () => {
    expect(endReasonText("exit", 0)).toBe("Shell exited (status 0)");
    expect(endReasonText("exit", null)).toBe("Shell exited");
    expect(endReasonText("idle", 3)).toBe("Idle timeout");
    expect(endReasonText("from_the_future")).toBe("from_the_future");
    expect(endReasonText(null)).toBe("Ended");
  });
});
