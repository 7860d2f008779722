// Operator commands (docs/settings.md "CLI"): each calls its use case in commands/ and returns
// the text for stdout; a failure's message (an API error or a CliError) is the one stderr line.
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createAdmin } from "../commands/admins.ts"
import { createApiKey, listApiKeys, revokeApiKey } from "../commands/apiKeys.ts"
import { resealStoredTriggers } from "../commands/encryptionKeys.ts"
import { createProject, rotateSigningSecret, setProjectQuota, showSigningSecret } from "../commands/projects.ts"
import type { Keyring } from "../domain/sealing.ts"
import { parseKeyLabel } from "../domain/auth/apiKey.ts"
import { MAX_SIGNING_SECRET_OVERLAP_HOURS } from "../domain/signing.ts"

export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

const fail = (message: string) => Effect.fail(new CliError({ message }))

export const parseQuota = (raw: string | undefined) =>
  raw !== undefined && /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw))
    ? Effect.succeed(Number(raw))
    : fail(`the monthly quota must be a whole number ≥ 0, got "${raw ?? ""}"`)

export const projectCreate = (name: string, monthlyQuota: number | undefined) => createProject(name, monthlyQuota)

export const projectSetQuota = (name: string, monthlyQuota: number) =>
  Effect.as(setProjectQuota(name, monthlyQuota), `monthly quota of "${name}" set to ${monthlyQuota}`)

/** Prints the project's current signing secret alone. */
export const secretShow = (name: string) => Effect.map(showSigningSecret(name), (secrets) => secrets.current)

/** The new signing secret alone; the previous one signs too for the overlap. */
export const secretRotate = (name: string, overlapHours: number | undefined) =>
  Effect.map(rotateSigningSecret(name, overlapHours === undefined ? undefined : overlapHours * 3_600_000), (rotated) => rotated.secret)

export const parseOverlapHours = (raw: string | undefined) =>
  raw !== undefined && /^\d+$/.test(raw) && Number(raw) <= MAX_SIGNING_SECRET_OVERLAP_HOURS
    ? Effect.succeed(Number(raw))
    : fail(`--overlap-hours must be a whole number from 0 to ${MAX_SIGNING_SECRET_OVERLAP_HOURS}, got "${raw ?? ""}"`)

/** A new key of the project, labelled with `--label` when given; the clear key alone. */
export const keyCreate = (projectName: string, label: string | null) => createApiKey(projectName, label)

/** `--label`'s value as a key's label (absent or blank: none). */
export const parseLabel = (raw: string | undefined) => {
  const parsed = parseKeyLabel(raw)
  return "problem" in parsed ? fail(`--label: ${parsed.problem}`) : Effect.succeed(parsed.label)
}

export const keyList = (projectName: string) =>
  Effect.map(listApiKeys(projectName), (keys) =>
    keys
      .map((key) =>
        [key.id, key.hint, key.createdAt.toISOString(), key.revokedAt === null ? "active" : `revoked ${key.revokedAt.toISOString()}`, key.label ?? ""].join("\t")
      )
      .join("\n"))

export const keyRevoke = (keyId: string) => Effect.as(revokeApiKey(keyId), `key ${keyId} revoked`)

export const adminCreate = (email: string, password: string) => Effect.as(createAdmin(email, password), `admin ${email} created`)

/** Seals every stored trigger (and bulk replay's headers) with the first key of ENCRYPTION_KEYS; one line saying how many. */
export const keysRotateEncryption = (keyring: Keyring | null) =>
  keyring === null
    ? fail("ENCRYPTION_KEYS is not set: there is no key to encrypt with")
    : Effect.map(resealStoredTriggers(keyring), (done) => {
      const counts = `${done.resealed} triggers and ${done.replays} bulk replays' headers sealed with key "${done.writerId}"`
      return done.skipped
        ? `${counts}; some were busy every time: run the command again`
        : `${counts}; every stored request now is (older keys can leave ENCRYPTION_KEYS)`
    })
