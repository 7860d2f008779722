// API keys: created for a project, optionally labelled (the clear key is returned once and stored only as a hash),
// listed, revoked (every node forgets it at once) — by the CLI (project by name) and the dashboard
// (the session's project, with last-used times), and resolved to their project to authenticate a
// request (through the node's ApiKeyCache).
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AppConfig } from "../config.ts"
import { apiKeyHint, generateApiKey, hashApiKey } from "../domain/auth/apiKey.ts"
import { NotFound, type ServiceUnavailable, Unauthorized } from "../domain/errors.ts"
import { isUuid, uuidv7 } from "../domain/ids.ts"
import { apiKeysCreate, apiKeysList, apiKeysRevoke } from "../store/apiKeys.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { ApiKeyCache } from "./apiKeyCache.ts"
import { findProjectByName } from "./projects.ts"
import type { ApiKeyView } from "../domain/responses.ts"

export type { ApiKeyView }

/** A new key for the named project, with an optional label (already parsed); the clear key (shown once). */
export const createApiKey = Effect.fnUntraced(function*(projectName: string, label: string | null = null) {
  const config = yield* AppConfig
  const project = yield* findProjectByName(projectName)
  const nowMs = yield* Clock.currentTimeMillis
  const key = generateApiKey(config.prefix)
  yield* apiKeysCreate({ id: uuidv7(nowMs), projectId: project.id, hash: hashApiKey(key), hint: apiKeyHint(key), label, nowMs })
  return key
})

export const listApiKeys = Effect.fnUntraced(function*(projectName: string) {
  const project = yield* findProjectByName(projectName)
  return yield* apiKeysList(project.id)
})

export const revokeApiKey = Effect.fnUntraced(function*(keyId: string) {
  const noSuchKey = new NotFound(`no active key with id "${keyId}"`)
  if (!isUuid(keyId)) return yield* Effect.fail(noSuchKey)
  const nowMs = yield* Clock.currentTimeMillis
  const revoked = yield* apiKeysRevoke({ id: keyId, nowMs })
  if (!revoked) return yield* Effect.fail(noSuchKey)
})

const keyView = (key: { readonly id: string; readonly hint: string; readonly label: string | null; readonly createdAt: Date; readonly lastUsedAt: Date | null; readonly revokedAt: Date | null }): ApiKeyView => ({
  id: key.id,
  hint: key.hint,
  label: key.label,
  createdAt: key.createdAt.toISOString(),
  lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  revokedAt: key.revokedAt?.toISOString() ?? null
})

/** A new key for a project (dashboard), with an optional label (already parsed): its view and the clear key, shown this once. */
export const createProjectApiKey = (projectId: string, label: string | null) =>
  orUnavailable(Effect.gen(function*() {
    const config = yield* AppConfig
    const nowMs = yield* Clock.currentTimeMillis
    const key = generateApiKey(config.prefix)
    const id = uuidv7(nowMs)
    yield* apiKeysCreate({ id, projectId, hash: hashApiKey(key), hint: apiKeyHint(key), label, nowMs })
    return { ...keyView({ id, hint: apiKeyHint(key), label, createdAt: new Date(nowMs), lastUsedAt: null, revokedAt: null }), key }
  }))

/** The project's keys, oldest first, revoked ones included. */
export const listProjectApiKeys = (projectId: string) =>
  orUnavailable(Effect.map(apiKeysList(projectId), (keys) => ({ keys: keys.map(keyView) })))

/** Revokes a key of the project (every node forgets it at once); 404 `Key not found` otherwise. */
export const revokeProjectApiKey = (projectId: string, keyId: string) =>
  orUnavailable(Effect.gen(function*() {
    if (!isUuid(keyId)) return yield* Effect.fail(new NotFound("Key not found"))
    const nowMs = yield* Clock.currentTimeMillis
    const revoked = yield* apiKeysRevoke({ id: keyId.toLowerCase(), projectId, nowMs })
    if (!revoked) return yield* Effect.fail(new NotFound("Key not found"))
  }))

/** The project of a live key; 401 `Invalid api key` for an empty or unknown one; 503 while the database is away. */
export const projectOfApiKey = (key: string): Effect.Effect<string, Unauthorized | ServiceUnavailable, ApiKeyCache> =>
  key === ""
    ? Effect.fail(new Unauthorized("Invalid api key", "the api key is empty"))
    : Effect.flatMap(Effect.flatMap(ApiKeyCache, (cache) => cache.projectOf(key)), (projectId) =>
      projectId === undefined
        ? Effect.fail(new Unauthorized("Invalid api key", "no live key matches: unknown, revoked, or of another timewheel database"))
        : Effect.succeed(projectId))
