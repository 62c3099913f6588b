// Registration below HTTP: which field a refusal names, and what a re-registration keeps when a
// field is left out. Device authentication helpers at their edges.
import { describe, expect, test } from "bun:test";
import { apiKeyOf, authRow } from "../../modules/devices/device-auth";
import { parseRegistration, registerDevice } from "../../modules/devices/registration";
import { AppError } from "../../modules/platform/errors";
import { createTestDatabase } from "../helpers/database";
import { newMac } from "./helpers";

const { sql } = await createTestDatabase();
const options = { onlineWindowSeconds: 300 };

function refusal(body: unknown) {
  try {
    parseRegistration(body);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, code: error.code, details: error.details };
  }
  return "accepted";
}
const field = (name: string) => ({ status: 400, code: "invalid_request", details: { field: name } });

describe("parseRegistration", () => {
  test("names the first bad field, in the order mac_address, product_name, metadata", () => {
    expect(refusal({})).toEqual(field("mac_address"));
    expect(refusal({ mac_address: null })).toEqual(field("mac_address"));
    expect(refusal({ mac_address: 1 })).toEqual(field("mac_address"));
    expect(refusal({ mac_address: "nope", product_name: 1, metadata: 1 })).toEqual(field("mac_address"));
    expect(refusal({ mac_address: newMac(), product_name: 1, metadata: 1 })).toEqual(field("product_name"));
    expect(refusal({ mac_address: newMac(), product_name: "x".repeat(201) })).toEqual(field("product_name"));
    expect(refusal({ mac_address: newMac(), metadata: [1] })).toEqual(field("metadata"));
    expect(refusal([])).toMatchObject({ status: 400, code: "invalid_request", details: undefined });
  });

  test("each refusal says what the field must be; identity and enrolment fields are named too", () => {
    const message = (body: unknown) => {
      try {
        parseRegistration(body);
      } catch (error) {
        return (error as AppError).message;
      }
      return "accepted";
    };
    const mac = newMac();
    expect(message({})).toBe("mac_address is required");
    expect(message({ mac_address: null })).toBe("mac_address is required");
    // One message for a MAC address of the wrong type or form: the schema's (modules/devices/model.ts).
    expect(message({ mac_address: 1 })).toBe("mac_address must be a MAC address such as AA:BB:CC:DD:EE:FF");
    expect(message({ mac_address: mac, product_name: 1 })).toBe(
      "product_name must be a string of at most 200 characters",
    );
    expect(message({ mac_address: mac, metadata: [1] })).toBe("metadata must be a JSON object");
    expect(message({ mac_address: mac, device_secret: "short" })).toBe(
      "device_secret must be a string of 32 to 256 characters",
    );
    expect(message({ mac_address: mac, api_token: "" })).toBe(
      "api_token must be a string of 1 to 256 characters",
    );
    expect(message({ mac_address: mac, enrolment_token: "" })).toBe(
      "enrolment_token must be a string of 1 to 256 characters",
    );
    expect(message([])).toBe("The request body must be a JSON object");
    expect(refusal({ mac_address: mac, device_secret: 5 })).toEqual(field("device_secret"));
    expect(refusal({ mac_address: mac, api_token: "x".repeat(257) })).toEqual(field("api_token"));
    expect(refusal({ mac_address: mac, enrolment_token: 1 })).toEqual(field("enrolment_token"));
  });

  test("the product name is trimmed; a blank one is none", () => {
    expect(parseRegistration({ mac_address: newMac(), product_name: "  atom  " }).productName).toBe("atom");
    expect(parseRegistration({ mac_address: newMac(), product_name: "   " }).productName).toBeNull();
    expect(parseRegistration({ mac_address: "02:ab:cd:ef:01:23" }).macAddress).toBe("02:AB:CD:EF:01:23");
  });
});

describe("re-registration", () => {
  const schema = { product: "atom", type: "object", properties: { load: { type: "number" } } };

  test("keeps metadata, address, schema and product name that are left out; replaces what is sent", async () => {
    const mac = newMac();
    const secret = { device_secret: "s".repeat(32) };
    const first = await registerDevice(
      sql,
      {
        mac_address: mac,
        product_name: "atom",
        metadata: { ip_address: "10.0.0.5" },
        schema_definition: schema,
        ...secret,
      },
      options,
    );
    expect(first.created).toBe(true);
    const schemaHash = async () =>
      (
        await sql<{ h: string | null }[]>`select schema_hash as h from devices where id = ${first.device.id}`
      )[0]!.h;
    const firstHash = await schemaHash();
    expect(firstHash).not.toBeNull();
    const again = await registerDevice(sql, { mac_address: mac, ...secret }, options);
    expect(await schemaHash()).toBe(firstHash);
    expect(again.created).toBe(false);
    expect(again.device).toMatchObject({
      id: first.device.id,
      productName: "atom",
      metadata: { ip_address: "10.0.0.5" },
      ipv4Address: "10.0.0.5",
      schema,
    });
    const changed = await registerDevice(
      sql,
      {
        mac_address: mac,
        metadata: { ip_address: "10.0.0.6" },
        schema_definition: { ...schema, properties: { mem: { type: "number" } } },
        ...secret,
      },
      options,
    );
    const changedHash = await schemaHash();
    expect(changedHash).not.toBeNull();
    expect(changedHash).not.toBe(firstHash);
    expect(changed.device).toMatchObject({
      productName: "atom",
      metadata: { ip_address: "10.0.0.6" },
      ipv4Address: "10.0.0.6",
      schema: { properties: { mem: { type: "number" } } },
    });
    const cleared = await registerDevice(sql, { mac_address: mac, metadata: {}, ...secret }, options);
    expect(cleared.device).toMatchObject({ metadata: {}, ipv4Address: null });
  });

  test("another identity for a known MAC is 409 identity_conflict naming device_secret", async () => {
    const mac = newMac();
    await registerDevice(sql, { mac_address: mac, device_secret: "a".repeat(32) }, options);
    const error = await registerDevice(
      sql,
      { mac_address: mac, device_secret: "b".repeat(32) },
      options,
    ).catch((e: AppError) => e);
    expect(error).toMatchObject({
      status: 409,
      code: "identity_conflict",
      details: { field: "device_secret" },
    });
  });
});

describe("device authentication helpers", () => {
  test("a device id that is not a UUID is 404 device_not_found", async () => {
    expect(await authRow(sql, "not-a-uuid").catch((e: AppError) => `${e.status} ${e.code}`)).toBe(
      "404 device_not_found",
    );
  });

  test("api_key: a non-empty string from the query, nothing else", () => {
    expect(apiKeyOf({ api_key: "k" })).toBe("k");
    expect(apiKeyOf({ api_key: "" })).toBeUndefined();
    expect(apiKeyOf({ api_key: ["k"] })).toBeUndefined();
    expect(apiKeyOf({})).toBeUndefined();
  });
});
