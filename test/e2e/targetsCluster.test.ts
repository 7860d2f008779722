// Target policies across three real `npm start` processes on one database
// (docs/protecting-targets.md), with untagged triggers scheduled through every node and local
// origins counting what they hold at once:
// - `*` maxConcurrent 3 holds for each origin across the cluster, and each reaches it;
// - a 429 seen by one node holds the origin on all three until Retry-After, also once that node is
//   killed right after it;
// - consecutive failures seen by several nodes open the circuit for the cluster: nothing reaches the
//   origin during the cooldown, then a single probe;
// - a node killed while its probe is in flight: another node takes the probe over once the killed
//   node is gone from the database (the probe is not lost), and sends one (not doubled); its answer
//   closes the circuit and everything waiting goes.
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { request } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningService, runCli, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { makeOrigins, type Origin } from "../support/origins.ts"
import { insecureAgent } from "../support/server.ts"
import { waitUntilAsync } from "../support/wait.ts"

/** How late an origin (in this test process) may stamp an arrival on a loaded machine. */
const OBSERVER_JITTER_MS = 150

describe("target policies across three processes", () => {
  const scope = Effect.runSync(Scope.make())
  let nodes: Array<RunningService> = []
  let made: Awaited<ReturnType<typeof makeOrigins>>
  let key = ""
  let databaseUrl = ""

  const call = async (node: RunningService, method: string, path: string, headers: Record<string, string>, body?: string) => {
    const response = await request(`${node.baseUrl}${path}`, {
      method, dispatcher: insecureAgent, headers: { "ttr-api-key": key, ...headers }, ...(body === undefined ? {} : { body })
    })
    const text = await response.body.text()
    expect(response.statusCode, text).toBeLessThan(300)
    return text === "" ? undefined : JSON.parse(text)
  }
  const policy = (node: RunningService, body: Record<string, unknown>) =>
    call(node, "POST", "/target-policies", { "content-type": "application/json" }, JSON.stringify(body)) as Promise<{ id: string }>
  const removePolicy = (node: RunningService, id: string) => call(node, "DELETE", `/target-policies/${id}`, {})
  /** `count` untagged triggers to `origin` (path `/<path>?n=<i>`), scheduled through every node in turn. */
  const scheduleMany = async (count: number, origin: Origin, path: string, when = "now", extra: Record<string, string> = {}) => {
    for (let n = 0; n < count; n++) {
      await call(nodes[n % nodes.length]!, "POST", "/schedule", { "ttr-url": `${origin.origin}/${path}?n=${n}`, "ttr-scheduled-at": when, ...extra })
    }
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  const nodeIdOf = (node: RunningService) => /"node":"([^"]+)"/.exec(node.output())![1]!
  const query = <A>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, body).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))
    ))
  const circuitOf = (origin: Origin) =>
    query((sql) => sql<{ open_until: Date | null; probe_node: string | null }>`
      SELECT open_until, probe_node FROM target_circuits WHERE origin = ${origin.origin}`).then((rows) => rows[0])

  beforeAll(async () => {
    databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir(`targets-${name}`), PORT: "0", HOST: "127.0.0.1", SHARDS: "8", LOG_FORMAT: "json"
    })
    made = await makeOrigins(6)
    nodes = await Promise.all(["a", "b", "c"].map((name) => startService(env(name))))
    expect((await runCli(["project", "create", "targets"], { env: env("cli") })).code).toBe(0)
    key = (await runCli(["key", "create", "targets"], { env: env("cli") })).stdout.trim()
    const warm = made.origins[5]!
    for (const node of nodes) await call(node, "POST", "/schedule", { "ttr-url": `${warm.origin}/warm`, "ttr-scheduled-at": "now" })
    await waitUntilAsync(() => warm.arrivals.length === 3, 20_000, "the warm-up deliveries")
  }, 180_000)

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop().catch(() => node.kill())))
    made?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)

  it("`*` maxConcurrent 3 holds for each origin across the three nodes, and each origin reaches it", async () => {
    const [a, b] = made.origins
    const star = await policy(nodes[0]!, { origin: "*", maxConcurrent: 3 })
    a!.behave({ delayMs: 200 })
    b!.behave({ delayMs: 200 })
    await scheduleMany(24, a!, "x", "now | add 1s")
    await scheduleMany(24, b!, "x", "now | add 1s")
    await waitUntilAsync(() => a!.arrivals.length === 24 && b!.arrivals.length === 24 && a!.open + b!.open === 0, 60_000, "every trigger")
    expect([a!.peak, b!.peak]).toEqual([3, 3])
    await removePolicy(nodes[1]!, star.id)
  }, 120_000)

  it("a 429 seen by one node holds the origin on all three until Retry-After, also with a node killed meanwhile", async () => {
    const o = made.origins[2]!
    const own = await policy(nodes[0]!, { origin: o.origin, maxConcurrent: 50 })
    o.behave({ status: 429, headers: { "retry-after": "4" } })
    await scheduleMany(1, o, "first")
    await waitUntilAsync(() => o.arrivals.length === 1, 20_000, "the refused one")
    const refusedAt = o.arrivals[0]!.atMs
    o.behave({})
    // the hold, settled in the database by the node that got the refusal
    let heldUntil = 0
    await waitUntilAsync(async () => {
      const held = await query((sql) => sql<{ held_until: Date }>`SELECT held_until FROM gate_holds WHERE tag = ${o.origin}`)
      if (held[0] !== undefined) heldUntil = held[0].held_until.getTime()
      return heldUntil !== 0
    }, 20_000, "the hold in the database")
    expect(heldUntil).toBeGreaterThan(refusedAt)
    // triggers fired on every node, then one node killed while they wait (its own are recovered by the others)
    await scheduleMany(12, o, "later")
    const victim = nodes[2]!
    victim.kill()
    nodes = nodes.filter((node) => node !== victim)
    await waitUntilAsync(() => o.arrivals.length === 13, 40_000, "the rest after the hold")
    expect(o.arrivals.slice(1).filter((arrival) => arrival.atMs < heldUntil - OBSERVER_JITTER_MS)).toEqual([])
    expect(heldUntil - refusedAt).toBeGreaterThanOrEqual(3_800)
    await removePolicy(nodes[0]!, own.id)
  }, 120_000)

  it("failures seen by several nodes open the circuit for the cluster; a node killed with the probe in flight: another takes it over, one probe", async () => {
    const o = made.origins[3]!
    await policy(nodes[0]!, { origin: o.origin, circuitBreaker: { failures: 3, cooldownSeconds: 2 } })
    o.behave({ status: 500 })
    // three failing triggers at once, on the nodes' shards: the circuit opens after the third failure
    await scheduleMany(3, o, "failing", "now", { "ttr-retry-strategy": "none" })
    await waitUntilAsync(() => o.arrivals.length === 3, 20_000, "three failures")
    const openedAt = Math.max(...o.arrivals.map((arrival) => arrival.atMs))
    let open = await circuitOf(o)
    await waitUntilAsync(async () => {
      open = await circuitOf(o)
      return (open?.open_until ?? null) !== null
    }, 20_000, "the circuit open in the database")
    expect(open?.open_until).not.toBeNull()
    // more triggers meanwhile, through every node: none reaches the origin during the cooldown
    o.behave({ hold: true })
    await scheduleMany(9, o, "later")
    await waitUntilAsync(() => o.arrivals.length === 4, 20_000, "the probe")
    const probe = o.arrivals[3]!
    expect(probe.atMs).toBeGreaterThanOrEqual(open!.open_until!.getTime() - OBSERVER_JITTER_MS)
    expect(probe.atMs - openedAt).toBeGreaterThanOrEqual(2_000 - OBSERVER_JITTER_MS)
    const holder = (await circuitOf(o))?.probe_node
    expect(holder).toBeTruthy()
    // a window of silence: the probe is alone
    await sleep(1_000)
    expect(o.arrivals.length).toBe(4)

    const victim = nodes.find((node) => nodeIdOf(node) === holder)!
    expect(victim).toBeDefined()
    victim.kill()
    const killedAt = Date.now()
    nodes = nodes.filter((node) => node !== victim)
    await waitUntilAsync(() => o.arrivals.length === 5, 20_000, "a probe from another node")
    const takenOverAfterMs = o.arrivals[4]!.atMs - killedAt
    console.log(`probe taken over ${takenOverAfterMs} ms after the kill`)
    const newHolder = (await circuitOf(o))?.probe_node
    expect(newHolder).not.toBe(holder)
    expect(nodes.map(nodeIdOf)).toContain(newHolder)
    await sleep(1_000) // a window of silence: no second probe
    expect(o.arrivals.length, "one probe, not two").toBe(5)

    // the origin answers: the circuit closes and every trigger goes (the killed node's probe trigger too, recovered)
    o.release()
    const later = () => new Set(o.arrivals.filter((arrival) => arrival.url.startsWith("/later")).map((arrival) => arrival.url)).size
    await waitUntilAsync(() => later() === 9 && o.open === 0, 60_000, "every waiting trigger")
    expect((await circuitOf(o))?.open_until).toBeNull()
  }, 180_000)
})
