CREATE TABLE "e2e_environment_locks" (
	"environment_label" text PRIMARY KEY NOT NULL,
	"holder" uuid NOT NULL,
	"run_id" uuid,
	"idempotency_key" text,
	"runner_id" text NOT NULL,
	"acquired_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "e2e_journey_logs" (
	"run_id" uuid NOT NULL,
	"journey_id" text NOT NULL,
	"content" text,
	"bytes" integer NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"pruned_at" timestamp with time zone,
	CONSTRAINT "e2e_journey_logs_run_id_journey_id_pk" PRIMARY KEY("run_id","journey_id")
);
--> statement-breakpoint
CREATE TABLE "e2e_run_results" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"run_id" uuid NOT NULL,
	"journey_id" text NOT NULL,
	"position" integer NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"failure_step" text,
	"failure_reason" text,
	"log_ref" text,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"duration_ms" bigint,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "e2e_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"suite_id" text NOT NULL,
	"journey_ids" text[] NOT NULL,
	"environment_label" text NOT NULL,
	"trigger_source" text NOT NULL,
	"protocol_version" text NOT NULL,
	"runner_id" text NOT NULL,
	"idempotency_key" text,
	"idempotency_expires_at" timestamp with time zone,
	"status" text DEFAULT 'queued' NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "e2e_seed_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"environment_label" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"exit_code" integer,
	"signal" text,
	"timed_out" boolean DEFAULT false NOT NULL,
	"stderr_tail" text,
	"duration_ms" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "e2e_environment_locks" ADD CONSTRAINT "e2e_environment_locks_run_id_e2e_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."e2e_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "e2e_journey_logs" ADD CONSTRAINT "e2e_journey_logs_run_id_e2e_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."e2e_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "e2e_run_results" ADD CONSTRAINT "e2e_run_results_run_id_e2e_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."e2e_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "e2e_run_results_run_journey_idx" ON "e2e_run_results" USING btree ("run_id","journey_id");--> statement-breakpoint
CREATE INDEX "e2e_runs_started_at_idx" ON "e2e_runs" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "e2e_runs_status_idx" ON "e2e_runs" USING btree ("status");--> statement-breakpoint
CREATE INDEX "e2e_runs_idempotency_idx" ON "e2e_runs" USING btree ("environment_label","idempotency_key");--> statement-breakpoint
CREATE UNIQUE INDEX "e2e_runs_one_active_per_environment" ON "e2e_runs" USING btree ("environment_label") WHERE status in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "e2e_seed_runs_created_at_idx" ON "e2e_seed_runs" USING btree ("created_at");