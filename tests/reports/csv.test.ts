import { describe, expect, test } from "bun:test";
import { csvCell, csvLine, csvResponse } from "../../modules/platform/csv";

describe("CSV cells (RFC 4180, formula injection)", () => {
  test("quotes separators, quotes and line breaks; doubles quotes", () => {
    expect(csvLine(["a", "b,c", 'say "hi"', "two\nlines", null, 3.5])).toBe(
      'a,"b,c","say ""hi""","two\nlines",,3.5\r\n',
    );
  });

  test("text that a spreadsheet would run as a formula is neutralised; numbers are not", () => {
    for (const start of ["=", "+", "-", "@", "\t", "\r"])
      expect(
        csvCell(`${start}1+1`).startsWith(`'${start}`) || csvCell(`${start}1+1`).startsWith(`"'${start}`),
      ).toBe(true);
    expect(csvCell('=HYPERLINK("http://x")')).toBe('"\'=HYPERLINK(""http://x"")"');
    expect(csvCell(-5)).toBe("-5");
    expect(csvCell(new Date("2026-01-02T03:04:05Z"))).toBe("2026-01-02T03:04:05.000Z");
  });

  test("a response streams header then batches, and cancelling stops the producer", async () => {
    let produced = 0;
    let stopped = false;
    async function* batches() {
      try {
        for (let i = 0; i < 1000; i++) {
          produced++;
          yield [[i, `ü${i}`]];
        }
      } finally {
        stopped = true;
      }
    }
    const response = csvResponse("ü report.csv", ["n", "name"], batches());
    expect(response.headers.get("content-disposition")).toBe(
      "attachment; filename=\"_ report.csv\"; filename*=UTF-8''%C3%BC%20report.csv",
    );
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (let i = 0; i < 3; i++) text += decoder.decode((await reader.read()).value);
    expect(text).toBe("n,name\r\n0,ü0\r\n1,ü1\r\n");
    await reader.cancel();
    expect(stopped).toBe(true);
    expect(produced).toBeLessThan(10);
  });
});
