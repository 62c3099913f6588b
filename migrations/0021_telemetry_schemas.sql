-- Telemetry schemas move off the device row, once per content (modules/devices/schema.ts): every
-- heartbeat rewrites its device row, and the schema inline made it ~950 bytes instead of ~250.
-- Existing rows shrink as heartbeats rewrite them; their pages are reused (VACUUM FULL would return
-- them to the operating system, not needed).
CREATE TABLE "telemetry_schemas" (
	"hash" text PRIMARY KEY NOT NULL,
	"schema" jsonb NOT NULL,
	"announced_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
INSERT INTO "telemetry_schemas" ("hash", "schema")
SELECT DISTINCT ON ("schema_hash") "schema_hash", "schema" FROM "devices"
WHERE "schema_hash" IS NOT NULL AND "schema" <> '{}'::jsonb
ORDER BY "schema_hash", "updated_at" DESC;--> statement-breakpoint
UPDATE "devices" SET "schema_hash" = NULL
WHERE "schema_hash" IS NOT NULL AND "schema_hash" NOT IN (SELECT "hash" FROM "telemetry_schemas");--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_schema_hash_telemetry_schemas_hash_fk" FOREIGN KEY ("schema_hash") REFERENCES "public"."telemetry_schemas"("hash") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "devices_schema_hash_idx" ON "devices" USING btree ("schema_hash");--> statement-breakpoint
ALTER TABLE "devices" DROP COLUMN "schema";
