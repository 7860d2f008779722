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
