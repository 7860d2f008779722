// The database schema as ordered migrations. Applied at start inside one transaction that holds
// an advisory lock, so processes starting at once take turns and each migration runs exactly once
// (a migration with online steps runs them first, each in a transaction of its own: store/db.ts).
// Designed for tens of millions of trigger and execution rows: every hot path has a narrow
// (mostly partial) index, and ids are UUIDv7 so "newest first" is an index scan on the primary key.

export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
  /**
   * Steps run before `sql`, each in a transaction of its own (store/db.ts migrate): long work that
   * must not hold the locks `sql` takes, such as validating a constraint while writes go on. Each
   * must be safe to run again (a start that stopped between them runs them all again).
   */
  readonly online?: ReadonlyArray<string>
}

export const MIGRATIONS: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "initial schema",
    sql: `
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
`
  },
  {
    version: 2,
    name: "claim time",
    sql: `
-- when the node in claimed_by took the trigger (claim, start, recovery): the start of an attempt
-- that its node could not finish, recorded as an interrupted execution when the trigger is recovered
ALTER TABLE triggers ADD COLUMN claimed_at timestamptz;
`
  },
  {
    version: 3,
    name: "declared custom keys",
    sql: `
-- docs/internals.md "/declare and /bulk": /declare matches a custom key only among the triggers
-- carrying its tag, and creates a second pending trigger when another trigger outside the tag owns the
-- key. key_scope is the tag of the /declare call that created the trigger (NULL when /schedule or /bulk
-- created it; an edit never changes it). A key has at most one pending owner among the unscoped
-- triggers, and at most one per scope among the scoped triggers still carrying their scope's tag (one
-- whose tag was edited away is outside the tag and no longer holds the key there).
ALTER TABLE triggers ADD COLUMN key_scope text;
DROP INDEX triggers_custom_key;
CREATE UNIQUE INDEX triggers_custom_key ON triggers (project_id, custom_key)
  WHERE custom_key IS NOT NULL AND key_scope IS NULL AND status IN ('registered', 'skipped', 'retrying', 'active');
CREATE UNIQUE INDEX triggers_declared_key ON triggers (project_id, key_scope, custom_key)
  WHERE custom_key IS NOT NULL AND key_scope IS NOT NULL AND key_scope = ANY (tags)
    AND status IN ('registered', 'skipped', 'retrying', 'active');
-- Lookups by key whatever the scope or status: /schedule's key owner, /cancel by key, /bulk's upserts.
CREATE INDEX triggers_key ON triggers (project_id, custom_key) WHERE custom_key IS NOT NULL;
`
  },
  {
    version: 4,
    name: "tag gates",
    sql: `
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
`
  },
  {
    version: 5,
    name: "signing secrets and retention",
    sql: `
-- Signed deliveries (docs/signatures.md "The signing secret"): each project's
-- signing secret, 'whsec_' and 64 hex characters. The default (evaluated per row) gives every
-- existing project its own; the service creates and rotates secrets itself. After a rotation the
-- previous secret signs too until previous_signing_secret_until.
ALTER TABLE projects ADD COLUMN signing_secret text NOT NULL
  DEFAULT ('whsec_' || encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'));
ALTER TABLE projects ADD COLUMN previous_signing_secret text;
ALTER TABLE projects ADD COLUMN previous_signing_secret_until timestamptz;

-- Retention (RETENTION_DAYS): finished triggers by the time they last changed, oldest first.
CREATE INDEX triggers_finished ON triggers (updated_at) WHERE status IN ('completed', 'cancelled', 'skipped');
`
    },
  {
    version: 6,
    name: "dashboard",
    sql: `
-- Dashboard sign-in (docs/dashboard.md). A session is a random token in an HttpOnly cookie; only its SHA-256
-- is stored. It ends at expires_at (absolute) or when last_seen_at is older than the idle limit;
-- last_seen_at is written at most once a minute per session.
CREATE TABLE admin_sessions (
  token_hash    bytea PRIMARY KEY,
  admin_id      uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
  created_at    timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  address       text
);
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at);

-- Failed sign-ins, counted over a sliding window per account (the e-mail as typed, lowercased) and
-- per client address; a success clears its account's rows; old rows are deleted by the dashboard job.
CREATE TABLE signin_failures (
  scope      text NOT NULL CHECK (scope IN ('account', 'address')),
  subject    text NOT NULL,
  failed_at  timestamptz NOT NULL
);
CREATE INDEX signin_failures_subject ON signin_failures (scope, subject, failed_at);

-- "last used" of a key: noted in memory by the key cache, written at most once a minute per node.
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- Failure alerts per project: a Slack-compatible webhook and/or e-mail recipients. next_send_at
-- groups a burst: no message before it, and each message moves it a minute ahead.
CREATE TABLE project_alerts (
  project_id        uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  webhook_url       text,
  email_recipients  text[] NOT NULL DEFAULT '{}',
  next_send_at      timestamptz NOT NULL DEFAULT '-infinity',
  updated_at        timestamptz NOT NULL
);
-- Dead letters waiting for their project's next alert message (filled by the trigger below).
CREATE TABLE alert_outbox (
  execution_id  uuid PRIMARY KEY,
  project_id    uuid NOT NULL,
  trigger_id    uuid NOT NULL,
  url           text NOT NULL,
  error         text,
  failed_at     timestamptz NOT NULL
);
CREATE INDEX alert_outbox_project ON alert_outbox (project_id, failed_at);
-- What each alert message (or test message) did: sent, or the target's error. Never retried.
CREATE TABLE alert_sends (
  id            uuid PRIMARY KEY,
  project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  channel       text NOT NULL CHECK (channel IN ('webhook', 'email')),
  sent_at       timestamptz NOT NULL,
  dead_letters  integer NOT NULL,          -- how many dead letters the message reported (0: a test)
  test          boolean NOT NULL,
  error         text                       -- NULL: delivered to the target
);
CREATE INDEX alert_sends_project ON alert_sends (project_id, sent_at DESC);

-- The overview's rollup: per project and minute (of the attempt's start), attempts by outcome and a
-- histogram of first attempts' lateness (start minus scheduled time): bucket i (array index i + 1)
-- holds lateness in [2^(i/4) - 1, 2^((i+1)/4) - 1) ms, i up to 127. Executions add their batch to
-- delivery_minutes_pending (an append-only table: no contention between nodes); the dashboard job
-- folds it into delivery_minutes every few seconds. Reads take both.
CREATE TABLE delivery_minutes (
  project_id    uuid NOT NULL,
  minute        timestamptz NOT NULL,
  succeeded     bigint NOT NULL,
  failed        bigint NOT NULL,             -- failed attempts that will be retried
  dead_letters  bigint NOT NULL,
  lateness      bigint[] NOT NULL,
  PRIMARY KEY (project_id, minute)
);
CREATE TABLE delivery_minutes_pending (
  project_id    uuid NOT NULL,
  minute        timestamptz NOT NULL,
  succeeded     bigint NOT NULL,
  failed        bigint NOT NULL,
  dead_letters  bigint NOT NULL,
  lateness      bigint[] NOT NULL
);
-- Queued and in-flight triggers per tag policy, sampled once a minute by the dashboard job.
CREATE TABLE tag_policy_samples (
  project_id  uuid NOT NULL,
  tag         text NOT NULL,
  minute      timestamptz NOT NULL,
  queued      integer NOT NULL,
  in_flight   integer NOT NULL,
  PRIMARY KEY (project_id, minute, tag)
);

-- Element-wise sum of two histograms (NULL is empty), and its aggregate.
CREATE FUNCTION timewheel_hist_add(a bigint[], b bigint[]) RETURNS bigint[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE
    ARRAY(SELECT coalesce(a[i], 0) + coalesce(b[i], 0) FROM generate_series(1, greatest(cardinality(a), cardinality(b))) AS i) END
$$;
CREATE AGGREGATE timewheel_hist_sum(bigint[]) (SFUNC = timewheel_hist_add, STYPE = bigint[]);

-- (the migration runner splits at a semicolon that ends a line: inside this body none does)
CREATE FUNCTION timewheel_executions_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO delivery_minutes_pending (project_id, minute, succeeded, failed, dead_letters, lateness)
  WITH x AS (
    SELECT r.project_id, date_trunc('minute', r.started_at) AS minute, r.status, r.is_dead_letter,
      CASE WHEN r.attempt = 1 AND r.triggered_by IS NULL AND t.scheduled_at IS NOT NULL THEN
        least(127, floor(4 * ln(1 + greatest(0, extract(epoch FROM r.started_at - t.scheduled_at) * 1000)) / ln(2)))::int
      END AS bucket
    FROM recorded r LEFT JOIN triggers t ON t.id = r.trigger_id
  ), buckets AS (
    SELECT project_id, minute, bucket, count(*) AS n FROM x WHERE bucket IS NOT NULL GROUP BY project_id, minute, bucket
  )
  SELECT c.project_id, c.minute, c.succeeded, c.failed, c.dead_letters,
    coalesce((SELECT array_agg(coalesce(b.n, 0) ORDER BY i)
      FROM generate_series(0, (SELECT max(m.bucket) FROM buckets m WHERE m.project_id = c.project_id AND m.minute = c.minute)) AS i
      LEFT JOIN buckets b ON b.project_id = c.project_id AND b.minute = c.minute AND b.bucket = i), '{}')
  FROM (
    SELECT project_id, minute, count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
      count(*) FILTER (WHERE status = 'failed' AND NOT is_dead_letter) AS failed,
      count(*) FILTER (WHERE is_dead_letter) AS dead_letters
    FROM x GROUP BY project_id, minute
  ) c; INSERT INTO alert_outbox (execution_id, project_id, trigger_id, url, error, failed_at)
  SELECT r.id, r.project_id, r.trigger_id, r.url,
    coalesce(r.error_kind || ': ' || r.error_message, 'HTTP ' || r.http_status, r.error_message), r.finished_at
  FROM recorded r
  WHERE r.is_dead_letter AND EXISTS (SELECT FROM project_alerts a WHERE a.project_id = r.project_id
    AND (a.webhook_url IS NOT NULL OR cardinality(a.email_recipients) > 0)); RETURN NULL; END
$$;
CREATE TRIGGER executions_recorded AFTER INSERT ON executions
  REFERENCING NEW TABLE AS recorded FOR EACH STATEMENT EXECUTE FUNCTION timewheel_executions_recorded();
`
  },
  {
    version: 7,
    name: "fired marks",
    sql: `
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
`
  },
  {
    version: 8,
    name: "bulk actions",
    sql: `
-- Bulk actions (docs/bulk-actions.md): cancel or replay every trigger of a project that matched a
-- filter when the action started. The set is fixed then, as one bulk_action_items row per trigger; any
-- node works through it in chunks (commands/bulkActionRunner.ts), each chunk one short transaction that
-- locks the action row (FOR UPDATE SKIP LOCKED: one node at a time per action), acts on the chunk's
-- triggers, deletes their items and adds to the counters. So a trigger is acted on at most once by an
-- action, whichever node ran it or died running it.
CREATE TABLE bulk_actions (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  action      text NOT NULL CHECK (action IN ('cancel', 'replay')),
  filter      jsonb NOT NULL,             -- the filter as the API shows it
  replay      jsonb,                      -- replay only: {url?, headers?: [[name, value], ...]} for its attempts
  status      text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  matched     integer NOT NULL,           -- triggers in the set
  processed   integer NOT NULL DEFAULT 0,
  acted       integer NOT NULL DEFAULT 0, -- cancelled or replayed
  untouched   jsonb NOT NULL DEFAULT '{}', -- reason -> count
  error       text,                       -- why it failed
  created_at  timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE INDEX bulk_actions_project ON bulk_actions (project_id, id DESC);
CREATE INDEX bulk_actions_running ON bulk_actions (id) WHERE status = 'running';
-- The same action on the same filter is running at most once per project: calling again (after a
-- timeout, a crash) answers the running one, which then goes on.
CREATE UNIQUE INDEX bulk_actions_same_running ON bulk_actions
  (project_id, action, md5(filter::text || ' ' || coalesce(replay::text, ''))) WHERE status = 'running';

-- The triggers an action has still to act on (deleted as each chunk commits).
CREATE TABLE bulk_action_items (
  action_id   uuid NOT NULL REFERENCES bulk_actions (id) ON DELETE CASCADE,
  trigger_id  uuid NOT NULL,
  PRIMARY KEY (action_id, trigger_id)
);

-- What a replay of a bulk action sends instead of the stored URL, and the headers it adds (replacing
-- stored ones of the same name): for the attempt it queued only, i.e. while the trigger's
-- triggered_by is 'retry' (delivery/replayOverrides.ts). A later replay replaces or deletes the row.
CREATE TABLE replay_overrides (
  trigger_id  uuid PRIMARY KEY REFERENCES triggers (id) ON DELETE CASCADE,
  url         text,
  headers     jsonb NOT NULL              -- [[name, value], ...]
);
`
  },
  {
    version: 9,
    name: "standard webhooks secrets, encryption at rest, trace context",
    sql: `
-- Standard Webhooks (docs/signatures.md): a secret is 'whsec_' + base64 of its key bytes. The earlier
-- secrets ('whsec_' + 64 hex characters, the whole string the HMAC key) become 'whsec_' + base64 of the
-- SHA-256 of that string: HMAC-SHA256 hashes a key longer than its 64-byte block before use, so the new
-- key signs exactly as the old string did and targets verifying Timewheel-Signature with their old
-- secret go on verifying (domain/signing.ts standardFormOfLegacySecret). 32 bytes: 44 base64
-- characters, no line break in encode's output.
UPDATE projects SET signing_secret = 'whsec_' || encode(sha256(convert_to(signing_secret, 'UTF8')), 'base64')
  WHERE signing_secret ~ '^whsec_[0-9a-f]{64}$';
UPDATE projects SET previous_signing_secret = 'whsec_' || encode(sha256(convert_to(previous_signing_secret, 'UTF8')), 'base64')
  WHERE previous_signing_secret ~ '^whsec_[0-9a-f]{64}$';
ALTER TABLE projects ALTER COLUMN signing_secret
  SET DEFAULT ('whsec_' || encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'base64'));

-- Encryption at rest (ENCRYPTION_KEYS): the id of the key that sealed the row's headers and body
-- (AES-256-GCM, store/sealedRequests.ts); NULL: both stored plain. The partial index lists the key ids
-- in use at start (a skip scan, one probe per id) and is empty while encryption is off.
ALTER TABLE triggers ADD COLUMN sealed_with text;
CREATE INDEX triggers_sealed_with ON triggers (sealed_with) WHERE sealed_with IS NOT NULL;

-- Tracing (OTEL_EXPORTER_OTLP_ENDPOINT): the W3C trace context of the /schedule, /declare or /bulk
-- call that last wrote the trigger (a generator's instances copy their generator's); its delivery
-- attempts are spans of that trace. NULL when tracing was off.
ALTER TABLE triggers ADD COLUMN traceparent text;
ALTER TABLE triggers ADD COLUMN tracestate text;
`
  },
  {
    version: 10,
    name: "gate leases and holds",
    sql: `
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
`
  },
  {
    version: 11,
    name: "lateness apart from tag gates",
    sql: `
-- The overview shows the scheduler's own lateness apart from the time triggers wait for their tags'
-- concurrency and throughput limits (docs/dashboard.md): a first attempt of a trigger admitted by a tag
-- gate (a policy with maxConcurrent or throughput) is counted in gated_lateness, every other one in
-- lateness as before (domain/deliveryRollup.ts, written with the executions: migration 7). Rows written
-- before this migration have an empty gated_lateness.
ALTER TABLE delivery_minutes ADD COLUMN gated_lateness bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE delivery_minutes_pending ADD COLUMN gated_lateness bigint[] NOT NULL DEFAULT '{}';
`
  },
  {
    version: 12,
    name: "tag index of tagged triggers only",
    sql: `
-- The GIN index of tags indexed an empty array too (GIN keeps an entry for an empty item), so every
-- untagged trigger paid for an entry at its insert and at each update that is not HOT (its recorded
-- outcome): now only tagged triggers have entries, and every query by tag says so
-- (cardinality(t.tags) > 0) for the planner to use it.
DROP INDEX triggers_tags;
CREATE INDEX triggers_tags ON triggers USING gin (tags) WHERE cardinality(tags) > 0;
`
  },
  {
    version: 13,
    name: "replay headers sealed at rest",
    sql: `
-- With ENCRYPTION_KEYS set, the headers a bulk replay adds are sealed like a trigger's
-- (store/sealedReplays.ts): in bulk_actions.replay and replay_overrides.headers, the jsonb holds the
-- base64 of the sealed pairs and sealed_with the key's id (NULL: stored plain). A sealed replay
-- differs each time it is sealed, so the rule that the same action runs once at a time compares
-- replay_key instead: the replay's jsonb text when plain (as it was), a keyed fingerprint when sealed.
ALTER TABLE bulk_actions ADD COLUMN sealed_with text;
ALTER TABLE bulk_actions ADD COLUMN replay_key text;
UPDATE bulk_actions SET replay_key = replay::text WHERE replay IS NOT NULL;
DROP INDEX bulk_actions_same_running;
CREATE UNIQUE INDEX bulk_actions_same_running ON bulk_actions
  (project_id, action, md5(filter::text || ' ' || coalesce(replay_key, ''))) WHERE status = 'running';
ALTER TABLE replay_overrides ADD COLUMN sealed_with text;
`
  },
  {
    version: 14,
    name: "target policies",
    sql: `
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
`
  },
  {
    version: 15,
    name: "marks handed over",
    sql: `
-- A node that gives a shard up while it runs (a rebalance, a graceful stop) says so on the shard's
-- mark before it lets go of the shard's lock (store/shardMarks.ts). The next owner then knows the
-- fired triggers the mark covers are still being sent by a live node; a mark taken over without it
-- was left by a node whose session ended (docs/cluster.md, "On a crash").
ALTER TABLE shard_marks ADD COLUMN handed_over boolean NOT NULL DEFAULT false;
`
  },
  {
    version: 16,
    name: "api key labels",
    sql: `
-- An API key may carry a label saying what it is for (docs/settings.md, key create): shown wherever
-- keys are listed. NULL: no label.
ALTER TABLE api_keys ADD COLUMN label text;
`
  },
  {
    version: 17,
    name: "executions partitioned by day",
    sql: `
-- History by day (docs/operations.md "How history is stored"): executions is partitioned by ranges
-- of its UUIDv7 id, whose first 48 bits are the attempt's millisecond time, one partition per UTC
-- day (executions_YYYYMMDD, made ahead by housekeeping: store/executionPartitions.ts), so retention
-- drops whole days instead of deleting rows. The primary key is the partition key, and reads by id
-- (a page of GET /executions, newest first) scan only the days they reach. executions_default takes
-- an id no day covers, so an insert never fails for want of a partition.
--
-- The table as it was becomes the partition of every id before its bound (the online steps below):
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
`,
    online: [
      `
-- The bound (run again by a start that stopped before the migration, so made afresh each time):
-- the start of the UTC day two days after the later of now and the newest id, so writes of the
-- nodes still running, checked against it from now on, keep within it for a day at least while the
-- steps and the migration run. NOT VALID: no scan, an exclusive lock for a moment.
DO $$
DECLARE
  newest bigint; -- ms of the newest id
  upto bigint; -- the bound's ms
  hex text; -- its 48 bits
BEGIN
  IF (SELECT relkind FROM pg_class WHERE oid = 'executions'::regclass) <> 'r' THEN RETURN; END IF; -- partitioned already
  ALTER TABLE executions DROP CONSTRAINT IF EXISTS executions_legacy_bound; -- a bound an earlier start made
  SELECT ('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint INTO newest FROM executions ORDER BY id DESC LIMIT 1; -- the primary key's last entry
  upto := (greatest((extract(epoch FROM now()) * 1000)::bigint, coalesce(newest, 0)) / 86400000 + 2) * 86400000; -- two UTC days on
  hex := lpad(to_hex(upto), 12, '0'); -- 12 hex digits
  EXECUTE format('ALTER TABLE executions ADD CONSTRAINT executions_legacy_bound CHECK (id IS NOT NULL AND id < %L::uuid) NOT VALID',
    substr(hex, 1, 8) || '-' || substr(hex, 9, 4) || '-0000-0000-000000000000'); -- the lowest UUID of that ms
END
$$;
`,
      `
-- The one scan of the table, with writes going on (VALIDATE takes a SHARE UPDATE EXCLUSIVE lock).
ALTER TABLE executions VALIDATE CONSTRAINT executions_legacy_bound;
`
    ]
  }
]
