import { Type } from "@sinclair/typebox";
import { listDocument, oneDocument, pageQuery, Related, resourceSchema, Time } from "../jsonapi/model";
import { JsonObject } from "../platform/schemas";

// The JSON:API telemetry_event resource (jsonapi.ts).

export const TelemetryListQuery = Type.Object(
  {
    "filter[device_id]": Type.Optional(Type.String({ description: "One device's events" })),
    "filter[from]": Type.Optional(Type.String({ description: "ISO 8601, inclusive" })),
    "filter[to]": Type.Optional(Type.String({ description: "ISO 8601, exclusive" })),
    ...pageQuery(1000),
  },
  { additionalProperties: true },
);

export const TelemetryResource = resourceSchema(
  "telemetry_event",
  Type.Object({ device_id: Type.String({ format: "uuid" }), recorded_at: Time, payload: JsonObject }),
  Type.Object({ device: Related("device") }),
);
export const TelemetryListDocument = listDocument(TelemetryResource);
export const TelemetryDocument = oneDocument(TelemetryResource);
