-- Migration 1: initial schema
CREATE TABLE settings (
  key   text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE projects (
  id            uuid PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  monthly_quota bigint NOT NULL CHECK (monthly_quota >= 0),
  -- project default retry policy (docs/retries.md "The project's default policy"), API field names
  retry_policy  jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  key_hash    bytea NOT NULL UNIQUE,      -- sha256 of the clear key; the key itself is never stored
  key_hint    text NOT NULL,              -- prefix and last 4 characters, for listings
  created_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id);

CREATE TABLE quota_usage (
  project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  month       date NOT NULL,              -- first day of the calendar month (UTC)
  used        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, month)
);

CREATE TABLE admins (
  id            uuid PRIMARY KEY,
  email         text NOT NULL UNIQUE,
  password_hash text NOT NULL,            -- scrypt$N$r$p$salt$hash
  created_at    timestamptz NOT NULL
);

-- One-shot triggers (kind 'job', generator_id NULL), generators (kind 'generator') and generator
-- instances (kind 'job', generator_id set) share one table: instances are ordinary triggers.
CREATE TABLE triggers (
  id            uuid PRIMARY KEY,
  project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  kind          text NOT NULL CHECK (kind IN ('job', 'generator')),
  generator_id  uuid,
  shard         integer NOT NULL,
  status        text NOT NULL CHECK (status IN
                  ('registered', 'skipped', 'queued', 'running', 'retrying', 'completed', 'cancelled', 'active')),
  scheduled_at  timestamptz,              -- resolved time (instances and one-shots); NULL for generators
  due_at        timestamptz,              -- when the scheduler acts next (fire or retry); NULL when nothing is pending
  url           text NOT NULL,
  method        text NOT NULL,
  headers       jsonb NOT NULL,           -- [[name, value], ...] in wire order, repeats kept
  body          bytea,
  content_type  text,
  title         text,
  tags          text[] NOT NULL DEFAULT '{}',
  custom_key    text,
  retry         jsonb,                    -- per-trigger retry policy, NULL when none
  cron_expr     text,                     -- generators only; never returned by the API
  cron_tz       text,
  attempts      integer NOT NULL DEFAULT 0,  -- attempts made so far (executions recorded)
  triggered_by  text,
  claimed_by    text,                     -- node that moved it to queued/running (crash recovery)                     -- why the pending attempt runs: NULL (schedule or retry policy) or 'retry' (replay)
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);
-- Scheduler: the due triggers of one shard in time order (registered ones and pending retries).
CREATE INDEX triggers_due ON triggers (shard, due_at) WHERE status IN ('registered', 'retrying');
-- Crash recovery: claimed but unfinished triggers of a shard.
CREATE INDEX triggers_inflight ON triggers (shard) WHERE status IN ('queued', 'running');
-- A custom key is owned by at most one pending trigger or active generator of a project.
CREATE UNIQUE INDEX triggers_custom_key ON triggers (project_id, custom_key)
  WHERE custom_key IS NOT NULL AND status IN ('registered', 'skipped', 'retrying', 'active');
-- Listing: newest first per project (UUIDv7 ids are time-ordered).
CREATE INDEX triggers_project ON triggers (project_id, id DESC);
-- Declare / bulk / tag policies: triggers by tag.
CREATE INDEX triggers_tags ON triggers USING gin (tags);
-- Materializer: at most one upcoming instance per generator, and never two live ones for one time
-- (a cancelled upcoming instance may be replaced by a new one for the same time).
CREATE UNIQUE INDEX triggers_generator_time ON triggers (generator_id, scheduled_at)
  WHERE generator_id IS NOT NULL AND status <> 'cancelled';
CREATE UNIQUE INDEX triggers_generator_upcoming ON triggers (generator_id)
  WHERE generator_id IS NOT NULL AND status = 'registered';
-- Materializer: active generators of a shard.
CREATE INDEX triggers_generators ON triggers (shard) WHERE kind = 'generator' AND status = 'active';

CREATE TABLE executions (
  id                      uuid PRIMARY KEY,
  trigger_id              uuid NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
  project_id              uuid NOT NULL,
  attempt                 integer NOT NULL,
  status                  text NOT NULL CHECK (status IN ('succeeded', 'failed')),
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
  url                     text NOT NULL
);
CREATE INDEX executions_trigger ON executions (trigger_id, attempt);
CREATE INDEX executions_project ON executions (project_id, id DESC);
CREATE INDEX executions_dead_letters ON executions (project_id, id DESC) WHERE is_dead_letter;

CREATE TABLE tag_policies (
  id                          uuid PRIMARY KEY,
  project_id                  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  tag                         text NOT NULL,
  max_concurrent              integer,
  request_timeout_seconds     integer,
  throughput                  jsonb,
  retry_strategy              text,
  retry_max_attempts          integer,
  retry_initial_delay_seconds integer,
  retry_max_delay_seconds     integer,
  retry_on                    text,
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL,
  UNIQUE (project_id, tag)
);
