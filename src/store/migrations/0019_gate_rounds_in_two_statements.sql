-- Migration 19: gate lease rounds in two statements
-- A node's lease round (store/gateLeases.ts) held its gates' advisory locks in a transaction of five
-- round trips (begin, lock, read, write, commit): on a node busy sending, each answer waited for its
-- event loop, and the locks were held for that latency, not for PostgreSQL's work. The round is now
-- two statements on one session: gate_round_read takes the gates' locks (session-level, in one order
-- for every node) and reads under them; the node decides; gate_round_write writes, commits and
-- gives the locks back. The locks are held across one answer of the node. Each statement is its own
-- transaction: the write locks the policies its rows were granted under (FOR SHARE, until its commit:
-- a policy change waits for it) and writes no row of a gate whose policy changed since the read
-- (returned as stale: that node's next round reads the change).

-- The gates' locks (key 0x7467, hashtext of 'project/tag'), then, in a statement of its own (a fresh
-- snapshot: what the previous holder of a lock committed is seen), each gate's policy (an origin's:
-- its own target policy, else the project's '*'), hold, circuit, backlog and lease rows, as one
-- jsonb per gate.
CREATE FUNCTION gate_round_read(p_gates jsonb, p_node text, p_ttl_ms bigint, p_grace_ms bigint, p_node_prefix text, p_draining_prefix text)
RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
BEGIN
  -- the read locks policy rows (FOR SHARE): its commit need not wait for the WAL flush
  PERFORM set_config('synchronous_commit', 'off', true); -- (local to the statement's transaction)
  PERFORM count(pg_advisory_lock(29799, hashtext(k.key)))
    FROM (SELECT DISTINCT g->>'project_id' || '/' || (g->>'tag') AS key FROM jsonb_array_elements(p_gates) g ORDER BY 1) k; -- held until gate_round_write gives them back
  RETURN QUERY
  WITH g AS (SELECT * FROM jsonb_to_recordset(p_gates) AS g(project_id uuid, tag text)),
  server AS (SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::bigint AS up_ms,
    (SELECT count(DISTINCT application_name) FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE p_node_prefix || '%')::int AS nodes),
  policies AS (
    SELECT tp.project_id, tp.tag, tp.max_concurrent, tp.throughput, tp.updated_at
    FROM tag_policies tp JOIN g ON g.project_id = tp.project_id AND g.tag = tp.tag
    FOR SHARE OF tp
  ),
  -- the target policies the origins' gates may read (each row locked once, however many origins
  -- fall under a '*')
  target_rows AS (
    SELECT tp.project_id, tp.origin, tp.max_concurrent, tp.throughput, tp.updated_at, tp.circuit_failures, tp.circuit_cooldown_seconds
    FROM target_policies tp
    WHERE (tp.project_id, tp.origin) IN (SELECT g.project_id, g.tag FROM g WHERE g.tag LIKE '%://%'
      UNION SELECT g.project_id, '*' FROM g WHERE g.tag LIKE '%://%')
    FOR SHARE OF tp
  ),
  -- an origin's gate (its name has '://'): the origin's own target policy, else the project's '*'
  targets AS (
    SELECT DISTINCT ON (g.project_id, g.tag) g.project_id, g.tag, t.max_concurrent, t.throughput, t.updated_at,
      t.circuit_failures, t.circuit_cooldown_seconds
    FROM g JOIN target_rows t ON t.project_id = g.project_id AND t.origin IN (g.tag, '*')
    WHERE g.tag LIKE '%://%'
    ORDER BY g.project_id, g.tag, t.origin = '*'
  )
  SELECT jsonb_build_object(
    'project_id', g.project_id, 'tag', g.tag,
    'policy', CASE WHEN g.tag LIKE '%://%' THEN
      CASE WHEN o.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', o.max_concurrent, 'throughput', o.throughput,
        'updated_ms', (extract(epoch FROM o.updated_at) * 1000)::float8,
        'circuit', CASE WHEN o.circuit_failures IS NOT NULL
          THEN jsonb_build_object('failures', o.circuit_failures, 'cooldownSeconds', o.circuit_cooldown_seconds) END) END
    ELSE
      CASE WHEN p.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', p.max_concurrent, 'throughput', p.throughput,
        'updated_ms', (extract(epoch FROM p.updated_at) * 1000)::float8) END
    END,
    'hold', (SELECT jsonb_build_object('since_ms', (extract(epoch FROM h.held_since) * 1000)::float8,
        'until_ms', (extract(epoch FROM h.held_until) * 1000)::float8, 'backoff_ms', h.backoff_ms)
      FROM gate_holds h WHERE h.project_id = g.project_id AND h.tag = g.tag),
    'circuit', (SELECT jsonb_build_object('failures', c.failures, 'last_failure_ms', (extract(epoch FROM c.last_failure_at) * 1000)::float8,
        'opened_ms', (extract(epoch FROM c.opened_at) * 1000)::float8, 'reason', c.reason,
        'open_until_ms', (extract(epoch FROM c.open_until) * 1000)::float8, 'cooldown_ms', c.cooldown_ms, 'probe_node', c.probe_node,
        'probe_since_ms', (extract(epoch FROM c.probe_since) * 1000)::float8, 'version', c.version)
      FROM target_circuits c WHERE c.project_id = g.project_id AND c.origin = g.tag),
    -- triggers waiting in PostgreSQL (store/gates.ts WAITING_SQL), taken by no node, up to 1,000
    'backlog', (SELECT count(*) FROM (SELECT 1 FROM gate_slots s JOIN triggers t ON t.id = s.trigger_id
      WHERE s.project_id = g.project_id AND s.tag = g.tag AND NOT s.running AND (t.status || '') = 'queued' AND t.claimed_by IS NULL
      LIMIT 1000) b)::int,
    'leases', coalesce((SELECT jsonb_agg(jsonb_build_object('node', l.node, 'permits', l.permits, 'tokens', l.tokens, 'demand', l.demand,
        'in_flight', l.in_flight, 'gone_ms', (extract(epoch FROM l.gone_at) * 1000)::float8,
        -- pg_stat_activity is read only for a live row past its lease
        'reclaimable', l.gone_at IS NULL AND l.node <> p_node
          AND l.renewed_at < now() - p_ttl_ms * interval '1 millisecond' AND server.up_ms > p_grace_ms
          AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.datname = current_database()
            AND a.application_name IN (p_node_prefix || l.node, p_draining_prefix || l.node)))
        ORDER BY l.node)
      FROM gate_leases l WHERE l.project_id = g.project_id AND l.tag = g.tag), '[]'),
    'now_ms', (extract(epoch FROM now()) * 1000)::bigint::text,
    'up_ms', server.up_ms::text, 'nodes', server.nodes)
  FROM g CROSS JOIN server
    LEFT JOIN targets o ON o.project_id = g.project_id AND o.tag = g.tag
    LEFT JOIN policies p ON p.project_id = g.project_id AND p.tag = g.tag; -- one jsonb per gate
END $$;

-- This node's rows (p_keep: each with the policy version it was granted under, policy_ms), the rows
-- it drops, the gone nodes' rows it reclaims and purges; then the commit (waiting for the WAL flush
-- when p_durable: the round takes units nobody held) and the gates' locks given back. p_stale: the
-- kept gates not written (their policy changed, or went, since the read).
CREATE PROCEDURE gate_round_write(p_node text, p_keep jsonb, p_drop jsonb, p_reclaim jsonb, p_purge jsonb, p_durable boolean,
  INOUT p_stale jsonb DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  v_keep jsonb; -- the kept rows whose policy is unchanged
BEGIN
  PERFORM 1 FROM tag_policies tp
    WHERE (tp.project_id, tp.tag) IN (SELECT (e->>'project_id')::uuid, e->>'tag' FROM jsonb_array_elements(p_keep) e
      WHERE e->>'tag' NOT LIKE '%://%')
    FOR SHARE OF tp; -- the tags' policies
  PERFORM 1 FROM target_policies tp
    WHERE (tp.project_id, tp.origin) IN (SELECT (e->>'project_id')::uuid, e->>'tag' FROM jsonb_array_elements(p_keep) e
      WHERE e->>'tag' LIKE '%://%' UNION SELECT (e->>'project_id')::uuid, '*' FROM jsonb_array_elements(p_keep) e WHERE e->>'tag' LIKE '%://%')
    FOR SHARE OF tp; -- the origins' (own and '*')
  SELECT coalesce(jsonb_agg(k.e) FILTER (WHERE k.fresh), '[]'),
      coalesce(jsonb_agg(jsonb_build_object('project_id', k.e->'project_id', 'tag', k.e->'tag')) FILTER (WHERE NOT k.fresh), '[]')
    INTO v_keep, p_stale
  FROM (SELECT e, coalesce(CASE WHEN e->>'tag' LIKE '%://%' THEN
        (SELECT (extract(epoch FROM t.updated_at) * 1000)::float8 FROM target_policies t
          WHERE t.project_id = (e->>'project_id')::uuid AND t.origin IN (e->>'tag', '*') ORDER BY t.origin = '*' LIMIT 1)
      ELSE (SELECT (extract(epoch FROM t.updated_at) * 1000)::float8 FROM tag_policies t
          WHERE t.project_id = (e->>'project_id')::uuid AND t.tag = e->>'tag')
      END = (e->>'policy_ms')::float8, false) AS fresh
    FROM jsonb_array_elements(p_keep) e) k; -- stale: the others

  INSERT INTO gate_leases (project_id, tag, node, permits, tokens, demand, in_flight, policy_seen, renewed_at)
  SELECT o.project_id, o.tag, p_node, o.permits, o.tokens, o.demand, o.in_flight, o.policy_seen, now()
  FROM jsonb_to_recordset(v_keep) AS o(project_id uuid, tag text, permits int, tokens jsonb, demand jsonb, in_flight int,
    policy_seen timestamptz)
  ON CONFLICT (project_id, tag, node) DO UPDATE SET permits = excluded.permits, tokens = excluded.tokens,
    demand = excluded.demand, in_flight = excluded.in_flight, policy_seen = excluded.policy_seen, renewed_at = excluded.renewed_at; -- this node's rows
  DELETE FROM gate_leases l USING jsonb_to_recordset(p_drop) AS d(project_id uuid, tag text)
  WHERE l.project_id = d.project_id AND l.tag = d.tag AND l.node = p_node; -- the rows it drops
  UPDATE gate_leases l SET node = l.node || '~gone~' || (extract(epoch FROM now()) * 1000)::bigint, gone_at = now(),
    permits = 0, in_flight = 0, demand = '{}'
  FROM jsonb_to_recordset(p_reclaim) AS r(project_id uuid, tag text, node text)
  WHERE l.project_id = r.project_id AND l.tag = r.tag AND l.node = r.node AND l.gone_at IS NULL; -- gone nodes' rows reclaimed
  DELETE FROM gate_leases l USING jsonb_to_recordset(p_purge) AS p(project_id uuid, tag text, node text)
  WHERE l.project_id = p.project_id AND l.tag = p.tag AND l.node = p.node AND l.gone_at IS NOT NULL; -- gone rows purged

  PERFORM set_config('synchronous_commit', CASE WHEN p_durable THEN 'on' ELSE 'off' END, true); -- (local)
  COMMIT; -- the round's writes are visible
  -- the session holds no other advisory lock (store/gateLeases.ts reserves it for the round)
  PERFORM pg_advisory_unlock_all(); -- only the gates' locks are held
END $$;
