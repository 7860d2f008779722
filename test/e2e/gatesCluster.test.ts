// Tag gates across three real `npm start` processes on one database (docs/tag-policies.md "How the
// limits hold across nodes", "Backpressure from the target"): each node admits in memory from its lease of
// the gate's budget, and a target counting the requests it holds at once (a request whose
// connection closes counts as ended) and stamping every start sees the limits held for the cluster:
// - maxConcurrent and throughput hold with triggers fired on every node;
// - a lowered maxConcurrent applies on every node within a second;
// - a pause (rate 0) starts nothing once its PUT has answered;
// - a refusal (429) seen by one node holds the tag on all of them;
// - a node killed while holding permits gives them back within the takeover time: the others then
//   fill the limit again (the target holds every request, so only the reclaimed permits can), with
//   triggers of their own to start (those the killed node held wait for crash recovery), measured
//   once every node owns shards and the database is up past the nodes' restart grace.
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningService, runCli, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { waitUntilAsync } from "../support/wait.ts"

/** How late this test's target may stamp an arrival on a loaded machine (it runs inside the test process). */
const OBSERVER_JITTER_MS = 150

/** The most starts found in any window of `windowMs` (half-open), over ascending start times. */
const mostInAnyWindow = (starts: ReadonlyArray<number>, windowMs: number) => {
  let most = 0
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[i]! - starts[j]! >= windowMs) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

interface PathState {
  readonly starts: Array<number>
  /** The triggers seen (the `n` of their query), each once. */
  readonly triggers: Set<string>
  open: number
  peak: number
  /** Open counts with the time they changed, to check a limit from an instant on. */
  readonly openAt: Array<readonly [number, number]>
}

/** A target: per path, starts, requests open now and at most; answers per path (a delay, a status, or holding until released). */
const countingTarget = async () => {
  const paths = new Map<string, PathState>()
  const holding: Array<() => void> = []
  const behaviour = new Map<string, { delayMs?: number; hold?: boolean; status?: number; headers?: Record<string, string> }>()
  const stateOf = (path: string) => {
    let state = paths.get(path)
    if (state === undefined) paths.set(path, state = { starts: [], triggers: new Set(), open: 0, peak: 0, openAt: [] })
    return state
  }
  const server = http.createServer((req, res) => {
    const path = req.url!.split("?")[0]!
    const state = stateOf(path)
    state.starts.push(Date.now())
    state.triggers.add(req.url!.split("?")[1] ?? "")
    state.open++
    state.peak = Math.max(state.peak, state.open)
    state.openAt.push([Date.now(), state.open])
    let ended = false
    const end = () => {
      if (ended) return
      ended = true
      state.open--
      state.openAt.push([Date.now(), state.open])
    }
    // a request whose client went away (a killed node's connection) is no longer in flight
    res.on("close", end)
    req.resume()
    const how = behaviour.get(path) ?? {}
    const answer = () => {
      res.writeHead(how.status ?? 200, how.headers ?? {}).end("ok")
      end()
    }
    if (how.hold === true) holding.push(answer)
    else setTimeout(answer, how.delayMs ?? 0)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    path: stateOf,
    behave: (path: string, how: { delayMs?: number; hold?: boolean; status?: number; headers?: Record<string, string> }) => void behaviour.set(path, how),
    releaseAll: () => holding.splice(0).forEach((answer) => answer()),
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
}

describe("tag gates across three processes", () => {
  const scope = Effect.runSync(Scope.make())
  let nodes: Array<RunningService> = []
  let target: Awaited<ReturnType<typeof countingTarget>>
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
    call(node, "POST", "/tag-policies", { "content-type": "application/json" }, JSON.stringify(body)) as Promise<{ id: string }>
  const updatePolicy = (node: RunningService, id: string, body: Record<string, unknown>) =>
    call(node, "PUT", `/tag-policies/${id}`, { "content-type": "application/json" }, JSON.stringify(body))
  /** `count` triggers due now on `tag` to `path`, scheduled through every node in turn. */
  const scheduleMany = async (count: number, path: string, tag: string, when = "now") => {
    for (let n = 0; n < count; n++) {
      await call(nodes[n % nodes.length]!, "POST", "/schedule", { "ttr-url": `${target.origin}${path}?n=${n}`, "ttr-scheduled-at": when, "ttr-tags": tag })
    }
  }
  /** This node's id, from its JSON log lines. */
  const nodeIdOf = (node: RunningService) => /"node":"([^"]+)"/.exec(node.output())![1]!

  beforeAll(async () => {
    databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir(`gates-${name}`), PORT: "0", HOST: "127.0.0.1", SHARDS: "8", LOG_FORMAT: "json"
    })
    target = await countingTarget()
    nodes = await Promise.all(["a", "b", "c"].map((name) => startService(env(name))))
    expect((await runCli(["project", "create", "gates"], { env: env("cli") })).code).toBe(0)
    key = (await runCli(["key", "create", "gates"], { env: env("cli") })).stdout.trim()
    // every node warmed up (a first delivery each)
    for (const node of nodes) await call(node, "POST", "/schedule", { "ttr-url": `${target.origin}/warm`, "ttr-scheduled-at": "now" })
    await waitUntilAsync(() => target.path("/warm").starts.length === 3, 20_000, "the warm-up deliveries")
    // every node owns shards (the first to start owns them all for a while): a node killed later is
    // not the one firing every trigger
    await waitUntilAsync(async () => (await shardOwners(databaseUrl)).size === 3, 60_000, "every node owning shards")
  }, 180_000)

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop().catch(() => node.kill())))
    target?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)

  it("maxConcurrent 3 and throughput {\"1s\": 5} hold for the three, and the rate is reached", async () => {
    await policy(nodes[0]!, { tag: "conc", maxConcurrent: 3 })
    await policy(nodes[1]!, { tag: "rate", throughput: { "1s": 5 } })
    target.behave("/conc", { delayMs: 200 })
    await scheduleMany(30, "/conc", "conc", "now | add 1s")
    await scheduleMany(30, "/rate", "rate", "now | add 1s")
    await waitUntilAsync(() => target.path("/conc").starts.length === 30 && target.path("/rate").starts.length === 30, 60_000, "every trigger")
    const rate = target.path("/rate").starts
    console.log("rate starts (ms after the first):", rate.map((t) => t - rate[0]!).join(" "))
    expect(target.path("/conc").peak).toBe(3)
    // the target stamps an arrival when its own event loop gets to it (this test process): a
    // window shorter by OBSERVER_JITTER_MS allows for that
    expect(mostInAnyWindow(rate, 1_000 - OBSERVER_JITTER_MS)).toBeLessThanOrEqual(5)
    // 30 starts at 5 a second take at least 5 s (six windows), and the limit is used: not much more
    const spanMs = rate.at(-1)! - rate[0]!
    expect(spanMs).toBeGreaterThanOrEqual(5_000)
    expect(spanMs).toBeLessThan(7_500)
  }, 120_000)

  it("a lowered maxConcurrent applies on every node within a second", async () => {
    const { id } = await policy(nodes[0]!, { tag: "lowered", maxConcurrent: 6 })
    target.behave("/lowered", { delayMs: 300 })
    await scheduleMany(40, "/lowered", "lowered")
    const state = target.path("/lowered")
    await waitUntilAsync(() => state.peak === 6 && state.starts.length >= 12, 30_000, "six in flight")
    await updatePolicy(nodes[1]!, id, { maxConcurrent: 1 })
    const appliedMs = Date.now() + 1_000
    await waitUntilAsync(() => state.starts.length === 40, 90_000, "every trigger")
    // requests started before the change end within 300 ms; from then on one at a time
    const after = state.openAt.filter(([atMs]) => atMs > appliedMs + 300 + OBSERVER_JITTER_MS)
    expect(Math.max(...after.map(([, open]) => open))).toBe(1)
    expect(state.peak).toBe(6)
  }, 120_000)

  it("a pause (rate 0) starts nothing once its PUT has answered; raising it again releases every waiting trigger", async () => {
    const { id } = await policy(nodes[2]!, { tag: "paused", throughput: { "1s": 20 } })
    await scheduleMany(200, "/paused", "paused")
    const state = target.path("/paused")
    await waitUntilAsync(() => state.starts.length >= 20, 30_000, "some started")
    await updatePolicy(nodes[0]!, id, { throughput: { "1s": 0 } })
    const answeredAt = Date.now()
    const startedBefore = state.starts.length
    await new Promise((resolve) => setTimeout(resolve, 2_500)) // a window of silence: nothing starts once paused
    expect(state.starts.filter((atMs) => atMs > answeredAt + OBSERVER_JITTER_MS)).toEqual([])
    expect(startedBefore).toBeLessThan(200)
    await updatePolicy(nodes[1]!, id, { throughput: { "1s": 1_000 } })
    await waitUntilAsync(() => state.starts.length === 200, 30_000, "the rest, once raised")
  }, 120_000)

  it("a 429 seen by one node holds the tag on all three until Retry-After", async () => {
    await policy(nodes[0]!, { tag: "refused", maxConcurrent: 50 })
    target.behave("/refused", { status: 429, headers: { "retry-after": "2" } })
    await scheduleMany(1, "/refused", "refused")
    const state = target.path("/refused")
    await waitUntilAsync(() => state.starts.length === 1, 20_000, "the refused one")
    const refusedAt = state.starts[0]!
    target.behave("/refused", {})
    // fired on every node's shards
    await scheduleMany(24, "/refused", "refused")
    await waitUntilAsync(() => state.starts.length === 25, 30_000, "the rest after the hold")
    expect(state.starts.slice(1).filter((atMs) => atMs < refusedAt + 2_000)).toEqual([])
  }, 120_000)

  it("a node killed while holding permits gives them back within the takeover time: the others fill the limit again", async () => {
    // nodes take nobody for gone while the database has been up less than their restart grace (10 s;
    // the test's server started with this file): a kill is measured only past it
    await waitUntilAsync(async () => (await serverUpMs(databaseUrl)) > 10_500, 30_000, "the database up past the restart grace")
    await policy(nodes[0]!, { tag: "killed", maxConcurrent: 6 })
    target.behave("/killed", { hold: true })
    await scheduleMany(30, "/killed", "killed")
    const state = target.path("/killed")
    await waitUntilAsync(() => state.open === 6, 30_000, "the limit in flight")
    // the node holding the most permits in use, once the lease rows (written by each node's next
    // round) report all 6
    let holders = new Map<string, number>()
    await waitUntilAsync(async () => {
      holders = await leaseHolders(databaseUrl)
      return [...holders.values()].reduce((sum, n) => sum + n, 0) === 6
    }, 10_000, "the lease rows reporting the 6 in flight")
    const victimId = [...holders.entries()].sort((a, b) => b[1] - a[1])[0]![0]
    const victim = nodes.find((node) => nodeIdOf(node) === victimId)!
    expect(holders.get(victimId)).toBeGreaterThan(0)
    victim.kill()
    const killedAt = Date.now()
    const survivors = nodes.filter((node) => node !== victim)
    // more triggers through the survivors: the waiting ones may all sit in the killed node's memory
    // (taken from PostgreSQL), back to wait only when crash recovery finds them; these wait on the
    // survivors (those their shards fire), so only the reclaimed permits hold them back
    for (let n = 30; n < 60; n++) {
      await call(survivors[n % survivors.length]!, "POST", "/schedule", { "ttr-url": `${target.origin}/killed?n=${n}`, "ttr-scheduled-at": "now", "ttr-tags": "killed" })
    }
    await waitUntilAsync(() => state.open < 6, 10_000, "the killed node's requests to end at the target")
    await waitUntilAsync(() => state.open === 6, 15_000, "the limit in flight again").catch(async (error: Error) => {
      // what the gates and the triggers looked like, for a run where the permits did not come back
      throw new Error(`${error.message}: ${state.open} open at the target, victim ${victimId}\n` +
        `${JSON.stringify(await gateState(databaseUrl))}\n` +
        survivors.map((node) => `--- ${nodeIdOf(node)} ---\n${node.output().split("\n").slice(-40).join("\n")}`).join("\n"))
    })
    const backAfterMs = Date.now() - killedAt
    console.log(`permits of the killed node back in use ${backAfterMs} ms after the kill`)
    expect(backAfterMs).toBeLessThan(5_000)
    expect(state.peak).toBe(6)
    nodes = nodes.filter((node) => node !== victim)
    target.releaseAll()
    target.behave("/killed", {})
    await waitUntilAsync(() => state.triggers.size === 60 && state.open === 0, 60_000, "every trigger, at least once")
    expect(state.peak).toBe(6)
  }, 120_000)
})

/** The tag `killed`'s lease rows and its triggers by status and claiming node (a failure's diagnostics). */
const gateState = (databaseUrl: string) =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const leases = yield* sql`SELECT node, permits, in_flight, demand, renewed_at, gone_at FROM gate_leases WHERE tag = 'killed'`
    const triggers = yield* sql`SELECT status, claimed_by, count(*)::int AS n FROM triggers WHERE 'killed' = ANY(tags) GROUP BY 1, 2`
    return { leases, triggers }
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))))

/** How long the database server has been up. */
const serverUpMs = async (databaseUrl: string): Promise<number> => {
  const rows = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ ms: number }>`SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::float8 AS ms`
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))))
  return rows[0]!.ms
}

/** Shards owned per node (their advisory locks, held on each node's named session). */
const shardOwners = async (databaseUrl: string): Promise<Map<string, number>> => {
  const rows = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ name: string; n: number }>`SELECT a.application_name AS name, count(*)::int AS n
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.classid = ${0x7477} AND l.granted AND a.datname = current_database()
      GROUP BY 1`
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))))
  return new Map(rows.map((row) => [row.name, row.n]))
}

/** Permits in flight per live node on the tag `killed`, from the lease rows. */
const leaseHolders = async (databaseUrl: string): Promise<Map<string, number>> => {
  const rows = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ node: string; in_flight: number }>`SELECT node, in_flight FROM gate_leases WHERE tag = 'killed' AND gone_at IS NULL`
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))))
  return new Map(rows.map((row) => [row.node, row.in_flight]))
}
