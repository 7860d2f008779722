-- Migration 16: api key labels
-- An API key may carry a label saying what it is for (docs/settings.md, key create): shown wherever
-- keys are listed. NULL: no label.
ALTER TABLE api_keys ADD COLUMN label text;
