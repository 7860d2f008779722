// Dashboard administrators (docs/settings.md "CLI": `admin create`): an e-mail address and
// a password stored as an scrypt hash.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { BadRequest, Conflict } from "../domain/errors.ts"
import { uuidv7 } from "../domain/ids.ts"
import { hashPassword } from "../domain/auth/password.ts"
import { adminsCreate } from "../store/admins.ts"

export const MIN_PASSWORD_LENGTH = 8

export const createAdmin = Effect.fnUntraced(function*(email: string, password: string) {
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) return yield* Effect.fail(new BadRequest(`"${email}" is not an e-mail address`))
  if (password.length < MIN_PASSWORD_LENGTH) {
    return yield* Effect.fail(new BadRequest(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`))
  }
  const nowMs = yield* Clock.currentTimeMillis
  const created = yield* adminsCreate({ id: uuidv7(nowMs), email, passwordHash: hashPassword(password), nowMs })
  if (!created) return yield* Effect.fail(new Conflict(`an admin with e-mail "${email}" already exists`))
})
