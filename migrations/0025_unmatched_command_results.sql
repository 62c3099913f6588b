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
ALTER TABLE "unmatched_command_results" ADD CONSTRAINT "unmatched_command_results_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "unmatched_command_results_device_idx" ON "unmatched_command_results" USING btree ("device_id","received_at");