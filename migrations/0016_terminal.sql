CREATE TABLE "device_host_keys" (
	"device_id" uuid PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"pinned_at" timestamp with time zone DEFAULT now() NOT NULL,
	"pinned_by" text NOT NULL,
	"reported_key" text,
	"reported_fingerprint" text,
	"reported_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "terminal_recording_chunks" (
	"session_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	CONSTRAINT "terminal_recording_chunks_session_id_seq_pk" PRIMARY KEY("session_id","seq")
);
--> statement-breakpoint
CREATE TABLE "terminal_sessions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"ref_hash" text NOT NULL,
	"device_id" uuid NOT NULL,
	"operator_id" uuid NOT NULL,
	"operator_email" text NOT NULL,
	"owned_lease_id" uuid,
	"command_id" uuid,
	"private_key" "bytea",
	"key_fingerprint" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"connected_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"end_reason" text,
	"exit_status" integer,
	"records_input" boolean DEFAULT false NOT NULL,
	"recording_bytes" bigint DEFAULT 0 NOT NULL,
	"stored_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "terminal_sessions_ref_hash_unique" UNIQUE("ref_hash")
);
--> statement-breakpoint
ALTER TABLE "device_host_keys" ADD CONSTRAINT "device_host_keys_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "terminal_recording_chunks" ADD CONSTRAINT "terminal_recording_chunks_session_id_terminal_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."terminal_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "terminal_sessions" ADD CONSTRAINT "terminal_sessions_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "terminal_sessions_device_idx" ON "terminal_sessions" USING btree ("device_id","created_at");--> statement-breakpoint
CREATE INDEX "terminal_sessions_created_idx" ON "terminal_sessions" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "terminal_sessions_open_idx" ON "terminal_sessions" USING btree ("device_id") WHERE ended_at is null;