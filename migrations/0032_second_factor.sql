CREATE TYPE "public"."factor_kind" AS ENUM('totp', 'webauthn');--> statement-breakpoint
CREATE TYPE "public"."session_stage" AS ENUM('factor', 'enrol', 'signed_in');--> statement-breakpoint
CREATE TABLE "operator_factors" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"operator_id" uuid NOT NULL,
	"kind" "factor_kind" NOT NULL,
	"name" text NOT NULL,
	"totp_secret" text,
	"totp_last_step" integer,
	"credential_id" text,
	"public_key" text,
	"sign_count" integer,
	"transports" jsonb,
	"confirmed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	CONSTRAINT "operator_factors_credential_id_unique" UNIQUE("credential_id")
);
--> statement-breakpoint
CREATE TABLE "recovery_codes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"operator_id" uuid NOT NULL,
	"code_hash" text NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "second_factor_policy" (
	"role" "operator_role" PRIMARY KEY NOT NULL,
	"required" boolean DEFAULT false NOT NULL,
	"fresh_factor_minutes" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_by" text
);
--> statement-breakpoint
ALTER TABLE "operator_sessions" ADD COLUMN "stage" "session_stage" DEFAULT 'signed_in' NOT NULL;--> statement-breakpoint
ALTER TABLE "operator_sessions" ADD COLUMN "factor_verified_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "operator_sessions" ADD COLUMN "challenge" text;--> statement-breakpoint
ALTER TABLE "operator_sessions" ADD COLUMN "challenge_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "operator_factors" ADD CONSTRAINT "operator_factors_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "recovery_codes" ADD CONSTRAINT "recovery_codes_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "operator_factors_operator_idx" ON "operator_factors" USING btree ("operator_id");--> statement-breakpoint
CREATE INDEX "recovery_codes_operator_idx" ON "recovery_codes" USING btree ("operator_id");