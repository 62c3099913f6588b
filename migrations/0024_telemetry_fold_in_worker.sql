-- The telemetry_rollup job finds each heartbeat's numeric fields in the worker now
-- (modules/telemetry/rollup-fold.ts, by the rule of modules/telemetry/numeric-fields.ts): converting
-- every payload to jsonb and walking it in SQL cost PostgreSQL about as much CPU as ingesting it.
-- telemetry_number stays: the raw charts read single fields with it.
DROP FUNCTION IF EXISTS telemetry_numeric_fields(jsonb);
