-- Migration 6: dashboard
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
