CREATE TABLE "rollout_targets" (
	"rollout_id" uuid NOT NULL,
	"device_id" uuid NOT NULL,
	"device_name" text NOT NULL,
	"position" integer NOT NULL,
	"wave" integer NOT NULL,
	"state" text DEFAULT 'queued' NOT NULL,
	"command_id" uuid,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"output" jsonb,
	"error" text,
	CONSTRAINT "rollout_targets_pkey" PRIMARY KEY("rollout_id","device_id")
);
--> statement-breakpoint
CREATE TABLE "rollouts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"action" jsonb NOT NULL,
	"target_kind" text NOT NULL,
	"target_query" text,
	"target_view" text,
	"canary_count" integer,
	"canary_percent" integer,
	"canary_size" integer NOT NULL,
	"total" integer NOT NULL,
	"concurrency" integer NOT NULL,
	"failure_threshold" integer NOT NULL,
	"deadline" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"pause_reason" text,
	"current_wave" integer DEFAULT 1 NOT NULL,
	"threshold_accepted_wave" integer DEFAULT 0 NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "rollout_targets" ADD CONSTRAINT "rollout_targets_rollout_id_rollouts_id_fk" FOREIGN KEY ("rollout_id") REFERENCES "public"."rollouts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "rollout_targets_command_idx" ON "rollout_targets" USING btree ("command_id");--> statement-breakpoint
CREATE INDEX "rollout_targets_order_idx" ON "rollout_targets" USING btree ("rollout_id","position");--> statement-breakpoint
CREATE INDEX "rollout_targets_state_idx" ON "rollout_targets" USING btree ("rollout_id","state");--> statement-breakpoint
CREATE INDEX "rollout_targets_in_flight_idx" ON "rollout_targets" USING btree ("rollout_id") WHERE "rollout_targets"."command_id" is not null and "rollout_targets"."state" in ('queued', 'delivered');--> statement-breakpoint
CREATE INDEX "rollout_targets_open_idx" ON "rollout_targets" USING btree ("device_id") WHERE "rollout_targets"."state" in ('queued', 'delivered');--> statement-breakpoint
CREATE INDEX "rollouts_created_idx" ON "rollouts" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "rollouts_unfinished_idx" ON "rollouts" USING btree ("id") WHERE "rollouts"."finished_at" is null;