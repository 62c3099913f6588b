ALTER TABLE "devices" ADD COLUMN "secret_hash" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "identity_conflict_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "conflict_secret_hash" text;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "conflict_address" text;