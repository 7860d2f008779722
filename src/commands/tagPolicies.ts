// Tag policies as use cases (docs/tag-policies.md "Fields", "Endpoints", and "Errors" for the checks in
// order): list with live counts, create, update (a patch validated as the policy would be after it),
// delete, scoped to the caller's project. Front ends decode the body first (decodeTagPolicyRequest: the
// empty 400 comes before the credentials), then call these, which check in that order: the policy
// exists (404 `Tag policy not found`; an id that is not a UUID is not found either), then the
// validation messages, then one policy per tag (409 Conflict naming the policy that has the tag). After
// each committed change the gate of the tag (and of the old tag on a rename) is kicked, so its
// held-back triggers are looked at again at once; every node hears of the change and applies it within
// a lease round (gates/gatekeeper.ts). A change that pauses a tag (a rate of 0) answers once every live
// node holding a lease of the tag has applied it (at most PAUSE_APPLIED_WAIT_MS): from the answer on,
// nothing of the tag starts.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { type GateKick, Wakeups } from "../cluster/wakeups.ts"
import { BadRequest, Conflict, MalformedRequest, NotFound } from "../domain/errors.ts"
import { effectiveWindows, gateShardOf } from "../domain/gates/gate.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import {
  decodeTagPolicyBody,
  mergeTagPolicyUpdate,
  newTagPolicyFields,
  type StoredTagPolicy,
  type TagPolicyBody,
  type TagPolicyCreateBody,
  type TagPolicyFields,
  type TagPolicyMode,
  tagPolicyView
} from "../domain/tagPolicy.ts"
import { validateTagPolicy } from "../domain/tagPolicyValidation.ts"
import { ShardCount } from "../store/db.ts"
import { gateLeasesBehind } from "../store/gateLeases.ts"
import { isUniqueViolation } from "../store/projects.ts"
import {
  tagPoliciesCreate,
  tagPoliciesDelete,
  tagPoliciesFindByTag,
  tagPoliciesGetForUpdate,
  tagPoliciesList,
  tagPoliciesLiveCounts,
  tagPoliciesUpdate,
  NO_GATE_COUNTS
} from "../store/tagPolicies.ts"
import { withTransaction } from "../store/transaction.ts"
import { orUnavailable } from "../store/unavailable.ts"

/** A parsed JSON body of POST (create) or PUT (update); a wrong shape is the empty 400. */
export function decodeTagPolicyRequest(json: unknown, mode: "create"): Effect.Effect<TagPolicyCreateBody, MalformedRequest>
export function decodeTagPolicyRequest(json: unknown, mode: "update"): Effect.Effect<TagPolicyBody, MalformedRequest>
export function decodeTagPolicyRequest(json: unknown, mode: TagPolicyMode): Effect.Effect<TagPolicyBody, MalformedRequest> {
  const decoded = mode === "create" ? decodeTagPolicyBody(json, "create") : decodeTagPolicyBody(json, "update")
  return decoded._tag === "Ok"
    ? Effect.succeed(decoded.body)
    : Effect.fail(new MalformedRequest(decoded.reason))
}

const notFound = () => new NotFound("Tag policy not found")

const conflict = (existing: StoredTagPolicy) =>
  new Conflict(`A tag policy for tag "${existing.tag}" already exists (id ${existing.id})`)

const validated = (fields: TagPolicyFields, mode: TagPolicyMode) => {
  const result = validateTagPolicy(fields, mode)
  return result._tag === "Ok" ? Effect.void : Effect.fail(new BadRequest(result.message))
}

/** Kicks the gates of these tags (after the commit): their held-back triggers are looked at again. */
const kickGates = (projectId: string, tags: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const wakeups = yield* Wakeups
    const shards = (yield* ShardCount).count
    const kicks = [...new Set(tags)].map((tag): GateKick => ({ shard: gateShardOf(projectId, tag, shards), gate: { projectId, tag } }))
    yield* wakeups.wake(kicks)
  })

/** How long a pausing change waits for the nodes holding leases of its tag to apply it. */
export const PAUSE_APPLIED_WAIT_MS = 2_000
const PAUSE_POLL_MS = 20

/**
 * After a change that leaves the tag paused: waits until no live node holds a lease of the tag
 * granted under an older version of the policy (each applies the change in its next round, at once
 * on the change's notification), or PAUSE_APPLIED_WAIT_MS.
 */
const awaitPauseApplied = (projectId: string, policy: StoredTagPolicy) =>
  Effect.gen(function*() {
    if (!effectiveWindows(policy.throughput).paused) return
    const untilMs = (yield* Clock.currentTimeMillis) + PAUSE_APPLIED_WAIT_MS
    while ((yield* gateLeasesBehind({ projectId, tags: [policy.tag], updatedAtMs: policy.updatedAt.getTime() })) > 0) {
      if ((yield* Clock.currentTimeMillis) >= untilMs) {
        return yield* Effect.logWarning(`tag ${policy.tag} paused, but some node has not applied it within ${PAUSE_APPLIED_WAIT_MS} ms`)
      }
      yield* Effect.sleep(PAUSE_POLL_MS)
    }
  })

/** The view of one policy with its live counts. */
const viewOf = (projectId: string, policy: StoredTagPolicy) =>
  Effect.map(tagPoliciesLiveCounts({ projectId, tags: [policy.tag] }), (counts) =>
    tagPolicyView(policy, counts.get(policy.tag) ?? NO_GATE_COUNTS))

/** Every policy of the project, oldest first, each with its live counts (two statements in all). */
export const listTagPolicies = (projectId: string) =>
  orUnavailable(Effect.gen(function*() {
    const policies = yield* tagPoliciesList(projectId)
    const counts = yield* tagPoliciesLiveCounts({ projectId, tags: policies.map((policy) => policy.tag) })
    return policies.map((policy) => tagPolicyView(policy, counts.get(policy.tag) ?? NO_GATE_COUNTS))
  }))

/**
 * Creates a policy: the validation messages (mode create), then 409 when the tag has a policy. The
 * insert itself settles a race between two creates of one tag (ON CONFLICT): the loser reads the
 * winner's policy for its message; should that one be deleted in between, the insert is tried again.
 */
export const createTagPolicy = (projectId: string, body: TagPolicyCreateBody) =>
  orUnavailable(Effect.gen(function*() {
    const fields = newTagPolicyFields(body)
    yield* validated(fields, "create")
    const nowMs = yield* Clock.currentTimeMillis
    for (let attempt = 1; ; attempt++) {
      const created = yield* tagPoliciesCreate({ id: uuidv7(nowMs), projectId, fields, nowMs })
      if (created !== undefined) {
        yield* kickGates(projectId, [created.tag])
        yield* awaitPauseApplied(projectId, created)
        return yield* viewOf(projectId, created)
      }
      const existing = yield* tagPoliciesFindByTag({ projectId, tag: fields.tag })
      if (existing !== undefined) return yield* Effect.fail(conflict(existing))
      if (attempt === 3) return yield* Effect.die(new Error(`tag policy for "${fields.tag}" neither created nor found`))
    }
  }))

/**
 * Updates a policy: 404 for an unknown id (before any value is looked at), then the validation
 * messages of the policy as it would be after the update (mode update), then 409 when a new tag has
 * a policy of its own. The row is locked from the read to the write. A rename racing with a create
 * of the same tag fails on the unique index; the second run then finds that policy (409).
 */
export const updateTagPolicy = (projectId: string, id: string, patch: TagPolicyBody) =>
  orUnavailable(Effect.gen(function*() {
    if (!isUuid(id)) return yield* Effect.fail(notFound())
    const nowMs = yield* Clock.currentTimeMillis
    const transaction = withTransaction(Effect.gen(function*() {
      const stored = yield* tagPoliciesGetForUpdate({ projectId, id: id.toLowerCase() })
      if (stored === undefined) return yield* Effect.fail(notFound())
      const merged = mergeTagPolicyUpdate(stored, patch)
      yield* validated(merged, "update")
      if (merged.tag !== stored.tag) {
        const holder = yield* tagPoliciesFindByTag({ projectId, tag: merged.tag })
        if (holder !== undefined) return yield* Effect.fail(conflict(holder))
      }
      const updated = yield* tagPoliciesUpdate({ projectId, id: stored.id, fields: merged, nowMs })
      if (updated === undefined) return yield* Effect.fail(notFound())
      return { updated, previousTag: stored.tag }
    }))
    const { previousTag, updated } = yield* transaction.pipe(Effect.catchIf((error) => isUniqueViolation(error), () => transaction))
    yield* kickGates(projectId, [updated.tag, previousTag])
    yield* awaitPauseApplied(projectId, updated)
    return yield* viewOf(projectId, updated)
  }))

/** Deletes a policy (404 for an unknown id); its tag's held-back triggers are released by their gate. */
export const deleteTagPolicy = (projectId: string, id: string) =>
  orUnavailable(Effect.gen(function*() {
    if (!isUuid(id)) return yield* Effect.fail(notFound())
    const deleted = yield* tagPoliciesDelete({ projectId, id: id.toLowerCase() })
    if (deleted === undefined) return yield* Effect.fail(notFound())
    yield* kickGates(projectId, [deleted.tag])
  }))
