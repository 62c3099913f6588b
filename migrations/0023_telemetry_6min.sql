-- Six-minute rollups for the last two days (modules/telemetry/rollups.ts): what the 24-hour chart
-- reads instead of sampling raw heartbeats. Partitioned by UTC day like telemetry_events (drizzle-kit
-- cannot express it; written by hand), so expiring a day is a DROP TABLE, not a delete of every row.
CREATE TABLE "telemetry_6min" (
	"device_id" uuid NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"heartbeats" integer NOT NULL,
	"stats" jsonb NOT NULL,
	CONSTRAINT "telemetry_6min_pkey" PRIMARY KEY("device_id","bucket")
) PARTITION BY RANGE ("bucket");
--> statement-breakpoint
ALTER TABLE "telemetry_rollup_progress" ADD COLUMN "recent_from" timestamp with time zone;
--> statement-breakpoint
-- The rollups before this upgrade have no 6-minute tier: it is complete from the job's next bucket on.
UPDATE "telemetry_rollup_progress"
SET "recent_from" = date_bin('6 minutes', "rolled_until" + interval '6 minutes' - interval '1 microsecond', 'epoch');
--> statement-breakpoint
CREATE TABLE "telemetry_6min_default" PARTITION OF "telemetry_6min" DEFAULT;
--> statement-breakpoint
-- The daily partitions of a table partitioned by range of one timestamptz column (`parent_pYYYYMMDD`)
-- for [p_from, p_to] (UTC days) that do not exist yet; returns how many it created. Rows of those
-- days that landed in the default partition (`parent_default`) are moved in first.
CREATE OR REPLACE FUNCTION daily_partitions_ensure(parent text, key_column text, p_from date, p_to date)
RETURNS integer LANGUAGE plpgsql AS $$
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
    part := parent || '_p' || to_char(day, 'YYYYMMDD');
    IF to_regclass(format('public.%I', part)) IS NULL THEN
      lower_bound := day::timestamp AT TIME ZONE 'UTC';
      upper_bound := (day + 1)::timestamp AT TIME ZONE 'UTC';
      EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS)', part, parent);
      EXECUTE format(
        'WITH moved AS (DELETE FROM public.%I WHERE %I >= %L AND %I < %L RETURNING *)
         INSERT INTO public.%I SELECT * FROM moved',
        parent || '_default', key_column, lower_bound, key_column, upper_bound, part);
      EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)',
        parent, part, lower_bound, upper_bound);
      created := created + 1;
    END IF;
    day := day + 1;
  END LOOP;
  RETURN created;
END;
$$;
--> statement-breakpoint
-- Drops the daily partitions of `parent` that end on or before p_cutoff (a UTC day) and deletes
-- older rows from its default partition; returns how many partitions it dropped.
CREATE OR REPLACE FUNCTION daily_partitions_drop_before(parent text, key_column text, p_cutoff date)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  part record;
  dropped integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(7401002);
  FOR part IN
    SELECT c.relname
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = format('public.%I', parent)::regclass
      AND c.relname ~ ('^' || parent || '_p[0-9]{8}$')
      AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= p_cutoff
    ORDER BY c.relname
  LOOP
    EXECUTE format('DROP TABLE public.%I', part.relname);
    dropped := dropped + 1;
  END LOOP;
  EXECUTE format('DELETE FROM public.%I WHERE %I < %L', parent || '_default', key_column,
    p_cutoff::timestamp AT TIME ZONE 'UTC');
  RETURN dropped;
END;
$$;
--> statement-breakpoint
-- telemetry_events' own maintenance (migration 0003) is now the general one, so the two tables
-- cannot drift apart.
CREATE OR REPLACE FUNCTION telemetry_ensure_partitions(p_from date, p_to date) RETURNS integer
LANGUAGE sql AS $$ SELECT daily_partitions_ensure('telemetry_events', 'recorded_at', p_from, p_to) $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION telemetry_drop_partitions_before(p_cutoff date) RETURNS integer
LANGUAGE sql AS $$ SELECT daily_partitions_drop_before('telemetry_events', 'recorded_at', p_cutoff) $$;
--> statement-breakpoint
-- The last two days and a week ahead; the telemetry_partitions job keeps it rolling.
SELECT daily_partitions_ensure('telemetry_6min', 'bucket', (now() AT TIME ZONE 'UTC')::date - 2, (now() AT TIME ZONE 'UTC')::date + 7);
