import { describe, expect, test } from "bun:test";
import {
  approveDevices,
  getDevice,
  listDevices,
  rejectDevices,
  updateDevice,
} from "../../modules/devices/service";
import { startTestApp } from "../helpers/app";
import { markSeen } from "../helpers/seen";
import { json, newMac, register } from "./helpers";

const app = await startTestApp();
const sql = app.database.sql;
const WINDOW = { onlineWindowSeconds: 300 };

describe("approval", () => {
  test("bulk approval changes only devices still pending, in one statement", async () => {
    const a = (await register(app)).body.data.id;
    const b = (await register(app)).body.data.id;
    const c = (await register(app)).body.data.id;
    await rejectDevices(sql, [c]);
    const changed = await approveDevices(sql, [a, b, c, crypto.randomUUID(), "not-a-uuid"]);
    expect(changed.sort()).toEqual([a, b].sort());
    expect((await getDevice(sql, a, WINDOW))!.approvalStatus).toBe("approved");
    expect((await getDevice(sql, c, WINDOW))!.approvalStatus).toBe("rejected");
    // Approved devices are not rejected by a later bulk reject.
    expect(await rejectDevices(sql, [a, b])).toEqual([]);
    expect(approveDevices(sql, [])).rejects.toThrow("Select at least one device");
  });

  test("a bulk approval racing a bulk rejection: each device ends in exactly one state, changed once", async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, async () => (await register(app)).body.data.id));
    const [approved, rejected] = await Promise.all([
      approveDevices(sql, ids),
      rejectDevices(sql, [...ids].reverse()),
    ]);
    expect(approved.length + rejected.length).toBe(20);
    expect(new Set([...approved, ...rejected]).size).toBe(20);
  });

  test("approval transitions: pending → approved | rejected, approved → rejected (revocation) only", async () => {
    const id = (await register(app)).body.data.id;
    const approved = await updateDevice(sql, id, { approvalStatus: "approved" }, WINDOW);
    expect(approved!.approvalStatus).toBe("approved");
    expect(approved!.approvalChangedAt).toBeInstanceOf(Date);
    expect(updateDevice(sql, id, { approvalStatus: "pending" }, WINDOW)).rejects.toThrow(
      "Cannot change approval",
    );
    expect(
      (await updateDevice(sql, id, { approvalStatus: "approved", productName: "renamed" }, WINDOW))!
        .productName,
    ).toBe("renamed");
    const revoked = await updateDevice(sql, id, { approvalStatus: "rejected" }, WINDOW);
    expect(revoked).toMatchObject({ approvalStatus: "rejected", hasApiToken: false });
    expect(updateDevice(sql, id, { approvalStatus: "approved" }, WINDOW)).rejects.toThrow(
      "Cannot change approval from rejected to approved",
    );
  });

  test("POST /api/v1/devices/approval: operators may, viewers may not", async () => {
    const id = (await register(app)).body.data.id;
    const body = { ids: [id], approval_status: "approved" };
    const viewer = await app.fetch("/api/v1/devices/approval", {
      ...json(body),
      headers: { "content-type": "application/json", authorization: `Bearer ${await app.token("viewer")}` },
    });
    expect(viewer.status).toBe(403);
    const anonymous = await app.fetch("/api/v1/devices/approval", json(body));
    expect(anonymous.status).toBe(401);
    const operator = await app.fetch("/api/v1/devices/approval", {
      ...json(body),
      headers: { "content-type": "application/json", authorization: `Bearer ${await app.token("operator")}` },
    });
    expect(operator.status).toBe(200);
    expect(await operator.json()).toEqual({ data: { changed_ids: [id], changed_count: 1 } });
    const bad = await app.fetch("/api/v1/devices/approval", {
      ...json({ ids: [id], approval_status: "pending" }),
      headers: { "content-type": "application/json", authorization: `Bearer ${await app.token("operator")}` },
    });
    expect(bad.status).toBe(400);
  });
});

describe("GET /api/v1/devices", () => {
  test("filters, meta.active_filters and keyset pagination", async () => {
    const product = `prod-${crypto.randomUUID().slice(0, 8)}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await register(app, { product_name: product })).body.data.id);
    await approveDevices(sql, ids.slice(0, 3));
    await markSeen(sql, ids[0]!, 0);
    await markSeen(sql, ids[1]!, 600);
    const token = await app.token("viewer");
    const get = async (query: string) => {
      const response = await app.fetch(`/api/v1/devices?${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as {
        data: { id: string; online: boolean }[];
        meta: { active_filters: Record<string, string>; next_cursor: string | null };
      };
    };
    const approved = await get(`product=${product}&approval_status=approved&approval_status_ignored=1`);
    expect(approved.data.map((d) => d.id).sort()).toEqual(ids.slice(0, 3).sort());
    expect(approved.meta.active_filters).toEqual({ product, approval_status: "approved" });
    const online = await get(`product=${product}&connectivity_status=online`);
    expect(online.data.map((d) => d.id)).toEqual([ids[0]!]);
    expect(online.data[0]!.online).toBe(true);
    const offline = await get(`product=${product}&connectivity_status=offline`);
    expect(offline.data.length).toBe(4);
    const ignored = await get(`product=${product}&approval_status=bogus`);
    expect(ignored.meta.active_filters).toEqual({ product });
    expect(ignored.data.length).toBe(5);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await get(`product=${product}&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((d) => d.id));
      cursor = page.meta.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    const bySearch = await get(`search=${ids[2]!}`);
    expect(bySearch.data.map((d) => d.id)).toEqual([ids[2]!]);
  });

  test("sorting by MAC with pagination, and search by partial MAC", async () => {
    const mac = newMac();
    const id = (await register(app, { mac_address: mac })).body.data.id;
    const part = mac.replaceAll(":", "").slice(4, 10).toLowerCase();
    const list = await listDevices(sql, { ...WINDOW, search: part });
    expect(list.devices.map((d) => d.id)).toContain(id);
    const sorted: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listDevices(sql, { ...WINDOW, sort: "mac_address", limit: 3, cursor });
      sorted.push(...page.devices.map((d) => d.macAddress));
      cursor = page.nextCursor;
    } while (cursor);
    expect(sorted).toEqual([...sorted].sort());
    expect(new Set(sorted).size).toBe(sorted.length);
  });

  test("bad parameters and access", async () => {
    const token = await app.token("viewer");
    const headers = { authorization: `Bearer ${token}` };
    expect((await app.fetch("/api/v1/devices")).status).toBe(401);
    expect((await app.fetch("/api/v1/devices?limit=0", { headers })).status).toBe(400);
    expect((await app.fetch("/api/v1/devices?sort=password", { headers })).status).toBe(400);
    const badCursor = await app.fetch("/api/v1/devices?cursor=%%%", { headers });
    expect(badCursor.status).toBe(400);
  });

  test("fleet counts", async () => {
    const before = await app.services.fleetCounts.counts(300);
    const id = (await register(app)).body.data.id;
    await approveDevices(sql, [id]);
    await markSeen(sql, id, 0);
    const after = await app.services.fleetCounts.counts(300);
    expect(after.total).toBe(before.total + 1);
    expect(after.approved).toBe(before.approved + 1);
    expect(after.online).toBe(before.online + 1);
    expect(after.online + after.offline).toBe(after.approved);
  });
});
