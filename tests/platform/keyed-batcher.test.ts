import { describe, expect, test } from "bun:test";
import { KeyedBatcher, type KeyedBatcherOptions } from "../../modules/platform/keyed-batcher";

type Item = { key: string; n: number };

/** A batcher whose batches are recorded and finish when the test says so. */
function recording(options: KeyedBatcherOptions, fail?: (items: Item[]) => boolean) {
  const batches: Item[][] = [];
  const release: (() => void)[] = [];
  let running = 0;
  let mostRunning = 0;
  const batcher = new KeyedBatcher<Item, string>(async (items) => {
    batches.push(items);
    running++;
    mostRunning = Math.max(mostRunning, running);
    await new Promise<void>((resolve) => release.push(resolve));
    running--;
    if (fail?.(items)) throw new Error(`failed: ${items.map((i) => i.n).join(",")}`);
    return items.map((item) => `${item.key}#${item.n}`);
  }, options);
  const submit = (key: string, n: number) => batcher.submit(key, { key, n });
  /** Lets every batch started so far finish, until none is left. */
  const drain = async () => {
    for (let idle = 0, i = 0; idle < 3 && i < 200; i++) {
      idle = release.length === 0 ? idle + 1 : 0;
      while (release.length) release.shift()!();
      await Bun.sleep(1);
    }
  };
  return { batcher, batches, submit, drain, mostRunning: () => mostRunning };
}

describe("KeyedBatcher", () => {
  test("a lone item runs at once; items arriving meanwhile are gathered, at most maxSize a batch", async () => {
    const { batches, submit, drain } = recording({ maxSize: 3, maxInFlight: 1 });
    const first = submit("a", 1);
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1]]);
    const rest = [2, 3, 4, 5, 6].map((n) => submit(`k${n}`, n));
    await drain();
    expect(await Promise.all([first, ...rest])).toEqual(["a#1", "k2#2", "k3#3", "k4#4", "k5#5", "k6#6"]);
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1], [2, 3, 4], [5, 6]]);
  });

  test("one key's items never share a batch nor run at once, and keep their order", async () => {
    const { batches, submit, drain, mostRunning } = recording({ maxSize: 10, maxInFlight: 3 });
    const results = [submit("a", 1), submit("a", 2), submit("b", 3), submit("a", 4), submit("c", 5)];
    await drain();
    expect(await Promise.all(results)).toEqual(["a#1", "a#2", "b#3", "a#4", "c#5"]);
    const order = batches
      .flat()
      .filter((i) => i.key === "a")
      .map((i) => i.n);
    expect(order).toEqual([1, 2, 4]);
    for (const batch of batches) expect(new Set(batch.map((i) => i.key)).size).toBe(batch.length);
    expect(mostRunning()).toBeLessThanOrEqual(3);
  });

  test("at most maxInFlight batches run at once", async () => {
    const { submit, drain, mostRunning } = recording({ maxSize: 1, maxInFlight: 2 });
    const all = Array.from({ length: 8 }, (_, n) => submit(`k${n}`, n));
    await drain();
    await Promise.all(all);
    expect(mostRunning()).toBe(2);
  });

  test("a batch starts beside a running one only once overlap.at items wait; fewer join the next", async () => {
    const { batches, submit, drain, mostRunning } = recording({
      maxSize: 10,
      maxInFlight: 2,
      overlap: { at: 3, afterMs: 60_000 },
    });
    const all = [submit("a", 1)]; // alone: runs at once
    all.push(submit("b", 2), submit("c", 3)); // two wait: no second batch yet
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1]]);
    all.push(submit("d", 4)); // the third: a second batch starts beside the first
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1], [2, 3, 4]]);
    all.push(submit("e", 5)); // one waits while two run, then joins the next batch
    await drain();
    expect(await Promise.all(all)).toEqual(["a#1", "b#2", "c#3", "d#4", "e#5"]);
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1], [2, 3, 4], [5]]);
    expect(mostRunning()).toBe(2);
  });

  test("items waiting below overlap.at run as soon as the running batch ends", async () => {
    const { batches, submit, drain } = recording({
      maxSize: 10,
      maxInFlight: 2,
      overlap: { at: 100, afterMs: 60_000 },
    });
    const all = [1, 2, 3].map((n) => submit(`k${n}`, n));
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1]]);
    await drain();
    expect(await Promise.all(all)).toEqual(["k1#1", "k2#2", "k3#3"]);
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1], [2, 3]]);
  });

  test("fewer than overlap.at items start a batch beside a slow one once the oldest waited overlap.afterMs", async () => {
    const { batches, submit, drain } = recording({
      maxSize: 10,
      maxInFlight: 2,
      overlap: { at: 100, afterMs: 60 },
    });
    const all = [submit("a", 1), submit("b", 2)];
    await Bun.sleep(20);
    all.push(submit("c", 3));
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1]]);
    await Bun.sleep(80); // b has waited 60 ms: it starts, c with it, though the first batch still runs
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[1], [2, 3]]);
    await drain();
    expect(await Promise.all(all)).toEqual(["a#1", "b#2", "c#3"]);
  });

  test("lingerMs: with nothing running, a steady stream's items wait for company; a quiet stream's run at once", async () => {
    const { batches, submit, drain } = recording({
      maxSize: 10,
      maxInFlight: 1,
      overlap: { at: 4, afterMs: 60_000 },
      lingerMs: 300,
    });
    const shapes = () => batches.map((b) => b.map((i) => i.n));
    const all = [submit("quiet", 0)];
    expect(shapes()).toEqual([[0]]); // the first item of a stream: nothing says company is coming
    await drain();
    // Thirty items close together: the stream is steady now (they ran as the running batch allowed).
    for (let n = 1; n <= 30; n++) all.push(submit(`k${n}`, n));
    await drain();
    const before = batches.length;
    all.push(submit("a", 31), submit("b", 32), submit("c", 33));
    await Bun.sleep(100);
    expect(batches.length).toBe(before); // waiting for company, nothing running
    await Bun.sleep(300); // the oldest waited 300 ms: the three start together
    expect(shapes().slice(before)).toEqual([[31, 32, 33]]);
    await drain();
    // overlap.at items waiting start at once, linger or not.
    all.push(submit("d", 34), submit("e", 35), submit("f", 36), submit("g", 37));
    expect(shapes().at(-1)).toEqual([34, 35, 36, 37]);
    await drain();
    expect((await Promise.all(all)).length).toBe(38);
  });

  test("a failed batch is run again item by item: only the failing item gets the error", async () => {
    const { submit, drain, batches } = recording({ maxSize: 10, maxInFlight: 1 }, (items) =>
      items.some((i) => i.n === 3),
    );
    const first = submit("x", 0);
    const results = [1, 2, 3, 4].map((n) => submit(`k${n}`, n).then(String, (e: Error) => e.message));
    await drain();
    expect(await first).toBe("x#0");
    expect(await Promise.all(results)).toEqual(["k1#1", "k2#2", "failed: 3", "k4#4"]);
    expect(batches.map((b) => b.map((i) => i.n))).toEqual([[0], [1, 2, 3, 4], [1], [2], [3], [4]]);
  });

  test("a batch answering fewer results than items fails each of its items, and the batcher goes on", async () => {
    let calls = 0;
    const batcher = new KeyedBatcher<number, number>(
      async (items) => {
        calls++;
        return calls === 1 ? items.slice(1) : items.map((n) => n * 10);
      },
      { maxSize: 4, maxInFlight: 1 },
    );
    const outcomes = await Promise.all(
      [1, 2].map((n) =>
        batcher.submit(`k${n}`, n).then(
          (value) => `ok ${value}`,
          (error: Error) => error.message,
        ),
      ),
    );
    expect(outcomes[0]).toBe("a batch of 1 answered 0 results");
    expect(outcomes[1]).toBe("ok 20");
    expect(await batcher.submit("k3", 3)).toBe(30);
  });
});
