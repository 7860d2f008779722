// Operator commands (DECISIONS "Operator contract"): each calls its use case in commands/ and returns
// the text for stdout; a failure's message (a spec error or a CliError) is the one stderr line.
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createAdmin } from "../commands/admins.ts"
import { createApiKey, listApiKeys, revokeApiKey } from "../commands/apiKeys.ts"
import { createProject, setProjectQuota } from "../commands/projects.ts"

export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

const fail = (message: string) => Effect.fail(new CliError({ message }))

export const parseQuota = (raw: string | undefined) =>
  raw !== undefined && /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw))
    ? Effect.succeed(Number(raw))
    : fail(`the monthly quota must be a whole number ≥ 0, got "${raw ?? ""}"`)

export const projectCreate = (name: string, monthlyQuota: number | undefined) => createProject(name, monthlyQuota)

export const projectSetQuota = (name: string, monthlyQuota: number) =>
  Effect.as(setProjectQuota(name, monthlyQuota), `monthly quota of "${name}" set to ${monthlyQuota}`)

export const keyCreate = (projectName: string) => createApiKey(projectName)

export const keyList = (projectName: string) =>
  Effect.map(listApiKeys(projectName), (keys) =>
    keys
      .map((key) =>
        [key.id, key.hint, key.createdAt.toISOString(), key.revokedAt === null ? "active" : `revoked ${key.revokedAt.toISOString()}`].join("\t")
      )
      .join("\n"))

export const keyRevoke = (keyId: string) => Effect.as(revokeApiKey(keyId), `key ${keyId} revoked`)

export const adminCreate = (email: string, password: string) => Effect.as(createAdmin(email, password), `admin ${email} created`)
