// One scenario's world, built fresh and torn down every time: a new database on the private cluster,
// N nodes started together, a project and an API key made with the CLI, shard ownership settled
// (every node holding its share), the target armed, the status probes running, and a timeline of
// what happened when. Teardown stops the probes and the nodes (SIGTERM, SIGKILL after 5 s) and drops
// the database.
import * as path from "node:path"
import { sleep } from "../bench/common.ts"
import { say } from "./lifecycle.ts"
import { ownership, shardCounts, type Ownership } from "./inspect.ts"
import type { LogSummary } from "./logs.ts"
import { cli, type NodeProcess, type Service, startNode } from "./nodes.ts"
import type { PrivateCluster } from "./postgres.ts"
import { type Prober, startProber } from "./probes.ts"
import type { Target } from "./target.ts"

export interface RunContext {
  readonly cluster: PrivateCluster
  readonly service: Service
  readonly target: Target
  /** bench-results/chaos-<time>/: node logs. */
  readonly logDir: string
}

export interface World {
  readonly scenario: string
  readonly context: RunContext
  readonly database: string
  readonly nodes: ReadonlyArray<NodeProcess>
  readonly key: string
  readonly prober: Prober
  readonly shards: number
  /** Node index → node id (application name `timewheel-node:<id>` of its lock session at the start). */
  readonly nodeIds: ReadonlyMap<number, string>
  readonly startedAt: number
  /** Records `event` at the current instant (or `atMs`); returns the instant. */
  readonly mark: (event: string, atMs?: number) => number
  readonly timeline: () => ReadonlyArray<{ readonly atS: number; readonly event: string }>
  /** Ownership now; undefined when the database does not answer. */
  readonly ownership: () => Promise<Ownership | undefined>
  readonly logs: () => Record<string, LogSummary>
  readonly teardown: () => Promise<void>
}

export const createWorld = async (
  context: RunContext, scenario: string, nodeCount: number, targetDelayMs: number, expected: number
): Promise<World> => {
  const { cluster, service, target } = context
  const startedAt = Date.now()
  const events: Array<{ atMs: number; event: string }> = []
  const mark = (event: string, atMs = Date.now()) => {
    events.push({ atMs, event })
    return atMs
  }
  if (!cluster.running()) {
    say("  the private PostgreSQL was down; starting it")
    await cluster.start()
  }
  const database = await cluster.freshDatabase(scenario)
  mark("database created")
  const started = await Promise.allSettled(Array.from({ length: nodeCount }, (_, index) =>
    startNode(service, index, database.url, path.join(context.logDir, `${scenario}-node${index}.log`), startedAt)
  ))
  const nodes = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []))
  const teardownNodes = async () => {
    for (const node of nodes) if (node.alive()) node.signal("SIGTERM")
    const deadline = Date.now() + 5_000
    for (const node of nodes) {
      if (!(await node.waitExit(deadline))) node.signal("SIGKILL")
    }
    for (const node of nodes) {
      await node.waitExit(Date.now() + 2_000)
      node.log.close()
    }
  }
  const failed = started.find((result) => result.status === "rejected")
  if (failed !== undefined) {
    await teardownNodes()
    await database.drop().catch(() => {})
    throw (failed as PromiseRejectedResult).reason
  }
  mark(`${nodeCount} nodes listening`)

  const snapshot = () => ownership(cluster, database.name, nodes).catch(() => undefined)
  let key: string
  let shards: number
  let nodeIds: Map<number, string>
  try {
    await cli(service, database.url, ["project", "create", "chaos", "--monthly-quota", "100000000"])
    key = (await cli(service, database.url, ["key", "create", "chaos"])).split("\n").pop()!.trim()
    if (!key.startsWith("ttr_")) throw new Error(`unexpected key from the CLI: ${key}`)
    const stored = await cluster.query<{ value: string }>(database.name, "SELECT value FROM settings WHERE key = 'shards'")
    shards = Number(stored[0]?.value ?? 64)
    // wait until every node holds its share (rebalancing runs every second), at most 30 s
    const deadline = Date.now() + 30_000
    let settled: Ownership | undefined
    for (;;) {
      settled = await snapshot()
      if (settled !== undefined) {
        const counts = Object.values(settled.nodes).map((entry) => entry.shards.length)
        const total = counts.reduce((a, b) => a + b, 0)
        if (total === shards && Math.min(...counts) >= Math.floor(shards / nodeCount) - 2) break
      }
      if (Date.now() > deadline) {
        say(`  ownership did not settle within 30 s: ${settled === undefined ? "no answer" : JSON.stringify(shardCounts(settled))}`)
        break
      }
      await sleep(250)
    }
    mark(`ownership settled ${settled === undefined ? "?" : JSON.stringify(shardCounts(settled))}`)
    nodeIds = new Map()
    for (const node of nodes) {
      const id = settled?.nodes[node.index]?.nodeIds[0]
      if (id !== undefined) nodeIds.set(node.index, id)
    }
    await target.configure(targetDelayMs, expected, nodes.map((node) => ({ index: node.index, pid: node.pid, uid: node.uid })))
  } catch (error) {
    await teardownNodes()
    await database.drop().catch(() => {})
    throw error
  }
  const prober = startProber(nodes, key, target)

  return {
    scenario,
    context,
    database: database.name,
    nodes,
    key,
    prober,
    shards,
    nodeIds,
    startedAt,
    mark,
    timeline: () => [...events].sort((a, b) => a.atMs - b.atMs).map((e) => ({ atS: Math.round(e.atMs - startedAt) / 1000, event: e.event })),
    ownership: snapshot,
    logs: () => Object.fromEntries(nodes.map((node) => [String(node.index), node.logs()])),
    teardown: async () => {
      await prober.stop()
      await teardownNodes()
      if (!cluster.running()) await cluster.start().catch(() => {})
      await database.drop().catch((error: unknown) => say(`  could not drop ${database.name}: ${String(error)}`))
    }
  }
}
