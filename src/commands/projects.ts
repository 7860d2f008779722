// Projects, as an operator manages them (CLI today, dashboard later): create one with the default
// monthly quota and the project default retry policy, change its quota.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AppConfig } from "../config.ts"
import { BadRequest, Conflict, NotFound } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { PROJECT_DEFAULT_RETRY, projectPolicyView } from "../domain/retry.ts"
import { projectsCreate, projectsFindByName, projectsSetQuota } from "../store/projects.ts"

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
    id, name, monthlyQuota: monthlyQuota ?? config.defaultMonthlyQuota, retryPolicy: projectPolicyView(PROJECT_DEFAULT_RETRY), nowMs
  })
  if (!created) return yield* Effect.fail(new Conflict(`a project named "${name}" already exists`))
  return id
})

export const setProjectQuota = Effect.fnUntraced(function*(name: string, monthlyQuota: number) {
  const nowMs = yield* Clock.currentTimeMillis
  const found = yield* projectsSetQuota({ name, monthlyQuota, nowMs })
  if (!found) return yield* Effect.fail(new NotFound(`no project named "${name}"`))
})
