CREATE TABLE "custom_reports" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"config" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "report_view_preferences" (
	"scope" text NOT NULL,
	"view_key" text NOT NULL,
	"preferences" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "report_view_preferences_pkey" PRIMARY KEY("scope","view_key")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "custom_reports_name_lower_idx" ON "custom_reports" USING btree (lower("name"));