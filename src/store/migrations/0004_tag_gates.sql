-- Migration 4: tag gates
-- Tag gates (docs/tag-policies.md): a trigger with a tag whose policy limits concurrency or throughput
-- gets one row here per such tag when it comes due, and waits (status queued, claimed by no node)
-- until every gate admits it; it is then running until its outcome is recorded, which deletes its
-- rows. So the rows are the cluster-wide state: waiting ones in admission order, and the in-flight
-- count per tag. Triggers without a gated tag never have a row.
CREATE TABLE gate_slots (
  trigger_id    uuid NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
  tag           text NOT NULL,
  project_id    uuid NOT NULL,
  scheduled_at  timestamptz NOT NULL,     -- admission order: oldest first, then trigger id
  not_before    timestamptz NOT NULL,     -- its due time (claimed a little ahead): never started earlier
  running       boolean NOT NULL DEFAULT false,
  PRIMARY KEY (trigger_id, tag)
);
CREATE INDEX gate_slots_waiting ON gate_slots (project_id, tag, scheduled_at, trigger_id) WHERE NOT running;
CREATE INDEX gate_slots_running ON gate_slots (project_id, tag) WHERE running;

-- Start times of gated triggers per throughput-limited tag, for the sliding windows: stamped when
-- admitted, moved later if the request actually left later; rows older than the policy's longest
-- window are deleted as admissions go on.
CREATE TABLE gate_starts (
  project_id  uuid NOT NULL,
  tag         text NOT NULL,
  trigger_id  uuid NOT NULL,
  started_at  timestamptz NOT NULL
);
CREATE INDEX gate_starts_recent ON gate_starts (project_id, tag, started_at DESC);
CREATE INDEX gate_starts_trigger ON gate_starts (trigger_id);
