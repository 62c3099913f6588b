CREATE TABLE "remote_access_leases" (
	"id" uuid PRIMARY KEY NOT NULL,
	"device_id" uuid NOT NULL,
	"owner_kind" text NOT NULL,
	"operator_id" uuid,
	"api_token_id" uuid,
	"holder" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"renewed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"max_expires_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"end_reason" text
);
--> statement-breakpoint
CREATE TABLE "remote_access_tickets" (
	"ticket_hash" text PRIMARY KEY NOT NULL,
	"lease_id" uuid NOT NULL,
	"device_id" uuid NOT NULL,
	"operator_id" uuid,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "tunnel_connections" (
	"device_id" uuid PRIMARY KEY NOT NULL,
	"instance" text NOT NULL,
	"connected_at" timestamp with time zone DEFAULT now() NOT NULL,
	"forwards" text[] DEFAULT '{}'::text[] NOT NULL
);
--> statement-breakpoint
ALTER TABLE "remote_access_leases" ADD CONSTRAINT "remote_access_leases_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "remote_access_tickets" ADD CONSTRAINT "remote_access_tickets_lease_id_remote_access_leases_id_fk" FOREIGN KEY ("lease_id") REFERENCES "public"."remote_access_leases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tunnel_connections" ADD CONSTRAINT "tunnel_connections_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "remote_access_leases_open_idx" ON "remote_access_leases" USING btree ("device_id") WHERE ended_at is null;--> statement-breakpoint
CREATE INDEX "remote_access_leases_expiry_idx" ON "remote_access_leases" USING btree ("expires_at") WHERE ended_at is null;