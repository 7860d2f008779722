// Dashboard admin passwords: scrypt with a random salt, encoded as scrypt$N$r$p$salt$hash.
import * as crypto from "node:crypto"

const N = 16384
const R = 8
const P = 1

export const hashPassword = (password: string): string => {
  const salt = crypto.randomBytes(16)
  const hash = crypto.scryptSync(password, salt, 32, { N, r: R, p: P })
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${hash.toString("base64")}`
}

export const verifyPassword = (password: string, encoded: string): boolean => {
  const [scheme, n, r, p, salt, hash] = encoded.split("$")
  if (scheme !== "scrypt" || salt === undefined || hash === undefined) return false
  const expected = Buffer.from(hash, "base64")
  const actual = crypto.scryptSync(password, Buffer.from(salt, "base64"), expected.length, {
    N: Number(n), r: Number(r), p: Number(p)
  })
  return crypto.timingSafeEqual(expected, actual)
}

/** verifyPassword off the event loop (libuv's thread pool): a sign-in never blocks other requests. */
export const verifyPasswordAsync = (password: string, encoded: string): Promise<boolean> => {
  const [scheme, n, r, p, salt, hash] = encoded.split("$")
  if (scheme !== "scrypt" || salt === undefined || hash === undefined) return Promise.resolve(false)
  const expected = Buffer.from(hash, "base64")
  return new Promise((resolve, reject) =>
    crypto.scrypt(password, Buffer.from(salt, "base64"), expected.length, { N: Number(n), r: Number(r), p: Number(p) }, (error, actual) =>
      error === null ? resolve(crypto.timingSafeEqual(expected, actual)) : reject(error)))
}

/** A hash of no one's password: checked for an unknown e-mail, so both take the same time. */
let decoy: string | undefined
export const decoyHash = (): string => (decoy ??= hashPassword(crypto.randomBytes(16).toString("hex")))
