-- Migration 10: gate leases and holds
-- Tag gates admit in memory from budgets leased from here (store/gateLeases.ts): one row
-- per node holding (or wanting) some of a gate's budget — maxConcurrent permits, and tokens of each
-- throughput window — with what it wants (demand per limit: 'concurrency' or a window label), its
-- requests in flight, the policy version it last read (policy_seen) and when it last renewed its
-- lease. A node found gone (absent, its lease expired) keeps its row renamed '<node>~gone~<time>'
-- with gone_at set and no permits: its window tokens still count its last starts until a window has
-- passed, then the row is deleted. Rows are read and written by lease rounds that hold the gate's
-- advisory lock, a few times a second per node and gate, never per start.
CREATE TABLE gate_leases (
  project_id   uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  tag          text NOT NULL,
  node         text NOT NULL,
  permits      integer NOT NULL DEFAULT 0,
  tokens       jsonb NOT NULL DEFAULT '{}',
  demand       jsonb NOT NULL DEFAULT '{}',
  in_flight    integer NOT NULL DEFAULT 0,
  policy_seen  timestamptz,
  renewed_at   timestamptz NOT NULL,
  gone_at      timestamptz,
  PRIMARY KEY (project_id, tag, node)
);

-- Backpressure (docs/tag-policies.md "Backpressure from the target", store/gateHolds.ts): a tag held
-- after a 429 or 503 of the target, until held_until; backoff_ms is the last backoff without
-- Retry-After (0 once a 2xx of the tag cleared it).
CREATE TABLE gate_holds (
  project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  tag         text NOT NULL,
  held_since  timestamptz NOT NULL,
  held_until  timestamptz NOT NULL,
  backoff_ms  integer NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, tag)
);

-- gate_slots now holds the triggers waiting in PostgreSQL for a gate (queued; taken into a node's
-- memory: claimed_by set) and those started from there (running) until their outcome is recorded;
-- in-flight counts come from the leases, and start times are no longer stored.
DROP INDEX gate_slots_running;
DROP TABLE gate_starts;
