-- Migration 13: replay headers sealed at rest
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
