-- Migration 3: declared custom keys
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
