-- Migration 20: a digest of each declared trigger's compared fields
-- POST /declare compares every item with the pending trigger its key matches (docs/declare-and-bulk.md
-- "What the call does": the time or cron, url, method, headers, body, title, tags, retry). Reading and
-- decoding every one of those fields of every trigger carrying the tag, to find most of them
-- unchanged, was most of an unchanged call. /declare now stores, with each trigger it writes, a digest
-- of those fields as it compares them (domain/itemDigest.ts: SHA-256, or with ENCRYPTION_KEYS set an
-- HMAC-SHA256 under a key derived from the writing key, so that it tells nothing of the sealed headers
-- and body); its read (store/itemReads.ts) matches the items' digests against the stored ones and
-- decodes the compared fields only of the triggers whose digest differs or is missing.
-- NULL: not known (a trigger written by /schedule, /bulk or an edit, or before this migration): the
-- fields are compared as before.
ALTER TABLE triggers ADD COLUMN item_digest text;

-- A digest stays true to the fields: an update that sets any compared field (or re-seals the headers
-- and body) without setting a new digest clears it. Written by /declare with its new digest, or by
-- the other writers (an edit, /bulk, `keys rotate-encryption`); only rows that have a digest run it.
CREATE FUNCTION triggers_item_digest_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.item_digest := NULL; RETURN NEW; END
$$;

CREATE TRIGGER triggers_item_digest_stale
  BEFORE UPDATE OF kind, scheduled_at, cron_expr, cron_tz, url, method, headers, body, sealed_with, content_type, title, tags, retry
  ON triggers FOR EACH ROW
  WHEN (OLD.item_digest IS NOT NULL AND NEW.item_digest IS NOT DISTINCT FROM OLD.item_digest)
  EXECUTE FUNCTION triggers_item_digest_cleared();
