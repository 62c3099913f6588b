-- Live progress of rollouts (docs/fleet.md, _Rollouts_): a change of a rollout (status, wave, finished)
-- or of its devices' states is announced on outpost_live as `rollout:<id>`, whoever made it (the driver
-- recording results, an operator's pause, resume or cancel). The devices' trigger is per statement with
-- a transition table, so a driver batch of thousands of devices costs one notification per rollout.
CREATE OR REPLACE FUNCTION outpost_rollouts_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outpost_live', 'rollout:' || NEW.id);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER rollouts_live_notify AFTER UPDATE ON rollouts
  FOR EACH ROW EXECUTE FUNCTION outpost_rollouts_notify();
--> statement-breakpoint
-- Only a change of state moves the page's counts and list (a command queued for a device does not).
CREATE OR REPLACE FUNCTION outpost_rollout_targets_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outpost_live', 'rollout:' || changed.rollout_id)
  FROM (
    SELECT DISTINCT n.rollout_id FROM new_targets n
    JOIN old_targets o ON o.rollout_id = n.rollout_id AND o.device_id = n.device_id
    WHERE n.state IS DISTINCT FROM o.state
  ) AS changed;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER rollout_targets_live_notify AFTER UPDATE ON rollout_targets
  REFERENCING OLD TABLE AS old_targets NEW TABLE AS new_targets
  FOR EACH STATEMENT EXECUTE FUNCTION outpost_rollout_targets_notify();
