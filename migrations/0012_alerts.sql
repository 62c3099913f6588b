CREATE TABLE "alert_evaluation_cursor" (
	"id" integer PRIMARY KEY NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	"event_id" uuid NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_notifications" (
	"id" uuid PRIMARY KEY NOT NULL,
	"alert_id" uuid,
	"channel" text NOT NULL,
	"event" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"recipients" text[] DEFAULT '{}'::text[] NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"last_attempt_at" timestamp with time zone,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alert_rule_states" (
	"rule_id" integer NOT NULL,
	"device_id" uuid NOT NULL,
	"breach_since" timestamp with time zone,
	"clear_since" timestamp with time zone,
	"alerting" boolean DEFAULT false NOT NULL,
	"evaluated_at" timestamp with time zone NOT NULL,
	"last_value" text,
	CONSTRAINT "alert_rule_states_rule_id_device_id_pk" PRIMARY KEY("rule_id","device_id")
);
--> statement-breakpoint
CREATE TABLE "alert_rules" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"product_name" text NOT NULL,
	"schema_version" text NOT NULL,
	"condition_field" text NOT NULL,
	"field_type" text NOT NULL,
	"operator" text NOT NULL,
	"threshold_value" text NOT NULL,
	"clear_threshold" text,
	"for_minutes" integer DEFAULT 0 NOT NULL,
	"resolve_after_minutes" integer,
	"severity" text DEFAULT 'warning' NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"device_ids" uuid[],
	"recipients" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "alerts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"severity" text NOT NULL,
	"message" text NOT NULL,
	"device_id" uuid NOT NULL,
	"rule_id" integer,
	"value" text,
	"triggered_at" timestamp with time zone DEFAULT now() NOT NULL,
	"acknowledged_at" timestamp with time zone,
	"acknowledged_by" text,
	"ack_note" text,
	"resolved_at" timestamp with time zone,
	"resolved_by" text,
	"resolution" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "alert_notifications_alert_idx" ON "alert_notifications" USING btree ("alert_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "alert_rules_unique_name_index" ON "alert_rules" USING btree (lower("name"));--> statement-breakpoint
CREATE INDEX "alert_rules_product_idx" ON "alert_rules" USING btree ("product_name");--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_open_rule_idx" ON "alerts" USING btree ("device_id","rule_id") WHERE status <> 'resolved' and type = 'threshold';--> statement-breakpoint
CREATE UNIQUE INDEX "alerts_open_offline_idx" ON "alerts" USING btree ("device_id") WHERE status <> 'resolved' and type = 'offline';--> statement-breakpoint
CREATE INDEX "alerts_triggered_idx" ON "alerts" USING btree ("triggered_at","id");--> statement-breakpoint
CREATE INDEX "alerts_device_idx" ON "alerts" USING btree ("device_id","triggered_at");