// Target policies as use cases (docs/protecting-targets.md): list with live state, create, update (a
// patch validated as the policy would be after it), delete, and the origins held, queued or open
// now (GET /targets), scoped to the caller's project. Front ends decode the body first
// (decodeTargetPolicyRequest: the empty 400 comes before the credentials), then call these, which
// check in order: the policy exists (404 `Target policy not found`; an id that is not a UUID is not
// found either), the validation messages (`Invalid origin: <value>` first), then one policy per
// origin (409 Conflict naming the policy that has it). After each committed change the origin's gate
// is kicked; every node hears of the change and applies it within a lease round (gates/gatekeeper.ts).
// A change that pauses (a rate of 0) answers once every live node holding a lease of the origin (of
// any origin, for `*`) has applied it, as a tag policy's does.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { type GateKick, Wakeups } from "../cluster/wakeups.ts"
import { BadRequest, Conflict, MalformedRequest, NotFound } from "../domain/errors.ts"
import { effectiveWindows, gateShardOf } from "../domain/gates/gate.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import {
  ANY_ORIGIN, decodeTargetPolicyBody, mergeTargetPolicyUpdate, newTargetPolicyFields, type StoredTargetPolicy, type TargetPolicyBody,
  type TargetPolicyCreateBody, type TargetPolicyFields, type TargetPolicyMode, targetPolicyView, validateTargetPolicy
} from "../domain/targetPolicy.ts"
import { ShardCount } from "../store/db.ts"
import { gateLeasesBehind } from "../store/gateLeases.ts"
import {
  targetPoliciesCreate, targetPoliciesDelete, targetPoliciesFindByOrigin, targetPoliciesGetForUpdate, targetPoliciesList,
  targetPoliciesLive, targetPoliciesUpdate, targetsActive
} from "../store/targetPolicies.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { PAUSE_APPLIED_WAIT_MS } from "./tagPolicies.ts"

/** A parsed JSON body of POST (create) or PUT (update); a wrong shape is the empty 400. */
export function decodeTargetPolicyRequest(json: unknown, mode: "create"): Effect.Effect<TargetPolicyCreateBody, MalformedRequest>
export function decodeTargetPolicyRequest(json: unknown, mode: "update"): Effect.Effect<TargetPolicyBody, MalformedRequest>
export function decodeTargetPolicyRequest(json: unknown, mode: TargetPolicyMode): Effect.Effect<TargetPolicyBody, MalformedRequest> {
  const decoded = mode === "create" ? decodeTargetPolicyBody(json, "create") : decodeTargetPolicyBody(json, "update")
  return decoded._tag === "Ok" ? Effect.succeed(decoded.body) : Effect.fail(new MalformedRequest(decoded.reason))
}

const notFound = () => new NotFound("Target policy not found")

const conflict = (existing: StoredTargetPolicy) =>
  new Conflict(`A target policy for origin "${existing.origin}" already exists (id ${existing.id})`)

const validated = (fields: TargetPolicyFields) => {
  const result = validateTargetPolicy(fields)
  return result._tag === "Ok" ? Effect.succeed(result.fields) : Effect.fail(new BadRequest(result.message))
}

/** Kicks the origin's gate (after the commit): its held-back triggers are looked at again (`*`: every node's rounds do). */
const kickGate = (projectId: string, origin: string) =>
  Effect.gen(function*() {
    if (origin === ANY_ORIGIN) return
    const wakeups = yield* Wakeups
    const shards = (yield* ShardCount).count
    const kick: GateKick = { shard: gateShardOf(projectId, origin, shards), gate: { projectId, tag: origin } }
    yield* wakeups.wake([kick])
  })

const PAUSE_POLL_MS = 20

/** After a change that leaves the origin paused: waits until no live node admits under an older version (at most PAUSE_APPLIED_WAIT_MS). */
const awaitPauseApplied = (projectId: string, policy: StoredTargetPolicy) =>
  Effect.gen(function*() {
    if (!effectiveWindows(policy.throughput).paused) return
    const untilMs = (yield* Clock.currentTimeMillis) + PAUSE_APPLIED_WAIT_MS
    const anyOrigin = policy.origin === ANY_ORIGIN
    const tags = anyOrigin ? [] : [policy.origin]
    while ((yield* gateLeasesBehind({ projectId, tags, updatedAtMs: policy.updatedAt.getTime(), anyOrigin })) > 0) {
      if ((yield* Clock.currentTimeMillis) >= untilMs) {
        return yield* Effect.logWarning(`origin ${policy.origin} paused, but some node has not applied it within ${PAUSE_APPLIED_WAIT_MS} ms`)
      }
      yield* Effect.sleep(PAUSE_POLL_MS)
    }
  })

const NO_LIVE = { queued: 0, inFlight: 0, heldUntil: null, circuit: "closed" as const }

const viewsOf = (projectId: string, policies: ReadonlyArray<StoredTargetPolicy>) =>
  Effect.map(targetPoliciesLive(projectId, policies), (live) =>
    policies.map((policy) => targetPolicyView(policy, live.get(policy.id) ?? NO_LIVE)))

const viewOf = (projectId: string, policy: StoredTargetPolicy) => Effect.map(viewsOf(projectId, [policy]), (views) => views[0]!)

/** Every policy of the project, oldest first, each with its live state. */
export const listTargetPolicies = (projectId: string) =>
  orUnavailable(Effect.flatMap(targetPoliciesList(projectId), (policies) => viewsOf(projectId, policies)))

/** GET /targets: the origins under a policy held, queued, in flight or with a circuit not closed, alphabetically. */
export const listTargets = (projectId: string) => orUnavailable(targetsActive(projectId))

/**
 * Creates a policy: the validation messages, then 409 when the origin has one. The insert settles a
 * race of two creates (ON CONFLICT): the loser reads the winner's policy for its message; should
 * that one be deleted in between, the insert is tried again.
 */
export const createTargetPolicy = (projectId: string, body: TargetPolicyCreateBody) =>
  orUnavailable(Effect.gen(function*() {
    const fields = yield* validated(newTargetPolicyFields(body))
    const nowMs = yield* Clock.currentTimeMillis
    for (let attempt = 1; ; attempt++) {
      const created = yield* targetPoliciesCreate({ id: uuidv7(nowMs), projectId, fields, nowMs })
      if (created !== undefined) {
        yield* kickGate(projectId, created.origin)
        yield* awaitPauseApplied(projectId, created)
        return yield* viewOf(projectId, created)
      }
      const existing = yield* targetPoliciesFindByOrigin({ projectId, origin: fields.origin })
      if (existing !== undefined) return yield* Effect.fail(conflict(existing))
      if (attempt === 3) return yield* Effect.die(new Error(`target policy for "${fields.origin}" neither created nor found`))
    }
  }))

/** Updates a policy: 404 for an unknown id, then the validation messages of the policy as it would be after the update. */
export const updateTargetPolicy = (projectId: string, id: string, patch: TargetPolicyBody) =>
  orUnavailable(Effect.gen(function*() {
    if (!isUuid(id)) return yield* Effect.fail(notFound())
    const nowMs = yield* Clock.currentTimeMillis
    const updated = yield* withTransaction(Effect.gen(function*() {
      const stored = yield* targetPoliciesGetForUpdate({ projectId, id: id.toLowerCase() })
      if (stored === undefined) return yield* Effect.fail(notFound())
      const fields = yield* validated(mergeTargetPolicyUpdate(stored, patch))
      const written = yield* targetPoliciesUpdate({ projectId, id: stored.id, fields, nowMs })
      if (written === undefined) return yield* Effect.fail(notFound())
      return written
    }))
    yield* kickGate(projectId, updated.origin)
    yield* awaitPauseApplied(projectId, updated)
    return yield* viewOf(projectId, updated)
  }))

/** Deletes a policy (404 for an unknown id); the triggers it held back are released by their gate. */
export const deleteTargetPolicy = (projectId: string, id: string) =>
  orUnavailable(Effect.gen(function*() {
    if (!isUuid(id)) return yield* Effect.fail(notFound())
    const deleted = yield* targetPoliciesDelete({ projectId, id: id.toLowerCase() })
    if (deleted === undefined) return yield* Effect.fail(notFound())
    yield* kickGate(projectId, deleted.origin)
  }))
