// A terminal recording's chunks against a database that refuses writes for a while: a trigger on the
// chunks table fails the next N inserts (counted by a sequence, which a rollback does not undo).
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../modules/platform/logger";
import { CHUNK_RETRY_MS, Recorder, readRecording } from "../../modules/terminal/recording";
import { newMac } from "../devices/helpers";
import { createTestDatabase } from "../helpers/database";

const { sql } = await createTestDatabase();
const [device] = await sql<
  { id: string }[]
>`insert into devices (mac_address) values (${newMac()}) returning id`;

await sql.unsafe(`
  create sequence chunk_failures;
  create table chunk_failure_limit (n int not null);
  insert into chunk_failure_limit values (0);
  create function fail_chunk_inserts() returns trigger language plpgsql as $$
  begin
    if nextval('chunk_failures') <= (select n from chunk_failure_limit) then
      raise exception 'chunk store unavailable (test)';
    end if;
    return new;
  end $$;
  create trigger fail_chunk_inserts before insert on terminal_recording_chunks
    for each row execute function fail_chunk_inserts();`);

/** The next `count` chunk inserts fail. */
async function failNextInserts(count: number) {
  await sql`select setval('chunk_failures', 1, false)`;
  await sql`update chunk_failure_limit set n = ${count}`;
}

async function newSession(): Promise<string> {
  const id = Bun.randomUUIDv7();
  await sql`insert into terminal_sessions (id, ref_hash, device_id, operator_id, operator_email, key_fingerprint, expires_at)
    values (${id}, ${`ref-${id}`}, ${device!.id}::uuid, ${Bun.randomUUIDv7()}::uuid, 'op@example.test', 'SHA256:test',
      now() + interval '1 hour')`;
  return id;
}

function record(sessionId: string, logger?: ReturnType<typeof createLogger>) {
  return new Recorder(sql, sessionId, { columns: 80, rows: 24, title: "t", recordsInput: false }, logger);
}

describe("terminal recording chunks", () => {
  test("a chunk the database refuses is written again: nothing is missing and the order holds", async () => {
    const sessionId = await newSession();
    const recorder = record(sessionId);
    recorder.output("first ");
    await recorder.flush();
    await failNextInserts(2);
    recorder.output("second ");
    const second = recorder.flush();
    recorder.output("third");
    await recorder.close();
    await second;
    const text = (await readRecording(sql, sessionId))!;
    const outputs = text
      .trim()
      .split("\n")
      .slice(1)
      .map((line) => JSON.parse(line)[2]);
    expect(outputs).toEqual(["first ", "second ", "third"]);
    const [row] = await sql`select recording_bytes, (select count(*)::int from terminal_recording_chunks
      where session_id = ${sessionId}::uuid) as chunks from terminal_sessions where id = ${sessionId}::uuid`;
    expect(row!.chunks).toBe(3);
    expect(Number(row!.recording_bytes)).toBe(Buffer.byteLength(text));
  });

  test("a database away for longer than the retries: the chunk is left out with a warning, later ones are kept", async () => {
    await failNextInserts(0);
    const sessionId = await newSession();
    const lines: string[] = [];
    const logger = createLogger("warn", {}, "json", { write: (line: string) => lines.push(line) });
    const recorder = record(sessionId, logger);
    recorder.output("kept before ");
    await recorder.flush();
    await failNextInserts(CHUNK_RETRY_MS.length + 1);
    recorder.output("lost ");
    await recorder.flush();
    recorder.output("kept after");
    await recorder.close();
    const text = (await readRecording(sql, sessionId))!;
    expect(text).toContain("kept before ");
    expect(text).toContain("kept after");
    expect(text).not.toContain("lost ");
    const warning = JSON.parse(lines.find((line) => line.includes("left out"))!);
    expect(warning).toMatchObject({ session_id: sessionId, seq: 1, error: "chunk store unavailable (test)" });
  }, 20_000);
});
