CREATE TABLE "telemetry_fleet_hourly" (
	"hour" timestamp with time zone PRIMARY KEY NOT NULL,
	"devices" integer NOT NULL,
	"heartbeats" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "telemetry_hourly" (
	"device_id" uuid NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"heartbeats" integer NOT NULL,
	"stats" jsonb NOT NULL,
	CONSTRAINT "telemetry_hourly_pkey" PRIMARY KEY("device_id","hour")
);
--> statement-breakpoint
CREATE TABLE "telemetry_rollup_progress" (
	"singleton" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"rolled_until" timestamp with time zone NOT NULL,
	CONSTRAINT "telemetry_rollup_progress_singleton" CHECK ("telemetry_rollup_progress"."singleton")
);
--> statement-breakpoint
CREATE INDEX "telemetry_hourly_hour_idx" ON "telemetry_hourly" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "telemetry_events_recorded_brin" ON "telemetry_events" USING brin ("recorded_at");--> statement-breakpoint
-- A JSON value as a chart number: JSON numbers, and strings that spell one (as the console's
-- numericFields accepts them); NULL for anything else and for magnitudes float8 cannot hold, so
-- no payload can make the rollup or a chart fail. One expression without FROM, so PostgreSQL
-- inlines it into the query that calls it (a function call per value costs several times more);
-- nested CASEs, because only CASE fixes the order: the casts run after the checks.
CREATE OR REPLACE FUNCTION telemetry_number(v jsonb) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(v)
    WHEN 'number' THEN CASE WHEN v::numeric = 0 OR abs(v::numeric) BETWEEN 1e-300 AND 1e300 THEN v::float8 END
    WHEN 'string' THEN CASE WHEN (v #>> '{}') ~ '^\s*-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]{1,4})?\s*$' THEN
      CASE WHEN (v #>> '{}')::numeric = 0 OR abs((v #>> '{}')::numeric) BETWEEN 1e-300 AND 1e300
        THEN (v #>> '{}')::float8 END
    END
  END
$$;
--> statement-breakpoint
-- The numeric fields of a heartbeat payload, by path: scripts.<script>.data.output.<field> (or
-- .data.<field> when there is no output object), one level of nested objects too, keys with dots
-- skipped. The same fields as numericFields in modules/telemetry/series.ts (a test keeps them equal).
CREATE OR REPLACE FUNCTION telemetry_numeric_fields(p jsonb) RETURNS TABLE(path text, v float8)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH outputs AS (
    SELECT CASE WHEN jsonb_typeof(s.value->'data'->'output') = 'object'
        THEN 'scripts.' || s.key || '.data.output' ELSE 'scripts.' || s.key || '.data' END AS base,
      CASE WHEN jsonb_typeof(s.value->'data'->'output') = 'object'
        THEN s.value->'data'->'output' ELSE s.value->'data' END AS output
    FROM jsonb_each(CASE WHEN jsonb_typeof(p->'scripts') = 'object' THEN p->'scripts' ELSE '{}' END) s
    WHERE jsonb_typeof(s.value->'data') = 'object' AND strpos(s.key, '.') = 0
  ), leaves AS (
    SELECT o.base || '.' || k.key AS path, k.value
    FROM outputs o CROSS JOIN LATERAL jsonb_each(o.output) k
    WHERE strpos(k.key, '.') = 0
  )
  SELECT l.path, telemetry_number(l.value) FROM leaves l WHERE telemetry_number(l.value) IS NOT NULL
  UNION ALL
  SELECT l.path || '.' || i.key, telemetry_number(i.value)
  FROM leaves l
  CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(l.value) = 'object' THEN l.value ELSE '{}' END) i
  WHERE strpos(i.key, '.') = 0 AND telemetry_number(i.value) IS NOT NULL
$$;
--> statement-breakpoint
-- Two rollup stats objects ({path: [count, sum, min, max]}) as one: counts and sums add up, min and
-- max of both. Used when a later window adds heartbeats to an hour already rolled up.
CREATE OR REPLACE FUNCTION telemetry_stats_merge(a jsonb, b jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(jsonb_object_agg(k, CASE
      WHEN x IS NULL THEN y
      WHEN y IS NULL THEN x
      ELSE jsonb_build_array((x->>0)::bigint + (y->>0)::bigint, (x->>1)::float8 + (y->>1)::float8,
        least((x->>2)::float8, (y->>2)::float8), greatest((x->>3)::float8, (y->>3)::float8))
    END), '{}'::jsonb)
  FROM jsonb_each(a) AS l(k, x) FULL JOIN jsonb_each(b) AS r(k, y) USING (k)
$$;
