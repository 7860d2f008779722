// POST /declare and POST /bulk (docs/declare-and-bulk.md "POST /declare", "POST /bulk", "Errors"
// for the checks in order): the JSON body read before the key — a Content-Type other than JSON → 415,
// invalid JSON or a body of the wrong shape → empty 400, a body over MAX_ITEMS_BODY_BYTES → 413 —
// then the credentials (key header, Bearer or dashboard session: 401 `Invalid api key` /
// `Unauthorized`), then the command (commands/declare.ts, commands/bulk.ts), which checks the items
// (400 with the documented messages) and answers 200 JSON. Other methods get the router's empty 404.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { BulkCall, bulkTriggers } from "../commands/bulk.ts"
import { declareTriggers } from "../commands/declare.ts"
import { decodeBulkBody } from "../domain/bulk.ts"
import { MalformedRequest } from "../domain/errors.ts"
import { type Decoded, decodeDeclareBody } from "../domain/item.ts"
import { authenticate } from "./auth.ts"
import { jsonResponse, jsonTextResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBodyAndText, requireExactPath } from "./requestParts.ts"

/** JSON bodies of /declare and /bulk up to 16 MiB are read; a larger one is a 413. */
export const MAX_ITEMS_BODY_BYTES = 16 * 1024 * 1024

/** The body read and decoded (415, 400, 413), then the caller's project (401); `text` the body's. */
const readCall = <A>(path: RegExp, decode: (json: unknown) => Decoded<A>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, path)
    const read = yield* readJsonBodyAndText(request, MAX_ITEMS_BODY_BYTES)
    const decoded = decode(read.json)
    if (decoded._tag === "Shape") return yield* Effect.fail(new MalformedRequest(decoded.reason))
    const { projectId } = yield* authenticate(request)
    return { projectId, body: decoded.value, text: read.text, nowMs: yield* Clock.currentTimeMillis }
  })

const declareRoute = Effect.gen(function*() {
  const { projectId, body, nowMs } = yield* readCall(/^\/declare$/, decodeDeclareBody)
  return jsonResponse(200, yield* declareTriggers(projectId, body, nowMs))
})

// a callback, not a generator: nothing of the call read stays in a suspended frame but what bulkTriggers holds
const bulkRoute = readCall(/^\/bulk$/, decodeBulkBody).pipe(
  Effect.flatMap((call) => bulkTriggers(call.projectId, BulkCall.ofText(call.body, call.text, call.nowMs))),
  Effect.map((answer) => jsonTextResponse(200, answer))
)

export const DeclareRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("POST", "/declare", handle(declareRoute))
  yield* router.add("POST", "/bulk", handle(bulkRoute))
}))
