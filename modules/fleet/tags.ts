// Operators' tags: set and removed on one device or many at once, listed, and suggested to the search box.
import { LABELS_PER_DEVICE_MAX, labelKeyProblem, labelValueProblem } from "../../shared/labels";
import { deviceNames, setDeviceProfile } from "../devices/service";
import { announceFleet } from "../live/service";
import type { Sql } from "../platform/database";
import { AppError, badRequest } from "../platform/errors";

export interface Tag {
  key: string;
  value: string;
}

/** Most devices one bulk tag change may touch (as bulk approval). */
export const TAG_BATCH_MAX = 1000;

/** Checks tags and keeps one per key (the last value of a repeated key wins). */
function validTags(tags: Tag[], field = "tags"): Tag[] {
  const byKey = new Map<string, string>();
  for (const { key, value } of tags) {
    const problem = labelKeyProblem(key) ?? labelValueProblem(value);
    if (problem)
      throw badRequest(`${labelKeyProblem(key) ? `Tag key "${key}"` : `The value of ${key}`} ${problem}`, {
        field,
        key,
      });
    byKey.set(key, value);
  }
  if (byKey.size > LABELS_PER_DEVICE_MAX)
    throw badRequest(`At most ${LABELS_PER_DEVICE_MAX} tags at once`, { field });
  return [...byKey].map(([key, value]) => ({ key, value }));
}

/** `key=value` (or `key`: an empty value), as forms and the CLI write a tag. */
export function tagFromText(text: string): Tag {
  const eq = text.indexOf("=");
  return eq < 0
    ? { key: text.trim(), value: "" }
    : { key: text.slice(0, eq).trim(), value: text.slice(eq + 1) };
}

/** The devices of `ids` that exist (lower-case, unique), at most TAG_BATCH_MAX of them. */
async function existingDevices(sql: Sql, ids: string[]): Promise<string[]> {
  if (ids.length === 0) throw badRequest("Select at least one device", { field: "ids" });
  if (ids.length > TAG_BATCH_MAX)
    throw badRequest(`At most ${TAG_BATCH_MAX} devices at once`, { field: "ids" });
  return [...(await deviceNames(sql, ids)).keys()];
}

/**
 * Sets these tags on these devices (a key a device has already takes the new value), in one
 * transaction: when a device would end with more than LABELS_PER_DEVICE_MAX tags nothing changes
 * (409 tag_limit_exceeded). Returns the devices that exist (those changed).
 */
export async function addTags(sql: Sql, ids: string[], tags: Tag[]): Promise<string[]> {
  const wanted = validTags(tags);
  if (wanted.length === 0) throw badRequest("Give at least one tag", { field: "tags" });
  const devices = await existingDevices(sql, ids);
  if (devices.length === 0) return [];
  return sql.begin(async (tx) => {
    // Rows of one device are written in key order by every writer, so concurrent changes cannot deadlock.
    await tx`
      insert into device_tags (device_id, source, key, value)
      select d.id, 'operator', t.key, t.value
      from unnest(${devices}::uuid[]) d(id)
      cross join unnest(${wanted.map((t) => t.key)}::text[], ${wanted.map((t) => t.value)}::text[]) t(key, value)
      order by d.id, t.key
      on conflict (device_id, source, key) do update set value = excluded.value
        where device_tags.value is distinct from excluded.value`;
    const [over] = await tx<{ device_id: string; n: number }[]>`
      select device_id, count(*)::int as n from device_tags
      where device_id = any(${devices}::uuid[]) and source = 'operator'
      group by device_id having count(*) > ${LABELS_PER_DEVICE_MAX} limit 1`;
    if (over)
      throw new AppError(
        409,
        "tag_limit_exceeded",
        `A device may have at most ${LABELS_PER_DEVICE_MAX} tags; device ${over.device_id} would have ${over.n}`,
        { field: "tags", device_id: over.device_id },
      );
    await announceFleet(tx as unknown as Sql);
    return devices;
  }) as Promise<string[]>;
}

/** Removes the tags with these keys from these devices. Returns how many tags were removed. */
export async function removeTags(sql: Sql, ids: string[], keys: string[]): Promise<number> {
  const wanted = [...new Set(keys.map((k) => k.trim()))];
  if (wanted.length === 0) throw badRequest("Give at least one tag key", { field: "keys" });
  const devices = await existingDevices(sql, ids);
  const removed = await sql`
    delete from device_tags
    where device_id = any(${devices}::uuid[]) and source = 'operator' and key = any(${wanted}::text[])`;
  if (removed.count > 0) await announceFleet(sql);
  return removed.count;
}

/** A device's tags (operators'), by key. */
export async function deviceTagsOf(sql: Sql, id: string): Promise<Tag[]> {
  return sql<Tag[]>`
    select key, value from device_tags where device_id = ${id}::uuid and source = 'operator' order by key`;
}

/** Operators' tags of many devices at once (the JSON:API device resource shows them), by device id. */
export async function tagsOfDevices(sql: Sql, ids: string[]): Promise<Map<string, Tag[]>> {
  const tags = new Map<string, Tag[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return tags;
  const rows = await sql<(Tag & { device_id: string })[]>`select device_id, key, value from device_tags
    where device_id = any(${ids}::uuid[]) and source = 'operator' order by device_id, key`;
  for (const { device_id, key, value } of rows) tags.get(device_id)?.push({ key, value });
  return tags;
}

/**
 * The labels a device's agent declared (a registration's, already checked), as its `agent` rows of
 * device_tags: rows of keys it no longer declares go, the others are set. Idempotent: every
 * registration brings the whole set again.
 */
export async function syncDeclaredLabels(sql: Sql, deviceId: string, labels: Record<string, string>) {
  const keys = Object.keys(labels);
  await sql.begin(async (tx) => {
    const gone = await tx`delete from device_tags where device_id = ${deviceId}::uuid and source = 'agent'
      and not (key = any(${keys}::text[]))`;
    // Only labels that changed (a row written): a registration repeating the same set refreshes nothing.
    const set = await tx`
      insert into device_tags (device_id, source, key, value)
      select ${deviceId}::uuid, 'agent', k, v
      from unnest(${keys}::text[], ${Object.values(labels)}::text[]) l(k, v) order by k
      on conflict (device_id, source, key) do update set value = excluded.value
        where device_tags.value is distinct from excluded.value`;
    if (gone.count + set.count > 0) await announceFleet(tx as unknown as Sql);
  });
}

const SUGGESTIONS_MAX = 50;

/**
 * Tag keys starting with `prefix` (operators' tags and agents' labels), or, with `key`, that key's
 * values starting with `prefix`: at most 50, sorted. A skip scan of device_tags_key_value_idx (one
 * index probe per distinct key or value, however many devices).
 */
export async function tagSuggestions(sql: Sql, input: { key?: string; prefix?: string }): Promise<string[]> {
  const prefix = input.prefix ?? "";
  const upper = `${prefix}\u{10ffff}`;
  const rows = input.key
    ? await sql<{ v: string }[]>`
        with recursive walk(v) as (
          (select value from device_tags where key = ${input.key} and value >= ${prefix} and value < ${upper}
            order by value limit 1)
          union all
          select (select value from device_tags where key = ${input.key} and value > walk.v and value < ${upper}
            order by value limit 1) from walk where walk.v is not null)
        select v from walk where starts_with(v, ${prefix}) limit ${SUGGESTIONS_MAX}`
    : await sql<{ v: string }[]>`
        with recursive walk(v) as (
          (select key from device_tags where key >= ${prefix} and key < ${upper} order by key limit 1)
          union all
          select (select key from device_tags where key > walk.v and key < ${upper} order by key limit 1)
          from walk where walk.v is not null)
        select v from walk where starts_with(v, ${prefix}) limit ${SUGGESTIONS_MAX}`;
  return rows.map((r) => r.v);
}

/**
 * Sets a device's display name and notes (devices' `setDeviceProfile`), and refreshes open device
 * lists: the name is what they show. Returns the values before, or undefined for no such device.
 */
export async function setProfile(sql: Sql, id: string, profile: Parameters<typeof setDeviceProfile>[2]) {
  const before = await setDeviceProfile(sql, id, profile);
  if (before) await announceFleet(sql);
  return before;
}
