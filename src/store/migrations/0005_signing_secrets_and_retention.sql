-- Migration 5: signing secrets and retention
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
