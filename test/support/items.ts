// Calls of POST /declare and POST /bulk through the shared TestServer, and the shapes of their
// answers; plus a held-back trigger (queued, claimed by no node, as a tag gate leaves it), which no
// API call can produce.
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type TestResponse, TestServer } from "./server.ts"

export interface OperationEntry {
  readonly operation: "added" | "skipped" | "unchanged" | "updated" | "cancelled"
  readonly customKey: string | null
  readonly kind: "job" | "generator"
  readonly id: string
  readonly changedFields?: ReadonlyArray<string>
}

export interface Summary {
  readonly unchanged: number
  readonly added: number
  readonly skipped: number
  readonly updated: number
  readonly cancelled: number
}

export interface DeclareAnswer {
  readonly tag: string
  readonly summary: Summary
  readonly operations: ReadonlyArray<OperationEntry>
}

export interface BulkAnswer {
  readonly summary: Summary
  readonly operations: ReadonlyArray<OperationEntry>
}

const JSON_HEADERS = { "content-type": "application/json" }

/** POST `path` with `body` (a value sent as JSON, or raw text) and these headers (JSON Content-Type unless given). */
export const post = (path: string, body: unknown, headers: Record<string, string>) =>
  TestServer.use((server) =>
    server.call("POST", path, {
      headers: { ...JSON_HEADERS, ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    }))

export const declareCall = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  post("/declare", body, { "ttr-api-key": key, ...headers })

export const bulkCall = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  post("/bulk", body, { "ttr-api-key": key, ...headers })

const ok = <A>(response: TestResponse): A => {
  assert.strictEqual(response.status, 200, response.text)
  assert.strictEqual(response.headers["content-type"], "application/json")
  return response.json() as A
}

/** /declare answered 200: its body. */
export const declared = (key: string, body: unknown) => Effect.map(declareCall(key, body), (r) => ok<DeclareAnswer>(r))

/** /bulk answered 200: its body. */
export const bulked = (key: string, body: unknown) => Effect.map(bulkCall(key, body), (r) => ok<BulkAnswer>(r))

/** The entries of an answer as `operation kind customKey` lines (ids left out), in order. */
export const entryLines = (answer: { readonly operations: ReadonlyArray<OperationEntry> }) =>
  answer.operations.map((e) =>
    `${e.operation} ${e.kind} ${e.customKey ?? "-"}${e.changedFields === undefined ? "" : ` [${e.changedFields.join(",")}]`}`
  )

/** Moves a trigger to queued with no node's claim: held back by a tag gate. */
export const holdBack = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE triggers SET status = 'queued', due_at = NULL, claimed_by = NULL WHERE id = ${id}`
  }).pipe(Effect.orDie)

/**
 * Moves a generator's instance on as if its time had come a minute ago: held back (queued, no node's
 * claim) or retrying (its retry far ahead). The materializer then makes the next one.
 */
export const instanceCameDue = (id: string, status: "queued" | "retrying") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const due = status === "retrying" ? new Date(Date.UTC(2099, 0, 1)) : null
    yield* sql`UPDATE triggers SET status = ${status}, due_at = ${due}, claimed_by = NULL,
      scheduled_at = now() - interval '1 minute' WHERE id = ${id}`
  }).pipe(Effect.orDie)
