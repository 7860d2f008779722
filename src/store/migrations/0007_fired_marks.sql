-- Migration 7: fired marks
-- The delivery engine's hot path without a write per trigger (docs/internals.md "The delivery engine",
-- store/shardMarks.ts). Each shard's owner advances its shard's mark before sending what comes due:
-- every keyless one-shot (no custom key, not a generator's instance) still registered or retrying and
-- due at or before fired_at has been handed to delivery by the node named here, and reads as running
-- until its outcome is recorded. One small row per shard, updated in place (no indexed column changes,
-- a low fillfactor leaves room on its page: HOT updates, no index entries).
CREATE TABLE shard_marks (
  shard     integer PRIMARY KEY,
  fired_at  timestamptz NOT NULL,
  node      text NOT NULL
) WITH (fillfactor = 10);

-- The range a mark advance fetches is read in (due_at, id) order, a page at a time.
DROP INDEX triggers_due;
CREATE INDEX triggers_due ON triggers (shard, due_at, id) WHERE status IN ('registered', 'retrying');

-- The overview's rollup is computed by whoever records executions (domain/deliveryRollup.ts): the
-- statement trigger joined every recorded row with its trigger, 23 us per delivery in the profile.
-- It keeps the dead-letter alert outbox only.
CREATE OR REPLACE FUNCTION timewheel_executions_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO alert_outbox (execution_id, project_id, trigger_id, url, error, failed_at)
  SELECT r.id, r.project_id, r.trigger_id, r.url,
    coalesce(r.error_kind || ': ' || r.error_message, 'HTTP ' || r.http_status, r.error_message), r.finished_at
  FROM recorded r
  WHERE r.is_dead_letter AND EXISTS (SELECT FROM project_alerts a WHERE a.project_id = r.project_id
    AND (a.webhook_url IS NOT NULL OR cardinality(a.email_recipients) > 0)); RETURN NULL; END
$$;
