ALTER TABLE "devices" ADD COLUMN "conflict_last_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "conflict_refused_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "conflict_refused_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "conflict_refused_address" text;--> statement-breakpoint
-- A conflict recorded without a secret holds nothing an operator could accept: it becomes a refused attempt.
UPDATE "devices" SET "conflict_refused_count" = 1, "conflict_refused_at" = "identity_conflict_at",
  "conflict_refused_address" = "conflict_address", "identity_conflict_at" = NULL, "conflict_address" = NULL
  WHERE "identity_conflict_at" IS NOT NULL AND "conflict_secret_hash" IS NULL;--> statement-breakpoint
UPDATE "devices" SET "conflict_last_at" = "identity_conflict_at" WHERE "identity_conflict_at" IS NOT NULL;
