ALTER TABLE "alert_rules" ADD COLUMN "scope_type" text DEFAULT 'product' NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_rules" ADD COLUMN "scope_view_id" uuid;--> statement-breakpoint
ALTER TABLE "alert_rules" ADD COLUMN "scope_query" text;--> statement-breakpoint
ALTER TABLE "custom_reports" ADD COLUMN "scope_view_id" uuid;--> statement-breakpoint
ALTER TABLE "alert_rules" ADD CONSTRAINT "alert_rules_scope_view_id_saved_views_id_fk" FOREIGN KEY ("scope_view_id") REFERENCES "public"."saved_views"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "custom_reports" ADD CONSTRAINT "custom_reports_scope_view_id_saved_views_id_fk" FOREIGN KEY ("scope_view_id") REFERENCES "public"."saved_views"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
-- A rule with a device list was "these devices of the product"; it is now the devices scope.
UPDATE "alert_rules" SET "scope_type" = 'devices' WHERE "device_ids" IS NOT NULL;
