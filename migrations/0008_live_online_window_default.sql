-- The live trigger decides "came back online" with the online window. Without an operator's
-- override (row online_window_seconds) it used 300 s, ignoring DEVICE_ONLINE_WINDOW_SECONDS. Each
-- process now records its environment default under online_window_seconds_default (not an
-- override: the settings store reads only online_window_seconds as one), and the trigger uses the
-- override, else that default, else 300.
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
  RETURN NULL;
END;
$$;
