-- Alert rules and reports are about a product's fields, not a schema version (docs/reports.md,
-- "Fields"): the agent's schema version changes with every script install, so a stored version only
-- ever went stale. Rules keep product, field and the field's type; reports keep product and fields.
ALTER TABLE "alert_rules" DROP COLUMN "schema_version";--> statement-breakpoint
UPDATE "custom_reports" SET "config" = "config" - 'schema_version' WHERE "config" ? 'schema_version';
