// Operator commands (DECISIONS "Operator contract"): projects, API keys and dashboard admins.
// Each returns the text for stdout or fails with a CliError whose message is the one stderr line.
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { AppConfig } from "../config.ts"
import { apiKeyHint, generateApiKey, hashApiKey } from "../domain/apiKey.ts"
import { uuidv7, isUuid } from "../domain/ids.ts"
import { hashPassword } from "../domain/password.ts"
import { PROJECT_DEFAULT_RETRY, projectPolicyView } from "../domain/retry.ts"
import { adminsCreate } from "../store/admins.ts"
import { apiKeysCreate, apiKeysList, apiKeysRevoke } from "../store/apiKeys.ts"
import { projectsCreate, projectsFindByName, projectsSetQuota } from "../store/projects.ts"

export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

const fail = (message: string) => Effect.fail(new CliError({ message }))

export const parseQuota = (raw: string | undefined) =>
  raw !== undefined && /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw))
    ? Effect.succeed(Number(raw))
    : fail(`the monthly quota must be a whole number ≥ 0, got "${raw ?? ""}"`)

const requireProject = (name: string) =>
  Effect.flatMap(projectsFindByName(name), (project) =>
    project === undefined ? fail(`no project named "${name}"`) : Effect.succeed(project))

export const projectCreate = Effect.fnUntraced(function*(name: string, monthlyQuota: number | undefined) {
  if (name.trim() === "") return yield* fail("the project name must not be empty")
  const config = yield* AppConfig
  const nowMs = yield* Clock.currentTimeMillis
  const id = uuidv7(nowMs)
  const created = yield* projectsCreate({
    id, name, monthlyQuota: monthlyQuota ?? config.defaultMonthlyQuota, retryPolicy: projectPolicyView(PROJECT_DEFAULT_RETRY), nowMs
  })
  if (!created) return yield* fail(`a project named "${name}" already exists`)
  return id
})

export const projectSetQuota = Effect.fnUntraced(function*(name: string, monthlyQuota: number) {
  const nowMs = yield* Clock.currentTimeMillis
  const found = yield* projectsSetQuota({ name, monthlyQuota, nowMs })
  if (!found) return yield* fail(`no project named "${name}"`)
  return `monthly quota of "${name}" set to ${monthlyQuota}`
})

export const keyCreate = Effect.fnUntraced(function*(projectName: string) {
  const config = yield* AppConfig
  const project = yield* requireProject(projectName)
  const nowMs = yield* Clock.currentTimeMillis
  const key = generateApiKey(config.prefix)
  yield* apiKeysCreate({ id: uuidv7(nowMs), projectId: project.id, hash: hashApiKey(key), hint: apiKeyHint(key), nowMs })
  return key
})

export const keyList = Effect.fnUntraced(function*(projectName: string) {
  const project = yield* requireProject(projectName)
  const keys = yield* apiKeysList(project.id)
  return keys
    .map((key) => [key.id, key.hint, key.createdAt.toISOString(), key.revokedAt === null ? "active" : `revoked ${key.revokedAt.toISOString()}`].join("\t"))
    .join("\n")
})

export const keyRevoke = Effect.fnUntraced(function*(keyId: string) {
  if (!isUuid(keyId)) return yield* fail(`no active key with id "${keyId}"`)
  const nowMs = yield* Clock.currentTimeMillis
  const revoked = yield* apiKeysRevoke({ id: keyId, nowMs })
  if (!revoked) return yield* fail(`no active key with id "${keyId}"`)
  return `key ${keyId} revoked`
})

export const adminCreate = Effect.fnUntraced(function*(email: string, password: string) {
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) return yield* fail(`"${email}" is not an e-mail address`)
  if (password.length < 8) return yield* fail("the password must have at least 8 characters")
  const nowMs = yield* Clock.currentTimeMillis
  const created = yield* adminsCreate({ id: uuidv7(nowMs), email, passwordHash: hashPassword(password), nowMs })
  if (!created) return yield* fail(`an admin with e-mail "${email}" already exists`)
  return `admin ${email} created`
})
