-- Migration 8: bulk actions
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
