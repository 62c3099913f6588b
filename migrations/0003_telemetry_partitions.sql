-- Telemetry is range-partitioned by UTC day (see modules/telemetry/schema.ts). drizzle-kit cannot
-- express this, so the partitions and their maintenance live here, written by hand.

-- Catches rows for a day that has no partition yet (e.g. the maintenance job has not run), so a
-- heartbeat never fails for want of a partition. telemetry_ensure_partitions moves such rows out.
CREATE TABLE "telemetry_events_default" PARTITION OF "telemetry_events" DEFAULT;
--> statement-breakpoint
-- Creates the daily partitions for [p_from, p_to] (UTC days) that do not exist yet and returns
-- how many it created. Rows of those days that landed in the default partition are moved in.
CREATE OR REPLACE FUNCTION telemetry_ensure_partitions(p_from date, p_to date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  day date := p_from;
  part text;
  lower_bound timestamptz;
  upper_bound timestamptz;
  created integer := 0;
BEGIN
  -- One maintainer at a time (several workers may run the job concurrently).
  PERFORM pg_advisory_xact_lock(7401002);
  WHILE day <= p_to LOOP
    part := 'telemetry_events_p' || to_char(day, 'YYYYMMDD');
    IF to_regclass(format('public.%I', part)) IS NULL THEN
      lower_bound := day::timestamp AT TIME ZONE 'UTC';
      upper_bound := (day + 1)::timestamp AT TIME ZONE 'UTC';
      EXECUTE format('CREATE TABLE public.%I (LIKE public.telemetry_events INCLUDING DEFAULTS)', part);
      EXECUTE format(
        'WITH moved AS (DELETE FROM public.telemetry_events_default WHERE recorded_at >= %L AND recorded_at < %L RETURNING *)
         INSERT INTO public.%I SELECT * FROM moved',
        lower_bound, upper_bound, part);
      EXECUTE format('ALTER TABLE public.telemetry_events ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)',
        part, lower_bound, upper_bound);
      created := created + 1;
    END IF;
    day := day + 1;
  END LOOP;
  RETURN created;
END;
$$;
--> statement-breakpoint
-- Drops the daily partitions that end on or before p_cutoff (a UTC day) and deletes older rows
-- from the default partition. Dropping a partition is a catalog change, not a row-by-row delete.
CREATE OR REPLACE FUNCTION telemetry_drop_partitions_before(p_cutoff date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  part record;
  dropped integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(7401002);
  FOR part IN
    SELECT c.relname
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'public.telemetry_events'::regclass
      AND c.relname ~ '^telemetry_events_p[0-9]{8}$'
      AND to_date(substring(c.relname from 19), 'YYYYMMDD') + 1 <= p_cutoff
    ORDER BY c.relname
  LOOP
    EXECUTE format('DROP TABLE public.%I', part.relname);
    dropped := dropped + 1;
  END LOOP;
  DELETE FROM public.telemetry_events_default WHERE recorded_at < (p_cutoff::timestamp AT TIME ZONE 'UTC');
  RETURN dropped;
END;
$$;
--> statement-breakpoint
-- Partitions for yesterday through a week ahead; the telemetry_partitions job keeps it rolling.
SELECT telemetry_ensure_partitions((now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date + 7);
