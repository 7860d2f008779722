-- Migration 17: executions partitioned by day
-- History by day (docs/operations.md "How history is stored"): executions is partitioned by ranges
-- of its UUIDv7 id, whose first 48 bits are the attempt's millisecond time, one partition per UTC
-- day (executions_YYYYMMDD, made ahead by housekeeping: store/executionPartitions.ts), so retention
-- drops whole days instead of deleting rows. The primary key is the partition key, and reads by id
-- (a page of GET /executions, newest first) scan only the days they reach. executions_default takes
-- an id no day covers, so an insert never fails for want of a partition.
--
-- The table as it was becomes the partition of every id before the day after this migration (and
-- after its newest id): executions_until_YYYYMMDD. Its indexes, foreign key and status check match
-- the new table's, so attaching it builds nothing; the one scan is the validation of its bound
-- (a CHECK constraint added NOT VALID, then validated), which lets the attach skip its own.
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
  newest bigint; -- ms of the newest id
  upto bigint; -- the bound: the start of the day after both now and the newest id
  hex text; -- its 48 bits
  bound uuid; -- the lowest id of that day
BEGIN
  SELECT ('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint INTO newest FROM executions_legacy ORDER BY id DESC LIMIT 1; -- the primary key's last entry
  upto := (extract(epoch FROM date_trunc('day', greatest(now(), to_timestamp(coalesce(newest, 0) / 1000.0)) AT TIME ZONE 'UTC')) * 1000)::bigint + 86400000; -- next UTC day
  hex := lpad(to_hex(upto), 12, '0'); -- 12 hex digits
  bound := (substr(hex, 1, 8) || '-' || substr(hex, 9, 4) || '-0000-0000-000000000000')::uuid; -- lowest UUID of that ms
  EXECUTE format('ALTER TABLE executions_legacy ADD CONSTRAINT executions_legacy_bound CHECK (id IS NOT NULL AND id < %L::uuid) NOT VALID', bound); -- no scan
  ALTER TABLE executions_legacy VALIDATE CONSTRAINT executions_legacy_bound; -- the one scan
  EXECUTE format('ALTER TABLE executions ATTACH PARTITION executions_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound); -- no scan: the check implies the bound
  ALTER TABLE executions_legacy DROP CONSTRAINT executions_legacy_bound; -- the partition bound says it now
  EXECUTE format('ALTER TABLE executions_legacy RENAME TO %I', 'executions_until_' || to_char(to_timestamp(upto / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD')); -- named after its bound
END
$$;
