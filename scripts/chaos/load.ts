// The load: triggers scheduled through `/schedule` over HTTPS, round-robin over the nodes, with at most
// CONCURRENCY calls in flight (undici keep-alive agents, self-signed certificates accepted). Each
// trigger `n` is a POST of `{"n":n}` to the target's `/t?n=n`, dated with an absolute
// `ttr-scheduled-at` (milliseconds) so that the due instants are known to the harness. Also the cancels
// of the crash-then-cancel scenario: `DELETE /cancel` by id, sent again while the service answers 503.
import { Agent, request } from "undici"
import type { NodeProcess } from "./nodes.ts"
import type { Target } from "./target.ts"

export const PREFIX = "ttr"
const CONCURRENCY = 32

export interface TriggerSpec {
  readonly n: number
  readonly dueMs: number
}

export interface Scheduled {
  readonly n: number
  readonly dueMs: number
  /** Undefined when /schedule did not accept it. */
  readonly triggerId: string | undefined
}

export interface LoadResult {
  readonly scheduled: ReadonlyArray<Scheduled>
  readonly startedAt: number
  readonly endedAt: number
  /** Status (or error kind) → count, for the calls that did not answer 200. */
  readonly failures: Readonly<Record<string, number>>
}

/** One keep-alive agent per node origin, closed by `close()`. */
export class Agents {
  private readonly agents = new Map<string, Agent>()
  private readonly connections: number
  constructor(connections: number) {
    this.connections = connections
  }
  get(origin: string): Agent {
    let agent = this.agents.get(origin)
    if (agent === undefined) {
      agent = new Agent({ connections: this.connections, pipelining: 1, keepAliveTimeout: 10_000, connect: { rejectUnauthorized: false, timeout: 2_000 } })
      this.agents.set(origin, agent)
    }
    return agent
  }
  async close() {
    await Promise.all([...this.agents.values()].map((agent) => agent.destroy().catch(() => {})))
    this.agents.clear()
  }
}

/** A failed call's bucket: the HTTP status, else the error's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …). */
export const errorBucket = (error: unknown): string => {
  const code = (error as { code?: unknown }).code
  return typeof code === "string" ? code : error instanceof Error ? error.name : "error"
}

/** POST /schedule for one trigger; the trigger id on 200, else throws with the status as `code`. */
export const scheduleOne = async (
  agent: Agent, origin: string, key: string, url: string, scheduledAt: string, body: string, timeoutMs: number
): Promise<string> => {
  const response = await request(`${origin}/schedule`, {
    method: "POST",
    dispatcher: agent,
    headers: {
      [`${PREFIX}-api-key`]: key,
      [`${PREFIX}-url`]: url,
      [`${PREFIX}-scheduled-at`]: scheduledAt,
      "content-type": "application/json"
    },
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs
  })
  const text = await response.body.text()
  if (response.statusCode !== 200) throw Object.assign(new Error(`/schedule answered ${response.statusCode}: ${text.slice(0, 200)}`), { code: String(response.statusCode) })
  const parsed = JSON.parse(text) as { triggerId?: unknown }
  if (typeof parsed.triggerId !== "string") throw Object.assign(new Error(`unexpected /schedule answer ${text.slice(0, 200)}`), { code: "bad-answer" })
  return parsed.triggerId
}

/**
 * /schedule calls per second the nodes take right now: `count` calls (probe triggers one hour ahead,
 * never delivered within a scenario) at the load's concurrency, after a first unmeasured round.
 */
export const measureIngestRate = async (nodes: ReadonlyArray<NodeProcess>, key: string, target: Target, count = 160): Promise<number> => {
  const agents = new Agents(Math.ceil(CONCURRENCY / Math.max(1, nodes.length)))
  const round = async (calls: number) => {
    const startedAt = performance.now()
    let next = 0
    let ok = 0
    const caller = async () => {
      while (next < calls) {
        const node = nodes[next++ % nodes.length]!
        await scheduleOne(agents.get(node.origin), node.origin, key, target.url(-1), "now | add 1h", JSON.stringify({ warmup: true }), 10_000)
          .then(() => ok++, () => {})
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, caller))
    return (ok * 1000) / Math.max(1, performance.now() - startedAt)
  }
  try {
    await round(CONCURRENCY * 2) // connections, TLS handshakes, first key lookups, JIT: not measured
    return await round(count)
  } finally {
    await agents.close()
  }
}

/** Schedules every spec (node i % nodes), stopping new calls at `deadlineMs`. */
export const scheduleTriggers = async (
  nodes: ReadonlyArray<NodeProcess>, key: string, target: Target, specs: ReadonlyArray<TriggerSpec>, deadlineMs: number
): Promise<LoadResult> => {
  const agents = new Agents(Math.ceil(CONCURRENCY / Math.max(1, nodes.length)))
  const scheduled: Array<Scheduled> = specs.map((spec) => ({ ...spec, triggerId: undefined }))
  const failures: Record<string, number> = {}
  const startedAt = Date.now()
  let next = 0
  const caller = async () => {
    while (next < specs.length && Date.now() < deadlineMs) {
      const i = next++
      const spec = specs[i]!
      const node = nodes[i % nodes.length]!
      try {
        const triggerId = await scheduleOne(
          agents.get(node.origin), node.origin, key, target.url(spec.n), new Date(spec.dueMs).toISOString(), JSON.stringify({ n: spec.n }), 10_000
        )
        scheduled[i] = { ...spec, triggerId }
      } catch (error) {
        const bucket = errorBucket(error)
        failures[bucket] = (failures[bucket] ?? 0) + 1
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, Math.max(1, specs.length)) }, caller))
  } finally {
    await agents.close()
  }
  return { scheduled, startedAt, endedAt: Date.now(), failures }
}

/** What one DELETE /cancel finally answered: its status, with the instants of the first try and of the answer. */
export interface CancelAnswer {
  readonly n: number
  readonly triggerId: string
  /** 204, 404, 410, …; "unanswered" when the bound came first. */
  readonly status: string
  readonly firstTryMs: number
  readonly answeredMs: number
  /** Tries answered 503 or failed to connect before this answer. */
  readonly retries: number
}

/** Statuses a cancel is sent again after: the database not reachable yet, no connection, a timeout. */
const retryable = (bucket: string) => bucket === "503" || !/^\d+$/.test(bucket)

/**
 * DELETE /cancel of every scheduled trigger by id (node i % nodes), CONCURRENCY at once: each is sent
 * again every `retryEveryMs` while it is answered 503 or cannot connect, until `deadlineMs`.
 */
export const cancelTriggers = async (
  nodes: ReadonlyArray<NodeProcess>, key: string, triggers: ReadonlyArray<Scheduled>, deadlineMs: number, retryEveryMs = 50
): Promise<ReadonlyArray<CancelAnswer>> => {
  const agents = new Agents(Math.ceil(CONCURRENCY / Math.max(1, nodes.length)))
  const targets = triggers.filter((t) => t.triggerId !== undefined)
  const answers: Array<CancelAnswer> = []
  let next = 0
  const cancelOne = async (origin: string, triggerId: string): Promise<string> => {
    try {
      const response = await request(`${origin}/cancel`, {
        method: "DELETE",
        dispatcher: agents.get(origin),
        headers: { [`${PREFIX}-api-key`]: key, [`${PREFIX}-trigger-id`]: triggerId },
        headersTimeout: 5_000,
        bodyTimeout: 5_000
      })
      await response.body.dump()
      return String(response.statusCode)
    } catch (error) {
      return errorBucket(error)
    }
  }
  const caller = async () => {
    while (next < targets.length) {
      const i = next++
      const trigger = targets[i]!
      const node = nodes[i % nodes.length]!
      const firstTryMs = Date.now()
      let retries = 0
      for (;;) {
        const status = await cancelOne(node.origin, trigger.triggerId!)
        if (!retryable(status)) {
          answers.push({ n: trigger.n, triggerId: trigger.triggerId!, status, firstTryMs, answeredMs: Date.now(), retries })
          break
        }
        if (Date.now() >= deadlineMs) {
          answers.push({ n: trigger.n, triggerId: trigger.triggerId!, status: "unanswered", firstTryMs, answeredMs: Date.now(), retries })
          break
        }
        retries++
        await new Promise((resolve) => setTimeout(resolve, retryEveryMs))
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, Math.max(1, targets.length)) }, caller))
  } finally {
    await agents.close()
  }
  return answers
}
