-- Migration 14: target policies
-- Target policies (docs/protecting-targets.md): limits and a circuit breaker per origin of a
-- trigger's URL ('https://api.example.com'), or '*' for each origin of the project without its
-- own. The triggers of an origin under a policy pass its gate, which is a tag gate's machinery keyed
-- by the origin (gate_slots, gate_leases and gate_holds rows with the origin in their tag column: an
-- origin has '://', which no tag has).
CREATE TABLE target_policies (
  id                        uuid PRIMARY KEY,
  project_id                uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  origin                    text NOT NULL,
  max_concurrent            integer,
  throughput                jsonb,
  circuit_failures          integer,         -- circuitBreaker.failures (NULL: no circuit breaker)
  circuit_cooldown_seconds  integer,
  created_at                timestamptz NOT NULL,
  updated_at                timestamptz NOT NULL,
  UNIQUE (project_id, origin)
);

-- The circuit breaker of an origin, shared by every node (store/targetCircuits.ts): consecutive
-- failures while closed; once open, the end of its cooldown (open_until: NULL while closed; probing
-- once it has passed), the cooldown (doubled on each reopening), when and why it opened; and the node
-- sending the single probe; version counts its changes (a node applies a state newer than the one it
-- knows). A row is made by the first failure: an origin without one is closed.
CREATE TABLE target_circuits (
  project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  origin           text NOT NULL,
  failures         integer NOT NULL DEFAULT 0,
  last_failure_at  timestamptz,
  opened_at        timestamptz,
  reason           text,
  open_until       timestamptz,
  cooldown_ms      integer NOT NULL DEFAULT 0,
  probe_node       text,
  probe_since      timestamptz,
  version          integer NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, origin)
);

-- A circuit that opens goes to the project's failure alerts beside its dead letters: outbox rows
-- have a kind (a circuit's row: a fresh execution_id, the origin as url, the failure as error).
ALTER TABLE alert_outbox ADD COLUMN kind text NOT NULL DEFAULT 'dead_letter' CHECK (kind IN ('dead_letter', 'circuit_open'));
ALTER TABLE alert_sends ADD COLUMN circuit_openings integer NOT NULL DEFAULT 0;
