// Which triggers pass an origin's gate (docs/protecting-targets.md): those of a project with a
// target policy for their URL's origin, or a `*` policy. Delivery asks for every row it hands on, so
// the common case costs one Set lookup and nothing else: every node keeps the set of projects that
// have a target policy at all (read at start, again every POLICY_CACHE_TTL_MS, and a project added at
// once when a change of its policies is heard), and only for those the project's origins with a
// policy (read once, kept POLICY_CACHE_TTL_MS, forgotten at once on a change) and the URL's origin.
// A read that began before a change was heard never replaces what the change says (changeCounter.ts):
// the set read keeps the projects heard of meanwhile, a project's read is used but not kept.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ANY_ORIGIN, originOfUrl } from "../domain/targetPolicy.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import type { Database } from "../store/db.ts"
import { Notifications, TARGET_POLICIES_CHANGED_CHANNEL } from "../store/notifications.ts"
import { targetPoliciesList, targetPolicyProjects } from "../store/targetPolicies.ts"
import { ChangeCounter } from "./changeCounter.ts"
import { POLICY_CACHE_TTL_MS } from "./tagPolicyCache.ts"

const MAX_PROJECTS = 10_000

/** What the cache reads (the store's queries; a test may slow them down). */
export interface TargetPolicyReads {
  /** The projects that have a target policy. */
  readonly projects: Effect.Effect<ReadonlyArray<string>, unknown, Database>
  /** A project's policies' origins. */
  readonly origins: (projectId: string) => Effect.Effect<ReadonlyArray<string>, unknown, Database>
}

const STORE_READS: TargetPolicyReads = {
  projects: targetPolicyProjects,
  origins: (projectId) => Effect.map(targetPoliciesList(projectId), (list) => list.map((policy) => policy.origin))
}

interface Entry {
  /** Origins with a policy of their own. */
  readonly origins: ReadonlySet<string>
  /** The project has a `*` policy: every origin is gated. */
  readonly any: boolean
  readonly expiresAtMs: number
}

export class TargetPolicyCache extends Context.Service<TargetPolicyCache, {
  /**
   * The rows with their origin's gate added to `gateTags` when a target policy covers it; the same
   * array, untouched, when no row's project has a target policy (no lookup, no URL parsed).
   */
  readonly withOriginGates: (rows: ReadonlyArray<DeliveryRow>) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  /**
   * Whether a target policy may cover one of the rows (their project may have one): false means
   * `withOriginGates` would hand the rows back untouched, so a caller may skip it (a plain call).
   */
  readonly mayGate: (rows: ReadonlyArray<DeliveryRow>) => boolean
}>()("timewheel/TargetPolicyCache") {
  static readonly layer = Layer.suspend(() => TargetPolicyCache.layerWith(STORE_READS))

  static readonly layerWith = (reads: TargetPolicyReads) => Layer.effect(TargetPolicyCache, Effect.gen(function*() {
    const services = yield* Effect.context<Database>()
    const notifications = yield* Notifications
    const clock = yield* Clock.Clock
    /** Projects with a target policy; null until first read (every project is then looked up). */
    let projects: Set<string> | null = null
    const entries = new Map<string, Entry>()
    const changes = new ChangeCounter()

    const readProjects = Effect.suspend(() => {
      const mark = changes.mark()
      return Effect.provideContext(reads.projects, services).pipe(
        Effect.map((ids) => {
          // a project heard of while the read ran may be missing from it: it stays
          const since = changes.projectsChangedSince(mark)
          const next = new Set(ids)
          if (since === null) for (const id of projects ?? []) next.add(id)
          else for (const id of since) next.add(id)
          projects = next
        })
      )
    })
    yield* readProjects.pipe(Effect.catchCause((cause) => Effect.logWarning("reading the projects with target policies failed; looking each up", cause)))
    yield* forkLoop("target policy projects", readProjects, { every: `${POLICY_CACHE_TTL_MS} millis` })
    yield* forkLoop("target policy change listener", Effect.scoped(Effect.gen(function*() {
      const nextChange = yield* notifications.listen(TARGET_POLICIES_CHANGED_CHANNEL)
      entries.clear() // whatever changed while not listening
      changes.changedAll()
      for (;;) {
        const projectId = yield* nextChange
        changes.changed(projectId)
        projects?.add(projectId) // a project whose last policy went stays until the next read of the set: it only costs a lookup
        entries.delete(projectId)
      }
    })))

    const entryOf = (projectId: string): Effect.Effect<Entry | null> => {
      const nowMs = clock.currentTimeMillisUnsafe()
      const entry = entries.get(projectId)
      if (entry !== undefined && entry.expiresAtMs > nowMs) return Effect.succeed(entry)
      const mark = changes.mark()
      return Effect.provideContext(reads.origins(projectId), services).pipe(
        Effect.map((list) => {
          const fresh: Entry = {
            origins: new Set(list.filter((origin) => origin !== ANY_ORIGIN)),
            any: list.includes(ANY_ORIGIN),
            expiresAtMs: nowMs + POLICY_CACHE_TTL_MS
          }
          // a change heard while this read ran: used once, not remembered (the next use reads again)
          if (changes.changedSince(projectId, mark)) return fresh
          if (entries.size >= MAX_PROJECTS) entries.clear()
          entries.set(projectId, fresh)
          return fresh
        }),
        // the policies cannot be read now (database away): the last ones known, else none (sent ungated)
        Effect.catchCause((cause) => Effect.as(Effect.logWarning("reading target policies failed", cause), entry ?? null))
      )
    }

    const mayHave = (projectId: string) => projects === null || projects.has(projectId)

    return TargetPolicyCache.of({
      mayGate: (rows) => rows.some((row) => mayHave(row.projectId)),
      withOriginGates: (rows) => {
        if (!rows.some((row) => mayHave(row.projectId))) return Effect.succeed(rows)
        return Effect.gen(function*() {
          const out: Array<DeliveryRow> = []
          for (const row of rows) {
            const entry = mayHave(row.projectId) ? yield* entryOf(row.projectId) : null
            if (entry === null || (!entry.any && entry.origins.size === 0)) {
              out.push(row)
              continue
            }
            const origin = originOfUrl(row.url)
            const gated = origin !== null && (entry.any || entry.origins.has(origin)) && !row.gateTags.includes(origin)
            out.push(gated ? { ...row, gateTags: [...row.gateTags, origin] } : row)
          }
          return out
        })
      }
    })
  }))
}
