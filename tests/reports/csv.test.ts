import { describe, expect, test } from "bun:test";
import { csvCell, csvLine, csvResponse, keysetBatches } from "../../modules/platform/csv";

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

  test("empty, non-finite and boolean cells", () => {
    expect([
      csvCell(null),
      csvCell(undefined),
      csvCell(Number.NaN),
      csvCell(Number.POSITIVE_INFINITY),
    ]).toEqual(["", "", "", ""]);
    expect([csvCell(true), csvCell(false), csvCell(0), csvCell("")]).toEqual(["true", "false", "0", ""]);
  });

  test("the download's headers; unsafe characters become _, no name is export.csv", async () => {
    const none = (async function* () {})();
    const response = csvResponse("Report: a/b <1>.csv", ["a"], none);
    const header = (name: string) => response.headers.get(name);
    expect({
      "content-type": header("content-type"),
      "content-disposition": header("content-disposition"),
      "cache-control": header("cache-control"),
      "x-content-type-options": header("x-content-type-options"),
    }).toEqual({
      "content-type": "text/csv; charset=utf-8; header=present",
      "content-disposition": `attachment; filename="Report_ a_b _1_.csv"; filename*=UTF-8''${encodeURIComponent("Report: a/b <1>.csv")}`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    expect(await response.text()).toBe("a\r\n");
    const unsafe = csvResponse("ü€", ["a"], (async function* () {})());
    expect(unsafe.headers.get("content-disposition")).toBe(
      "attachment; filename=\"_\"; filename*=UTF-8''%C3%BC%E2%82%AC",
    );
    const unnamed = csvResponse("", ["a"], (async function* () {})());
    expect(unnamed.headers.get("content-disposition")).toBe(
      "attachment; filename=\"export.csv\"; filename*=UTF-8''",
    );
    const long = csvResponse(`${"r".repeat(200)}.csv`, ["a"], (async function* () {})());
    expect(long.headers.get("content-disposition")).toContain(`filename="${"r".repeat(150)}"`);
  });

  test("a batch of several rows is written as consecutive lines", async () => {
    const response = csvResponse(
      "n.csv",
      ["n", "s"],
      (async function* () {
        yield [
          [1, "a"],
          [2, "b,c"],
        ];
      })(),
    );
    expect(await response.text()).toBe('n,s\r\n1,a\r\n2,"b,c"\r\n');
  });

  test("nothing is read ahead: a batch is produced only when the reader asks for it", async () => {
    let produced = 0;
    async function* batches() {
      for (let i = 0; i < 5; i++) {
        produced++;
        yield [[i]];
      }
    }
    const reader = csvResponse("n.csv", ["n"], batches()).body!.getReader();
    await reader.read(); // the header
    await Bun.sleep(5);
    expect(produced).toBe(0);
    await reader.read();
    await Bun.sleep(5);
    expect(produced).toBe(1);
    await reader.cancel();
  });

  test("a failing batch ends the download with an error, not a short success", async () => {
    async function* batches() {
      yield [[1]];
      throw new Error("the database went away");
    }
    const response = csvResponse("n.csv", ["n"], batches());
    expect(response.text()).rejects.toThrow("the database went away");
  });

  test("cancelling a download whose rows come from a plain iterator (no return) is fine", async () => {
    let calls = 0;
    const iterator: AsyncIterator<readonly (readonly number[])[]> = {
      next: async () => ({ done: false, value: [[calls++]] }),
    };
    const reader = csvResponse("n.csv", ["n"], iterator).body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    expect(calls).toBe(1);
  });
});

describe("keysetBatches", () => {
  test("asks for the first page, then the page after each next, until a page has none", async () => {
    const asked: (number | undefined)[] = [];
    const pages = new Map<number | undefined, { items: number[]; next: number | undefined }>([
      [undefined, { items: [1, 2], next: 2 }],
      [2, { items: [3, 4], next: 4 }],
      [4, { items: [5], next: undefined }],
    ]);
    const batches: unknown[] = [];
    for await (const batch of keysetBatches(
      async (cursor: number | undefined) => {
        asked.push(cursor);
        return pages.get(cursor)!;
      },
      (item: number) => [item, item * 10],
    ))
      batches.push(batch);
    expect(asked).toEqual([undefined, 2, 4]);
    expect(batches).toEqual([
      [
        [1, 10],
        [2, 20],
      ],
      [
        [3, 30],
        [4, 40],
      ],
      [[5, 50]],
    ]);
  });

  test("an empty first page is one empty batch", async () => {
    const batches = [];
    for await (const batch of keysetBatches(
      async () => ({ items: [], next: undefined }),
      (n: number) => [n],
    ))
      batches.push(batch);
    expect(batches).toEqual([[]]);
  });
});
