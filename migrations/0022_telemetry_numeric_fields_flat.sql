-- telemetry_numeric_fields, cheaper: the same fields by the same rule (migration 0019). The
-- telemetry_rollup job runs it on every heartbeat, inlined into its lateral join, and with the agent's
-- payloads (~1.9 KB, a dozen numeric fields among many strings) the old body cost more than the
-- payload's conversion to jsonb: its CTE was set up and filled again for every heartbeat, and each
-- value's telemetry_number() ran once in the filter and again in every aggregate of the job's
-- count/sum/min/max. Now one flat join, each value computed once (OFFSET 0 keeps the planner from
-- copying the expression into each place that reads it), and each script's output found once.
-- A field is an output field, or a field of an object one level down (LEFT JOIN: a plain value has
-- no inner fields and stands for itself).
CREATE OR REPLACE FUNCTION telemetry_numeric_fields(p jsonb) RETURNS TABLE(path text, v float8)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT o.base || '.' || k.key || coalesce('.' || i.key, ''), n.v
  FROM jsonb_each(CASE WHEN jsonb_typeof(p->'scripts') = 'object' THEN p->'scripts' ELSE '{}' END) s
  CROSS JOIN LATERAL (
    SELECT CASE WHEN jsonb_typeof(s.value->'data'->'output') = 'object'
        THEN 'scripts.' || s.key || '.data.output' ELSE 'scripts.' || s.key || '.data' END AS base,
      CASE WHEN jsonb_typeof(s.value->'data'->'output') = 'object'
        THEN s.value->'data'->'output' ELSE s.value->'data' END AS output
    OFFSET 0
  ) o
  CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(o.output) = 'object' THEN o.output ELSE '{}' END) k
  LEFT JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(k.value) = 'object' THEN k.value ELSE '{}' END) i
    ON strpos(i.key, '.') = 0
  CROSS JOIN LATERAL (SELECT telemetry_number(coalesce(i.value, k.value)) AS v OFFSET 0) n
  WHERE jsonb_typeof(s.value->'data') = 'object' AND strpos(s.key, '.') = 0 AND strpos(k.key, '.') = 0
    AND n.v IS NOT NULL
$$;
