CREATE TYPE "public"."command_status" AS ENUM('queued', 'delivered', 'succeeded', 'failed', 'expired');--> statement-breakpoint
CREATE TYPE "public"."command_type" AS ENUM('list_scripts', 'install_script', 'remove_script', 'ssh_authorize', 'ssh_revoke');--> statement-breakpoint
CREATE TYPE "public"."device_approval_status" AS ENUM('pending', 'approved', 'rejected');--> statement-breakpoint
CREATE TABLE "pending_commands" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"device_id" uuid NOT NULL,
	"type" "command_type" NOT NULL,
	"args" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"payload" jsonb,
	"payload_ref" text,
	"public_key" text,
	"status" "command_status" DEFAULT 'queued' NOT NULL,
	"queued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"delivered_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"output" jsonb,
	"error" text,
	"queued_by" text
);
--> statement-breakpoint
CREATE TABLE "devices" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"mac_address" text NOT NULL,
	"product_name" text,
	"approval_status" "device_approval_status" DEFAULT 'pending' NOT NULL,
	"api_token_hash" text,
	"token_issued_at" timestamp with time zone,
	"ipv4_address" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"schema" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"schema_hash" text,
	"last_seen_at" timestamp with time zone,
	"remote_access_requested" boolean DEFAULT false NOT NULL,
	"heartbeat_window_started_at" timestamp with time zone,
	"heartbeat_window_count" integer DEFAULT 0 NOT NULL,
	"approval_changed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "devices_mac_address_unique" UNIQUE("mac_address")
);
--> statement-breakpoint
CREATE TABLE "telemetry_events" (
	"id" uuid NOT NULL,
	"device_id" uuid NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	"payload" jsonb NOT NULL,
	CONSTRAINT "telemetry_events_pkey" PRIMARY KEY("id","recorded_at")
) PARTITION BY RANGE ("recorded_at");
--> statement-breakpoint
ALTER TABLE "pending_commands" ADD CONSTRAINT "pending_commands_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pending_commands_claim_idx" ON "pending_commands" USING btree ("device_id","queued_at","id") WHERE "pending_commands"."status" = 'queued';--> statement-breakpoint
CREATE INDEX "pending_commands_device_idx" ON "pending_commands" USING btree ("device_id","queued_at");--> statement-breakpoint
CREATE INDEX "pending_commands_expiry_idx" ON "pending_commands" USING btree ("expires_at") WHERE "pending_commands"."status" = 'queued';--> statement-breakpoint
CREATE INDEX "pending_commands_payload_ref_idx" ON "pending_commands" USING btree ("device_id","payload_ref");--> statement-breakpoint
CREATE INDEX "devices_created_at_idx" ON "devices" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "devices_approval_status_idx" ON "devices" USING btree ("approval_status","created_at");--> statement-breakpoint
CREATE INDEX "devices_product_name_idx" ON "devices" USING btree ("product_name");--> statement-breakpoint
CREATE INDEX "telemetry_events_device_time_idx" ON "telemetry_events" USING btree ("device_id","recorded_at");