-- Which devices each heartbeat batch accepted, stamped with the now() it wrote to their last_seen_at:
-- the device list finds the most recently seen devices and who is online from it, without an index
-- on last_seen_at (which would make every heartbeat's device update non-HOT). See modules/devices/sightings.ts.
CREATE TABLE "device_sightings" (
	"seen_at" timestamp with time zone NOT NULL,
	"device_ids" uuid[] NOT NULL
);
--> statement-breakpoint
CREATE INDEX "device_sightings_seen_at_idx" ON "device_sightings" USING btree ("seen_at");--> statement-breakpoint
-- The device list filtered by approval and product together, newest first, and its count (10,001 at most).
CREATE INDEX "devices_approval_product_idx" ON "devices" USING btree ("approval_status","product_name","created_at","id");--> statement-breakpoint
-- Devices seen within the sightings' retention (15 minutes) get theirs, so the list is right from the upgrade on.
INSERT INTO "device_sightings" ("seen_at", "device_ids")
	SELECT "last_seen_at", array_agg("id") FROM "devices"
	WHERE "last_seen_at" >= now() - interval '15 minutes' GROUP BY "last_seen_at";
