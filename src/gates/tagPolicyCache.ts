// The tag policies of each project, remembered by every node: delivery reads a trigger's timeout and
// retry rules, and admission its gates, on the hot path without a query per trigger. A project's
// policies are read in one query on first use and kept for POLICY_CACHE_TTL_MS; a change announces
// itself (store/tagPolicies.ts), and every node then forgets that project's policies at once, so a
// PUT or DELETE takes effect cluster-wide within milliseconds (the TTL bounds a lost notification).
// A read that began before a change was heard is used once but not kept (changeCounter.ts): it may
// carry what the change replaced.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoredTagPolicy } from "../domain/tagPolicy.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import type { Database } from "../store/db.ts"
import { Notifications, TAG_POLICIES_CHANGED_CHANNEL } from "../store/notifications.ts"
import { tagPoliciesList } from "../store/tagPolicies.ts"
import { ChangeCounter } from "./changeCounter.ts"

export const POLICY_CACHE_TTL_MS = 10_000
const MAX_PROJECTS = 10_000

/** A project's policies by tag. */
export type ProjectPolicies = ReadonlyMap<string, StoredTagPolicy>

const NONE: ProjectPolicies = new Map()

interface Entry {
  readonly policies: ProjectPolicies
  readonly expiresAtMs: number
}

export class TagPolicyCache extends Context.Service<TagPolicyCache, {
  /** The project's policies by tag (read once, then remembered). */
  readonly policiesOf: (projectId: string) => Effect.Effect<ProjectPolicies, unknown>
  /** The policies of these tags of a project (none for a trigger without tags, with no lookup). */
  readonly policiesFor: (projectId: string, tags: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredTagPolicy>, unknown>
}>()("timewheel/TagPolicyCache") {
  static readonly layer = Layer.suspend(() => TagPolicyCache.layerWith(tagPoliciesList))

  /** The cache over `read` (a project's policies; a test may slow it down). */
  static readonly layerWith = (
    read: (projectId: string) => Effect.Effect<ReadonlyArray<StoredTagPolicy>, unknown, Database>
  ) => Layer.effect(TagPolicyCache, Effect.gen(function*() {
    const services = yield* Effect.context<Database>()
    const notifications = yield* Notifications
    const clock = yield* Clock.Clock
    const entries = new Map<string, Entry>()
    const changes = new ChangeCounter()

    yield* forkLoop("tag policy change listener", Effect.scoped(Effect.gen(function*() {
      const nextChange = yield* notifications.listen(TAG_POLICIES_CHANGED_CHANNEL)
      entries.clear() // whatever changed while not listening
      changes.changedAll()
      for (;;) {
        const projectId = yield* nextChange
        changes.changed(projectId)
        entries.delete(projectId)
      }
    })))

    const policiesOf = (projectId: string): Effect.Effect<ProjectPolicies, unknown> => {
      const entry = entries.get(projectId)
      if (entry !== undefined && entry.expiresAtMs > clock.currentTimeMillisUnsafe()) return Effect.succeed(entry.policies)
      const mark = changes.mark()
      return Effect.map(Effect.provideContext(read(projectId), services), (list) => {
        const policies: ProjectPolicies = list.length === 0 ? NONE : new Map(list.map((policy) => [policy.tag, policy]))
        // a change heard while this read ran: used once, not remembered (the next use reads again)
        if (changes.changedSince(projectId, mark)) return policies
        if (entries.size >= MAX_PROJECTS) entries.clear()
        entries.set(projectId, { policies, expiresAtMs: clock.currentTimeMillisUnsafe() + POLICY_CACHE_TTL_MS })
        return policies
      })
    }

    return TagPolicyCache.of({
      policiesOf,
      policiesFor: (projectId, tags) =>
        tags.length === 0
          ? Effect.succeed([])
          : Effect.map(policiesOf(projectId), (policies) => tags.flatMap((tag) => policies.get(tag) ?? []))
    })
  }))
}
