-- Migration 9: standard webhooks secrets, encryption at rest, trace context
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
