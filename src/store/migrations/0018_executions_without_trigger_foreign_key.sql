-- Migration 18: executions without a foreign key to triggers
-- The foreign key executions.trigger_id → triggers(id) ON DELETE CASCADE goes. On the table
-- partitioned by day, its cascade ran one query per deleted trigger over every partition (the
-- trigger id is not the partition key): retention's deletes of finished triggers cost in proportion
-- to the days kept. Retention now deletes a trigger's executions itself, in the statement that
-- deletes the trigger, bounded to the days that may still hold them (store/retention.ts); whole
-- days go with their partitions (docs/operations.md "How history is stored"). Retention is the only
-- path that deletes triggers. Inserts of executions no longer look their trigger up either.
--
-- Dropping the constraint is catalog work only (no scan, about a millisecond), but it needs the
-- exclusive lock on triggers and on executions with its partitions: the lock is asked for with a
-- short lock_timeout and asked again after a pause when a transaction holds either table, so the
-- writes queued behind the request wait at most that timeout per try (docs/operations.md
-- "Upgrading to partitioned executions"). Nodes starting together take turns (the migration lock):
-- the first drops it, the others find it gone.
DO $$
DECLARE
  tries int := 0; -- requests of the lock so far
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'executions'::regclass AND conname = 'executions_trigger_id_fkey') THEN RETURN; END IF; -- dropped already
  LOOP
    BEGIN
      PERFORM set_config('lock_timeout', '100ms', true); -- this transaction only
      LOCK TABLE triggers, executions IN ACCESS EXCLUSIVE MODE; -- executions' partitions too
      EXIT; -- held until the commit
    EXCEPTION WHEN lock_not_available THEN
      tries := tries + 1; -- the lock is given back with the failed try
      IF tries >= 600 THEN RAISE EXCEPTION 'could not lock triggers and executions for 100 ms in % tries: a long transaction holds them', tries; END IF; -- about two minutes
      PERFORM pg_sleep(0.1 + random() * 0.1); -- writes go on meanwhile
    END; -- one try
  END LOOP; -- locked
  ALTER TABLE executions DROP CONSTRAINT executions_trigger_id_fkey; -- and its clones on every partition
  PERFORM set_config('lock_timeout', '0', true); -- no limit for the rest of the migration's transaction
END
$$;
