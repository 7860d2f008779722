// The live DashboardSessions (api/auth.ts): the session cookie read from the request and resolved by
// commands/sessions.ts (PostgreSQL, so any node honours it), and the project the `Timewheel-Project`
// header names, which must exist (docs/README.md "Authentication": missing or unknown → 400).
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HttpServerRequest } from "effect/http"
import { projectNameOf } from "../commands/projects.ts"
import { sessionOf } from "../commands/sessions.ts"
import { BadRequest, type ServiceUnavailable } from "../domain/errors.ts"
import { PROJECT_HEADER, SESSION_COOKIE } from "../domain/auth/signin.ts"
import { DashboardSessions } from "./auth.ts"

/** The session token of the request's cookie, if any. */
export const sessionToken = (request: HttpServerRequest.HttpServerRequest): string | undefined => request.cookies[SESSION_COOKIE]

/** Failures other than the API's (an SQL error that is not "unavailable") are defects: a 500. */
const specOnly = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
  Effect.catchIf(effect, (error): error is Exclude<E, BadRequest | ServiceUnavailable> =>
    error._tag !== "BadRequest" && error._tag !== "ServiceUnavailable", Effect.die) as Effect.Effect<A, Extract<E, BadRequest | ServiceUnavailable>>

export const DashboardSessionsLive = Layer.effect(DashboardSessions, Effect.gen(function*() {
  const services = yield* Effect.context<Effect.Services<ReturnType<typeof sessionOf>> | Effect.Services<ReturnType<typeof projectNameOf>>>()
  return DashboardSessions.of({
    sessionOf: (request) => specOnly(Effect.provideContext(sessionOf(sessionToken(request)), services)),
    projectOf: (request) => {
      const id = request.headers[PROJECT_HEADER]
      if (id === undefined || id.trim() === "") {
        return Effect.fail(new BadRequest("A dashboard session names its project in the Timewheel-Project header"))
      }
      return Effect.flatMap(specOnly(Effect.provideContext(projectNameOf(id.trim()), services)), (name) =>
        name === undefined ? Effect.fail(new BadRequest(`Unknown project: ${id.trim()}`)) : Effect.succeed(id.trim().toLowerCase()))
    }
  })
}))
