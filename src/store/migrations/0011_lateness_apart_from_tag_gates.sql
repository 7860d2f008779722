-- Migration 11: lateness apart from tag gates
-- The overview shows the scheduler's own lateness apart from the time triggers wait for their tags'
-- concurrency and throughput limits (docs/dashboard.md): a first attempt of a trigger admitted by a tag
-- gate (a policy with maxConcurrent or throughput) is counted in gated_lateness, every other one in
-- lateness as before (domain/deliveryRollup.ts, written with the executions: migration 7). Rows written
-- before this migration have an empty gated_lateness.
ALTER TABLE delivery_minutes ADD COLUMN gated_lateness bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE delivery_minutes_pending ADD COLUMN gated_lateness bigint[] NOT NULL DEFAULT '{}';
