-- Migration 2: claim time
-- when the node in claimed_by took the trigger (claim, start, recovery): the start of an attempt
-- that its node could not finish, recorded as an interrupted execution when the trigger is recovered
ALTER TABLE triggers ADD COLUMN claimed_at timestamptz;
