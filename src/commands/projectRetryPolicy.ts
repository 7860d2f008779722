// The project default retry policy (docs/retries.md "The project's default policy"):
// read it, and patch it — omitted fields keep their value, a bad value is a 400 naming the field.
// Only the fields present in the patch are written, merged into the stored policy in one statement,
// so two concurrent patches of different fields both survive.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { BadRequest } from "../domain/errors.ts"
import { projectPolicyFromStored, projectPolicyView, type ProjectRetryPolicyView, validateRetryPolicyPatch } from "../domain/retry.ts"
import { projectsPatchRetryPolicy } from "../store/projectRetryPolicy.ts"
import { projectsGetRetryPolicy } from "../store/projects.ts"
import { orUnavailable } from "../store/unavailable.ts"

const FIELDS: ReadonlyArray<keyof ProjectRetryPolicyView> = [
  "retryStrategy", "retryMaxAttempts", "retryInitialDelaySeconds", "retryMaxDelaySeconds", "retryJitter", "retryOn"
]

const readPolicy = (projectId: string) => Effect.map(projectsGetRetryPolicy(projectId), projectPolicyFromStored)

/** The whole policy, with the API's field names. */
export const getProjectRetryPolicy = (projectId: string) => orUnavailable(Effect.map(readPolicy(projectId), projectPolicyView))

/** Applies a patch (any JSON value: a non-object or a bad field is a 400); the whole policy after it. */
export const patchProjectRetryPolicy = (projectId: string, patch: unknown) => orUnavailable(applyPatch(projectId, patch))

const applyPatch = Effect.fnUntraced(function*(projectId: string, patch: unknown) {
  const result = validateRetryPolicyPatch(yield* readPolicy(projectId), patch)
  if (result._tag === "Err") return yield* Effect.fail(new BadRequest(result.message))
  const patched = projectPolicyView(result.policy)
  const fields = Object.fromEntries(
    FIELDS.filter((field) => Object.hasOwn(patch as object, field)).map((field) => [field, patched[field]])
  )
  const nowMs = yield* Clock.currentTimeMillis
  const stored = yield* projectsPatchRetryPolicy({ projectId, fields, nowMs })
  return projectPolicyView(projectPolicyFromStored(stored))
})
