-- Operator console (docs/console.md): what the device list sorts and searches by, and the
-- NOTIFY triggers behind live updates. Written by hand: drizzle-kit cannot express functions,
-- triggers or expression indexes on them.

-- The name a device is shown by: the `name` its agent reported in metadata, else derived from its MAC
-- exactly as the agent derives it (device-aabbccddeeff).
CREATE OR REPLACE FUNCTION device_display_name(metadata jsonb, mac text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(nullif(metadata->>'name', ''), 'device-' || lower(replace(mac, ':', '')))
$$;
--> statement-breakpoint
-- Everything the console's search box matches, lower-cased (MAC with and without colons, product,
-- IPv4 address, name, hostname).
CREATE OR REPLACE FUNCTION device_search_text(mac text, product text, ip text, metadata jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT lower(mac || ' ' || replace(mac, ':', '') || ' ' || coalesce(product, '') || ' ' || coalesce(ip, '')
    || ' ' || coalesce(metadata->>'name', '') || ' ' || coalesce(metadata->>'hostname', ''))
$$;
--> statement-breakpoint
-- Keyset pagination: one (sort key, id) index per sortable column, so every page — first or deep —
-- is an index range scan. last_seen_at stays unindexed on purpose (heartbeats keep their HOT updates).
CREATE INDEX IF NOT EXISTS "devices_console_mac_idx" ON "devices" ("mac_address", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "devices_console_name_idx" ON "devices" (device_display_name("metadata", "mac_address"), "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "devices_console_product_idx" ON "devices" (coalesce("product_name", ''), "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "devices_console_approval_idx" ON "devices" ("approval_status", "created_at", "id");
--> statement-breakpoint
-- Substring search through a trigram index when pg_trgm is available; without it the same query
-- still works, by a sequential scan.
DO $$
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available: device search runs without a trigram index';
  END;
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    EXECUTE 'CREATE INDEX IF NOT EXISTS devices_console_search_idx ON devices USING gin '
      || '(device_search_text(mac_address, product_name, ipv4_address, metadata) gin_trgm_ops)';
  END IF;
END
$$;
--> statement-breakpoint
-- Live updates: changes the console shows are announced on channel outpost_live. The payload names
-- the topic only, so PostgreSQL folds a bulk change into one notification per transaction.
-- Heartbeats announce nothing unless the device comes back after a silence longer than the online
-- window (it turns online); going offline needs no write at all, so web instances also re-count on a
-- timer (modules/live/hub.ts).
CREATE OR REPLACE FUNCTION outpost_devices_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE'
    OR NEW.approval_status IS DISTINCT FROM OLD.approval_status
    OR NEW.product_name IS DISTINCT FROM OLD.product_name
    OR NEW.remote_access_requested IS DISTINCT FROM OLD.remote_access_requested
    OR (NEW.last_seen_at IS NOT NULL AND OLD.last_seen_at IS NULL)
    OR (NEW.last_seen_at - OLD.last_seen_at > make_interval(secs => coalesce(
          (SELECT (value #>> '{}')::integer FROM system_settings WHERE key = 'online_window_seconds'), 300)))
  THEN
    PERFORM pg_notify('outpost_live', 'devices');
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER devices_live_notify AFTER INSERT OR DELETE ON devices
  FOR EACH ROW EXECUTE FUNCTION outpost_devices_notify();
--> statement-breakpoint
-- Updates go through a WHEN prefilter evaluated without calling PL/pgSQL, so a routine heartbeat
-- (seen again within a minute) costs no function call. One minute is the smallest online window
-- Outpost accepts, so a shorter gap can never mean "came back online".
CREATE TRIGGER devices_live_notify_update AFTER UPDATE ON devices
  FOR EACH ROW
  WHEN (NEW.approval_status IS DISTINCT FROM OLD.approval_status
    OR NEW.product_name IS DISTINCT FROM OLD.product_name
    OR NEW.remote_access_requested IS DISTINCT FROM OLD.remote_access_requested
    OR (NEW.last_seen_at IS NOT NULL AND OLD.last_seen_at IS NULL)
    OR NEW.last_seen_at - OLD.last_seen_at > interval '60 seconds')
  EXECUTE FUNCTION outpost_devices_notify();
--> statement-breakpoint
-- A device's command changed state (queued, delivered, result posted, cancelled): its detail page
-- refreshes the Commands and Scripts tabs.
CREATE OR REPLACE FUNCTION outpost_commands_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('outpost_live', 'device:' || OLD.device_id);
  ELSIF TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status THEN
    PERFORM pg_notify('outpost_live', 'device:' || NEW.device_id);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER pending_commands_live_notify AFTER INSERT OR UPDATE OR DELETE ON pending_commands
  FOR EACH ROW EXECUTE FUNCTION outpost_commands_notify();
