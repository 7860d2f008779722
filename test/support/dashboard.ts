// Helpers of the dashboard tests: administrators, signing in over HTTPS as the pages do (Origin of
// this host, JSON body), the session cookie, and calls carrying it with a Timewheel-Project header.
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { createAdmin } from "../../src/commands/admins.ts"
import { SESSION_COOKIE } from "../../src/domain/auth/signin.ts"
import { TestServer, type TestResponse } from "./server.ts"

let adminCounter = 0

/** A new administrator; its e-mail and password. */
export const newAdmin = Effect.gen(function*() {
  const email = `admin-${++adminCounter}-${Math.random().toString(36).slice(2, 8)}@example.com`
  const password = "correct horse battery"
  yield* createAdmin(email, password).pipe(Effect.orDie)
  return { email, password }
})

/** The Origin the pages send: this very host. */
export const originOf = (baseUrl: string) => baseUrl

/** The session token set by a response, if any. */
export const cookieOf = (response: TestResponse): string | undefined => {
  const header = response.headers["set-cookie"]
  const line = (Array.isArray(header) ? header : header === undefined ? [] : [header]).find((value) => value.startsWith(`${SESSION_COOKIE}=`))
  return line?.slice(SESSION_COOKIE.length + 1).split(";", 1)[0]
}

export const signInCall = (email: string, password: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(TestServer, (server) =>
    server.call("POST", "/session", {
      headers: { "content-type": "application/json", origin: originOf(server.baseUrl), ...headers },
      body: JSON.stringify({ email, password })
    }))

/** Signs in; the session token (fails the test otherwise). */
export const signedIn = (email: string, password: string) =>
  Effect.map(signInCall(email, password), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return cookieOf(response)!
  })

/** A call with the session cookie, this host's Origin, and the project header when given. */
export const sessionCall = (
  token: string,
  method: string,
  path: string,
  options: { readonly project?: string; readonly body?: string; readonly headers?: Record<string, string> } = {}
) =>
  Effect.flatMap(TestServer, (server) =>
    server.call(method, path, {
      headers: {
        cookie: `${SESSION_COOKIE}=${token}`,
        origin: originOf(server.baseUrl),
        ...(options.project === undefined ? {} : { "timewheel-project": options.project }),
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers
      },
      ...(options.body === undefined ? {} : { body: options.body })
    }))
