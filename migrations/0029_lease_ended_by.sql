ALTER TABLE "remote_access_leases" ADD COLUMN "ended_by" text;--> statement-breakpoint
-- Issue 42: a device page's Overview shows the API token (issued at the registration after approval) and
-- the remote-access flag; it refreshes on `device:<id>`, which the devices trigger now sends when either
-- changes (one device at a time: a bulk approval still sends only the fleet's one `devices`).
CREATE OR REPLACE FUNCTION outpost_devices_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE'
    OR NEW.approval_status IS DISTINCT FROM OLD.approval_status
    OR NEW.product_name IS DISTINCT FROM OLD.product_name
    OR NEW.remote_access_requested IS DISTINCT FROM OLD.remote_access_requested
    OR (NEW.last_seen_at IS NOT NULL AND OLD.last_seen_at IS NULL)
    OR (NEW.last_seen_at - OLD.last_seen_at > make_interval(secs => coalesce(
          (SELECT (value #>> '{}')::integer FROM system_settings WHERE key = 'online_window_seconds'),
          (SELECT (value #>> '{}')::integer FROM system_settings WHERE key = 'online_window_seconds_default'),
          300)))
  THEN
    PERFORM pg_notify('outpost_live', 'devices');
  END IF;
  IF TG_OP = 'UPDATE' AND (NEW.api_token_hash IS DISTINCT FROM OLD.api_token_hash
    OR NEW.remote_access_requested IS DISTINCT FROM OLD.remote_access_requested)
  THEN
    PERFORM pg_notify('outpost_live', 'device:' || NEW.id);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER devices_live_notify_update ON devices;
--> statement-breakpoint
CREATE TRIGGER devices_live_notify_update AFTER UPDATE ON devices
  FOR EACH ROW
  WHEN (NEW.approval_status IS DISTINCT FROM OLD.approval_status
    OR NEW.product_name IS DISTINCT FROM OLD.product_name
    OR NEW.remote_access_requested IS DISTINCT FROM OLD.remote_access_requested
    OR NEW.api_token_hash IS DISTINCT FROM OLD.api_token_hash
    OR (NEW.last_seen_at IS NOT NULL AND OLD.last_seen_at IS NULL)
    OR NEW.last_seen_at - OLD.last_seen_at > interval '60 seconds')
  EXECUTE FUNCTION outpost_devices_notify();
