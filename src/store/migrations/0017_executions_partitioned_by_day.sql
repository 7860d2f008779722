-- Migration 17: executions partitioned by day
-- In three transactions (store/schema.ts: a "-- Commit" line ends one): the bound of the table as it
-- is added, then validated while writes go on, then the partitioning itself (docs/operations.md
-- "Upgrading to partitioned executions"). The two first are run again by a start that stopped
-- before the migration was applied.
-- The bound: the start of the UTC day two days after the later of now and the newest id, so writes
-- of the nodes still running, checked against it from now on, keep within it for a day at least
-- while the steps and the migration run. NOT VALID: no scan, an exclusive lock for a moment. Nodes
-- starting together each run the steps, in turns: a bound at least a day ahead, made by another
-- (and maybe validated already), is kept; an older one, left by a start that stopped long ago, is
-- made afresh.
DO $$
DECLARE
  made uuid; -- a bound an earlier start made
  newest bigint; -- ms of the newest id
  upto bigint; -- the bound's ms
  hex text; -- its 48 bits
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'executions'::regclass) <> 'r' THEN RETURN; END IF; -- partitioned already
  SELECT substring(pg_get_constraintdef(oid) FROM '[0-9a-f]{8}-[0-9a-f-]{27}')::uuid INTO made FROM pg_constraint
    WHERE conrelid = 'executions'::regclass AND conname = 'executions_legacy_bound'; -- null when none
  IF made IS NOT NULL AND ('x' || substr(replace(made::text, '-', ''), 1, 12))::bit(48)::bigint >= (extract(epoch FROM now()) * 1000)::bigint + 86400000 THEN RETURN; END IF; -- kept
  ALTER TABLE executions DROP CONSTRAINT IF EXISTS executions_legacy_bound; -- too old to keep
  SELECT ('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint INTO newest FROM executions ORDER BY id DESC LIMIT 1; -- the primary key's last entry
  upto := (greatest((extract(epoch FROM now()) * 1000)::bigint, coalesce(newest, 0)) / 86400000 + 2) * 86400000; -- two UTC days on
  hex := lpad(to_hex(upto), 12, '0'); -- 12 hex digits
  EXECUTE format('ALTER TABLE executions ADD CONSTRAINT executions_legacy_bound CHECK (id IS NOT NULL AND id < %L::uuid) NOT VALID',
    substr(hex, 1, 8) || '-' || substr(hex, 9, 4) || '-0000-0000-000000000000'); -- the lowest UUID of that ms
END
$$;
-- Commit
-- The one scan of the table, with writes going on (VALIDATE takes a SHARE UPDATE EXCLUSIVE lock).
ALTER TABLE executions VALIDATE CONSTRAINT executions_legacy_bound;
-- Commit
-- History by day (docs/operations.md "How history is stored"): executions is partitioned by ranges
-- of its UUIDv7 id, whose first 48 bits are the attempt's millisecond time, one partition per UTC
-- day (executions_YYYYMMDD, made ahead by housekeeping: store/executionPartitions.ts), so retention
-- drops whole days instead of deleting rows. The primary key is the partition key, and reads by id
-- (a page of GET /executions, newest first) scan only the days they reach. executions_default takes
-- an id no day covers, so an insert never fails for want of a partition.
--
-- The table as it was becomes the partition of every id before its bound (the transactions above):
-- executions_until_YYYYMMDD. Its indexes, foreign key and status check match the new table's, so
-- attaching it builds nothing, and its validated bound lets the attach skip its scan: this
-- transaction holds its exclusive lock on executions only for moments, whatever the table's size.
ALTER TABLE executions RENAME TO executions_legacy;
ALTER INDEX executions_pkey RENAME TO executions_legacy_pkey;
ALTER INDEX executions_trigger RENAME TO executions_legacy_trigger;
ALTER INDEX executions_project RENAME TO executions_legacy_project;
ALTER INDEX executions_dead_letters RENAME TO executions_legacy_dead_letters;
ALTER TABLE executions_legacy RENAME CONSTRAINT executions_trigger_id_fkey TO executions_legacy_trigger_id_fkey;
DROP TRIGGER executions_recorded ON executions_legacy;

CREATE TABLE executions (
  id                      uuid NOT NULL,
  trigger_id              uuid NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
  project_id              uuid NOT NULL,
  attempt                 integer NOT NULL,
  status                  text NOT NULL CONSTRAINT executions_status_check CHECK (status IN ('succeeded', 'failed')),
  started_at              timestamptz NOT NULL,
  finished_at             timestamptz NOT NULL,
  duration_ms             integer NOT NULL,
  http_status             integer,
  response_headers        jsonb,
  response_body           text,
  error_kind              text,
  error_code              text,
  error_message           text,
  is_dead_letter          boolean NOT NULL DEFAULT false,
  connect_timeout_seconds integer NOT NULL,
  timeout_seconds         integer NOT NULL,
  triggered_by            text,
  url                     text NOT NULL,
  CONSTRAINT executions_pkey PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE INDEX executions_trigger ON executions (trigger_id, attempt);
CREATE INDEX executions_project ON executions (project_id, id DESC);
CREATE INDEX executions_dead_letters ON executions (project_id, id DESC) WHERE is_dead_letter;
-- the dead-letter alert outbox (migration 7), fired by inserts into any partition through this table
CREATE TRIGGER executions_recorded AFTER INSERT ON executions
  REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION timewheel_executions_recorded();
CREATE TABLE executions_default PARTITION OF executions DEFAULT;

-- (the migration runner splits at a semicolon that ends a line: each statement below ends with a comment)
DO $$
DECLARE
  bound uuid; -- the bound the online steps validated
  upto bigint; -- its ms
BEGIN
  SELECT substring(pg_get_constraintdef(oid) FROM '[0-9a-f]{8}-[0-9a-f-]{27}')::uuid INTO bound FROM pg_constraint
    WHERE conrelid = 'executions_legacy'::regclass AND conname = 'executions_legacy_bound' AND convalidated; -- set by the steps
  IF bound IS NULL THEN RAISE EXCEPTION 'executions_legacy_bound missing: the online steps did not run'; END IF; -- run by store/db.ts migrate
  upto := ('x' || substr(replace(bound::text, '-', ''), 1, 12))::bit(48)::bigint; -- its first 48 bits
  EXECUTE format('ALTER TABLE executions ATTACH PARTITION executions_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound); -- no scan: the check implies the bound
  ALTER TABLE executions_legacy DROP CONSTRAINT executions_legacy_bound; -- the partition bound says it now
  EXECUTE format('ALTER TABLE executions_legacy RENAME TO %I', 'executions_until_' || to_char(to_timestamp(upto / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD')); -- named after its bound
END
$$;
