-- Which devices each heartbeat batch accepted, stamped with the now() it wrote to their last_seen_at
-- (device_sightings, 15 minutes), and the latest sighting of each device silent for longer
-- (device_last_sightings): the device list finds the most recently seen devices and who is online
-- from them, without an index on last_seen_at (which would make every heartbeat's device update
-- non-HOT). See modules/devices/sightings.ts.
CREATE TABLE "device_last_sightings" (
	"device_id" uuid PRIMARY KEY NOT NULL,
	"seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "device_sightings" (
	"seen_at" timestamp with time zone NOT NULL,
	"device_ids" uuid[] NOT NULL
);
--> statement-breakpoint
ALTER TABLE "device_last_sightings" ADD CONSTRAINT "device_last_sightings_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_last_sightings_seen_at_idx" ON "device_last_sightings" USING btree ("seen_at","device_id");--> statement-breakpoint
CREATE INDEX "device_sightings_seen_at_idx" ON "device_sightings" USING btree ("seen_at");--> statement-breakpoint
-- The device list filtered by approval and product together, newest first, and its count (10,001 at most).
CREATE INDEX "devices_approval_product_idx" ON "devices" USING btree ("approval_status","product_name","created_at","id");--> statement-breakpoint
-- Every device seen before the upgrade gets its latest sighting, so the list is right from the upgrade on.
INSERT INTO "device_last_sightings" ("device_id", "seen_at")
	SELECT "id", "last_seen_at" FROM "devices" WHERE "last_seen_at" IS NOT NULL;
