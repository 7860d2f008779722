// Dashboard sign-in, sessions and sign-out (docs/dashboard.md). A sign-in is
// refused while its account or its address has too many recent failures (domain/auth/signin.ts), else
// checks the password (scrypt off the event loop; an unknown e-mail costs the same time and counts
// as a failure of that account), and on success stores a new session in PostgreSQL, so every node
// honours it and a sign-out ends it everywhere at once. A session ends after SESSION_IDLE_MINUTES
// without use or SESSION_MAX_HOURS after sign-in.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { AppConfig } from "../config.ts"
import { TooManyRequests, Unauthorized } from "../domain/errors.ts"
import { decoyHash, verifyPasswordAsync } from "../domain/auth/password.ts"
import { unstorableCharacter } from "../domain/storableText.ts"
import {
  accountOf,
  hashSessionToken,
  isSessionToken,
  newSessionToken,
  SESSION_TOUCH_EVERY_MS,
  sessionAlive,
  THROTTLE_WINDOW_MS,
  throttleDecision
} from "../domain/auth/signin.ts"
import { adminsFindByEmail } from "../store/admins.ts"
import {
  sessionsCreate,
  sessionsDelete,
  sessionsDeleteExpired,
  sessionsFind,
  sessionsTouch,
  signinFailuresClearAccount,
  signinFailuresCount,
  signinFailuresRecord
} from "../store/sessions.ts"
import { orUnavailable } from "../store/unavailable.ts"

export interface SignedIn {
  readonly adminId: string
  readonly email: string
  /** When the session ends at the latest (ISO). */
  readonly expiresAt: string
}

const lifetimes = Effect.map(AppConfig, (config) => ({
  idleMs: config.sessionIdleMinutes * 60_000,
  maxMs: config.sessionMaxHours * 3_600_000
}))

/**
 * Signs in: a new session's token (for the cookie, never stored) and its admin; 429 while throttled,
 * 401 `Wrong e-mail or password` otherwise refused.
 */
export const signIn = (input: { readonly email: string; readonly password: string; readonly address: string | null }) =>
  orUnavailable(Effect.gen(function*() {
    // an address holding a character PostgreSQL cannot store (NUL) names no administrator, and cannot key the throttling
    if (unstorableCharacter(input.email) !== undefined) return yield* Effect.fail(new Unauthorized("Wrong e-mail or password"))
    const nowMs = yield* Clock.currentTimeMillis
    const account = accountOf(input.email)
    const counts = yield* signinFailuresCount({ account, address: input.address, sinceMs: nowMs - THROTTLE_WINDOW_MS })
    const decision = throttleDecision(counts, nowMs)
    if (decision._tag === "Throttled") return yield* Effect.fail(new TooManyRequests(decision.message, decision.retryAfterSeconds))
    const admin = yield* adminsFindByEmail(input.email.trim())
    const matches = yield* Effect.promise(() => verifyPasswordAsync(input.password, admin?.passwordHash ?? decoyHash()))
    if (admin === undefined || !matches) {
      yield* signinFailuresRecord({ account, address: input.address, nowMs })
      return yield* Effect.fail(new Unauthorized("Wrong e-mail or password"))
    }
    yield* signinFailuresClearAccount(account)
    const { maxMs } = yield* lifetimes
    const token = newSessionToken()
    const expiresAtMs = nowMs + maxMs
    yield* sessionsCreate({ tokenHash: hashSessionToken(token), adminId: admin.id, nowMs, expiresAtMs, address: input.address })
    return { token, maxAgeSeconds: Math.floor(maxMs / 1000), admin: { adminId: admin.id, email: admin.email, expiresAt: new Date(expiresAtMs).toISOString() } }
  }))

/** The admin of a live session token; undefined for a missing, unknown or expired one. */
export const sessionOf = (token: string | undefined) =>
  orUnavailable(Effect.gen(function*() {
    if (token === undefined || !isSessionToken(token)) return undefined
    const tokenHash = hashSessionToken(token)
    const session = yield* sessionsFind(tokenHash)
    if (session === undefined) return undefined
    const nowMs = yield* Clock.currentTimeMillis
    const { idleMs } = yield* lifetimes
    if (!sessionAlive(session, nowMs, idleMs)) {
      yield* sessionsDelete(tokenHash)
      return undefined
    }
    if (nowMs - session.lastSeenAtMs >= SESSION_TOUCH_EVERY_MS) yield* sessionsTouch({ tokenHash, nowMs })
    return { adminId: session.adminId, email: session.email, expiresAt: new Date(session.expiresAtMs).toISOString() } satisfies SignedIn
  }))

/** Ends the session of this token, on every node (a missing or unknown token: nothing to do). */
export const signOut = (token: string | undefined) =>
  orUnavailable(token === undefined || !isSessionToken(token) ? Effect.void : sessionsDelete(hashSessionToken(token)))

/** Deletes ended sessions and failed sign-ins older than the throttling window (the dashboard job). */
export const purgeSessions = Effect.gen(function*() {
  const nowMs = yield* Clock.currentTimeMillis
  const { idleMs } = yield* lifetimes
  yield* sessionsDeleteExpired({ nowMs, idleMs, failuresBeforeMs: nowMs - THROTTLE_WINDOW_MS })
})
