-- Raw telemetry is written once and never changed: vacuum each daily partition every 20,000 new rows
-- (not after a fifth of what it holds, ever rarer as the day fills) and freeze what it passes at once.
-- A pass then covers the pages written since the last one, mostly before the next checkpoint, so
-- setting their hint bits and visibility logs few whole pages (with data checksums, the first hint on
-- a page after a checkpoint logs it whole); and frozen pages leave no anti-wraparound pass for later.
-- docs/scaling.md, **Autovacuum on raw telemetry**; with autovacuum_naptime (docs/operations.md).
CREATE OR REPLACE FUNCTION telemetry_partition_vacuum_settings() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  part record;
  changed integer := 0;
BEGIN
  FOR part IN
    SELECT c.relname
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'public.telemetry_events'::regclass
      -- A partition whose insert threshold an operator set keeps what they chose.
      AND NOT EXISTS (SELECT 1 FROM unnest(c.reloptions) o WHERE o LIKE 'autovacuum_vacuum_insert_threshold=%')
  LOOP
    EXECUTE format(
      'ALTER TABLE public.%I SET (autovacuum_vacuum_insert_scale_factor = 0,
         autovacuum_vacuum_insert_threshold = 20000, autovacuum_freeze_min_age = 0)',
      part.relname);
    changed := changed + 1;
  END LOOP;
  RETURN changed;
END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION telemetry_ensure_partitions(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  created integer;
BEGIN
  created := daily_partitions_ensure('telemetry_events', 'recorded_at', p_from, p_to);
  PERFORM telemetry_partition_vacuum_settings();
  RETURN created;
END;
$$;
--> statement-breakpoint
SELECT telemetry_partition_vacuum_settings();
