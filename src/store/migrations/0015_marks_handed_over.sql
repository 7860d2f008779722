-- Migration 15: marks handed over
-- A node that gives a shard up while it runs (a rebalance, a graceful stop) says so on the shard's
-- mark before it lets go of the shard's lock (store/shardMarks.ts). The next owner then knows the
-- fired triggers the mark covers are still being sent by a live node; a mark taken over without it
-- was left by a node whose session ended (docs/cluster.md, "On a crash").
ALTER TABLE shard_marks ADD COLUMN handed_over boolean NOT NULL DEFAULT false;
