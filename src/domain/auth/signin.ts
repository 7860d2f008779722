// Dashboard sign-in rules (docs/dashboard.md), pure: session tokens (random, stored only as a SHA-256 hash),
// the cookie that carries them, and the throttling of failed sign-ins — a sliding window per account
// (the e-mail as typed, lowercased, whether or not such an admin exists) and per client address.
import * as crypto from "node:crypto"

/** `__Host-`: the browser keeps it only when Secure, Path=/ and without Domain. */
export const SESSION_COOKIE = "__Host-timewheel-session"

/** The header naming the project a session acts on (docs/README.md "Authentication"). */
export const PROJECT_HEADER = "timewheel-project"

export const newSessionToken = (): string => crypto.randomBytes(32).toString("base64url")

export const hashSessionToken = (token: string): Uint8Array =>
  new Uint8Array(crypto.createHash("sha256").update(token, "utf8").digest())

/** A well-formed token (what newSessionToken makes): anything else is not looked up. */
export const isSessionToken = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token)

/** The Set-Cookie value of a session; `maxAgeSeconds` 0 clears it. */
export const sessionCookie = (token: string, maxAgeSeconds: number): string =>
  `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=Strict`

/** The throttling window and its limits. */
export const THROTTLE_WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_ACCOUNT = 5
export const MAX_FAILURES_PER_ADDRESS = 20

/** A session's last use is written at most this often (idle expiry is that much coarser). */
export const SESSION_TOUCH_EVERY_MS = 60_000

export const accountOf = (email: string): string => email.trim().toLowerCase()

export interface FailureCounts {
  readonly account: number
  /** The oldest failure of the account within the window (ms), when any. */
  readonly accountOldestMs: number | null
  readonly address: number
  readonly addressOldestMs: number | null
}

/** Whether a sign-in may be tried now; when not, why and how many seconds until it may. */
export const throttleDecision = (counts: FailureCounts, nowMs: number):
  | { readonly _tag: "Allowed" }
  | { readonly _tag: "Throttled"; readonly message: string; readonly retryAfterSeconds: number } => {
  const wait = (oldestMs: number | null) => Math.max(1, Math.ceil(((oldestMs ?? nowMs) + THROTTLE_WINDOW_MS - nowMs) / 1000))
  const minutes = (seconds: number) => `${Math.ceil(seconds / 60)} minute${Math.ceil(seconds / 60) === 1 ? "" : "s"}`
  if (counts.account >= MAX_FAILURES_PER_ACCOUNT) {
    const seconds = wait(counts.accountOldestMs)
    return { _tag: "Throttled", message: `Too many failed sign-ins for this account; try again in ${minutes(seconds)}`, retryAfterSeconds: seconds }
  }
  if (counts.address >= MAX_FAILURES_PER_ADDRESS) {
    const seconds = wait(counts.addressOldestMs)
    return { _tag: "Throttled", message: `Too many failed sign-ins from this address; try again in ${minutes(seconds)}`, retryAfterSeconds: seconds }
  }
  return { _tag: "Allowed" }
}

/** Whether a stored session is still valid at `nowMs` (absolute and idle limits). */
export const sessionAlive = (session: { readonly expiresAtMs: number; readonly lastSeenAtMs: number }, nowMs: number, idleMs: number) =>
  nowMs < session.expiresAtMs && nowMs < session.lastSeenAtMs + idleMs
