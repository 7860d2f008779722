-- Migration 12: tag index of tagged triggers only
-- The GIN index of tags indexed an empty array too (GIN keeps an entry for an empty item), so every
-- untagged trigger paid for an entry at its insert and at each update that is not HOT (its recorded
-- outcome): now only tagged triggers have entries, and every query by tag says so
-- (cardinality(t.tags) > 0) for the planner to use it.
DROP INDEX triggers_tags;
CREATE INDEX triggers_tags ON triggers USING gin (tags) WHERE cardinality(tags) > 0;
