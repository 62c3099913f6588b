CREATE TABLE "device_tags" (
	"device_id" uuid NOT NULL,
	"source" text DEFAULT 'operator' NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "device_tags_pkey" PRIMARY KEY("device_id","source","key")
);
--> statement-breakpoint
CREATE TABLE "saved_views" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"query" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "labels" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "display_name" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "notes" text;--> statement-breakpoint
ALTER TABLE "device_tags" ADD CONSTRAINT "device_tags_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "device_tags_key_value_idx" ON "device_tags" USING btree ("key","value","device_id");--> statement-breakpoint
CREATE UNIQUE INDEX "saved_views_name_lower_idx" ON "saved_views" USING btree (lower("name"));--> statement-breakpoint
CREATE INDEX "devices_name_idx" ON "devices" USING btree (coalesce("display_name", device_display_name("metadata", "mac_address")),"id");--> statement-breakpoint
-- Written by hand (docs/fleet.md): the name sort now reads devices_name_idx, which knows operators'
-- display names; the old index on the reported name alone has no reader left.
DROP INDEX IF EXISTS "devices_console_name_idx";
--> statement-breakpoint
-- Free text also matches operators' display names: a trigram index beside devices_console_search_idx
-- (a BitmapOr of the two), when pg_trgm is available as in migration 0005.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    EXECUTE 'CREATE INDEX IF NOT EXISTS devices_display_name_search_idx ON devices USING gin '
      || '(lower(display_name) gin_trgm_ops) WHERE display_name IS NOT NULL';
  END IF;
END
$$;
