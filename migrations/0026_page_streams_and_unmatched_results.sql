CREATE TABLE "unmatched_command_results" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"device_id" uuid NOT NULL,
	"command_id" text NOT NULL,
	"reason" text NOT NULL,
	"status" text NOT NULL,
	"output" jsonb,
	"error" text,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "remote_access_page_streams" (
	"id" uuid PRIMARY KEY NOT NULL,
	"lease_id" uuid NOT NULL,
	"opened_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "unmatched_command_results" ADD CONSTRAINT "unmatched_command_results_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "remote_access_page_streams" ADD CONSTRAINT "remote_access_page_streams_lease_id_remote_access_leases_id_fk" FOREIGN KEY ("lease_id") REFERENCES "public"."remote_access_leases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "unmatched_command_results_device_idx" ON "unmatched_command_results" USING btree ("device_id","received_at");--> statement-breakpoint
CREATE INDEX "remote_access_page_streams_lease_idx" ON "remote_access_page_streams" USING btree ("lease_id");--> statement-breakpoint
CREATE INDEX "remote_access_page_streams_expiry_idx" ON "remote_access_page_streams" USING btree ("expires_at");