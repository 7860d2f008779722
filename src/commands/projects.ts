// Projects, as an operator manages them (CLI today, dashboard later): create one with the default
// monthly quota, the project default retry policy and a signing secret, change its quota, show and
// rotate its signing secret.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AppConfig } from "../config.ts"
import { BadRequest, Conflict, NotFound } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import { PROJECT_DEFAULT_RETRY, projectPolicyView } from "../domain/retry.ts"
import { generateSigningSecret, SIGNING_SECRET_OVERLAP_MS } from "../domain/signing.ts"
import { projectsCreate, projectsFindByName, projectsList, projectsNameOf, projectsSetQuota } from "../store/projects.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { projectsRotateSigningSecret, projectsSigningSecrets } from "../store/signingSecrets.ts"

/** The project with this name; 404 when there is none. */
export const findProjectByName = (name: string) =>
  Effect.flatMap(projectsFindByName(name), (project) =>
    project === undefined ? Effect.fail(new NotFound(`no project named "${name}"`)) : Effect.succeed(project))

/** Creates a project; its id. */
export const createProject = Effect.fnUntraced(function*(name: string, monthlyQuota: number | undefined) {
  if (name.trim() === "") return yield* Effect.fail(new BadRequest("the project name must not be empty"))
  const config = yield* AppConfig
  const nowMs = yield* Clock.currentTimeMillis
  const id = uuidv7(nowMs)
  const created = yield* projectsCreate({
    id, name, monthlyQuota: monthlyQuota ?? config.defaultMonthlyQuota, retryPolicy: projectPolicyView(PROJECT_DEFAULT_RETRY),
    signingSecret: generateSigningSecret(), nowMs
  })
  if (!created) return yield* Effect.fail(new Conflict(`a project named "${name}" already exists`))
  return id
})

export const setProjectQuota = Effect.fnUntraced(function*(name: string, monthlyQuota: number) {
  const nowMs = yield* Clock.currentTimeMillis
  const found = yield* projectsSetQuota({ name, monthlyQuota, nowMs })
  if (!found) return yield* Effect.fail(new NotFound(`no project named "${name}"`))
})

/** The named project's signing secrets now (the current one, and the previous one while it overlaps). */
export const showSigningSecret = Effect.fnUntraced(function*(name: string) {
  const nowMs = yield* Clock.currentTimeMillis
  const secrets = yield* projectsSigningSecrets({ name, nowMs })
  if (secrets === undefined) return yield* Effect.fail(new NotFound(`no project named "${name}"`))
  return secrets
})

/**
 * Gives the named project a new signing secret; the one it replaces goes on signing for `overlapMs`
 * (default 24 h; 0 drops it at once). Running services sign with the new one from their next claim.
 */
export const rotateSigningSecret = Effect.fnUntraced(function*(name: string, overlapMs: number = SIGNING_SECRET_OVERLAP_MS) {
  const nowMs = yield* Clock.currentTimeMillis
  const secret = generateSigningSecret()
  const found = yield* projectsRotateSigningSecret({ name, secret, overlapMs, nowMs })
  if (!found) return yield* Effect.fail(new NotFound(`no project named "${name}"`))
  return { secret, previousUntilMs: overlapMs > 0 ? nowMs + overlapMs : null }
})

/** Every project (id and name), by name: an administrator may act on any of them. */
export const listProjects = orUnavailable(Effect.map(projectsList(), (projects) => ({ projects })))

/** The name of the project with this id; undefined when the id is malformed or unknown. */
export const projectNameOf = (id: string) =>
  isUuid(id) ? orUnavailable(projectsNameOf(id.toLowerCase())) : Effect.succeed(undefined)
