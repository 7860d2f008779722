// The JSON parameters of the batch writes, written out by hand for speed (store/jsonRecords.ts): the
// plain creates' (store/triggers.ts newOneShotsJson) and the /declare and /bulk rows' (store/itemWrites.ts
// itemRecordsJson). Every row reads back as the record jsonb_to_recordset expects, null fields left
// out, text escaped as JSON, bodies as base64 of their own bytes (also when they view a larger buffer).
import { describe, expect, it } from "vitest"
import { itemRecordsJson } from "../../src/store/itemWrites.ts"
import { newOneShotsJson, type NewOneShot } from "../../src/store/triggers.ts"

const definition = {
  url: "https://example.com/hook?a=1&b=\"2\"", method: "POST", headers: [["X-Note", "line\nbreak é \u2028"], ["accept", "*/*"]] as const,
  body: null, contentType: null, title: null, tags: [], customKey: null, retry: null
}

const row = (overrides: Partial<Omit<NewOneShot, "definition">> & { readonly definition?: Partial<NewOneShot["definition"]> } = {}): NewOneShot => ({
  id: "01900000-0000-7000-8000-000000000001", projectId: "p", shard: 7, status: "registered",
  scheduledAtMs: Date.UTC(2099, 0, 1, 0, 0, 0, 5), nowMs: Date.UTC(2026, 10, 27, 1, 2, 3, 4),
  ...overrides,
  definition: { ...definition, ...overrides.definition }
})

describe("newOneShotsJson", () => {
  it("a minimal row: every field it has, nulls left out, due_at only when registered", () => {
    expect(JSON.parse(newOneShotsJson([row(), row({ status: "skipped", id: "01900000-0000-7000-8000-000000000002" })]))).toEqual([
      {
        n: 1, id: "01900000-0000-7000-8000-000000000001", shard: 7, status: "registered", scheduled_at: "2099-01-01T00:00:00.005Z",
        due_at: "2099-01-01T00:00:00.005Z", now: "2026-11-27T01:02:03.004Z", url: definition.url, method: "POST",
        headers: [["X-Note", "line\nbreak é \u2028"], ["accept", "*/*"]], tags: []
      },
      {
        n: 2, id: "01900000-0000-7000-8000-000000000002", shard: 7, status: "skipped", scheduled_at: "2099-01-01T00:00:00.005Z",
        now: "2026-11-27T01:02:03.004Z", url: definition.url, method: "POST", headers: [["X-Note", "line\nbreak é \u2028"], ["accept", "*/*"]],
        tags: []
      }
    ])
  })

  it("a full row: generator id, body of a view, content type, title, tags, custom key, retry", () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253])
    const retry = { strategy: "fixed", maxAttempts: 2, initialDelaySeconds: 5, maxDelaySeconds: null, jitter: false, retryOn: "non_2xx" } as const
    const parsed = JSON.parse(newOneShotsJson([row({
      generatorId: "01900000-0000-7000-8000-0000000000ff",
      definition: {
        body: bytes.subarray(2, 6), contentType: "text/plain; charset=\"utf-8\"", title: "a \"title\"", tags: ["a", "b-c"],
        customKey: "key\\with\"quotes", retry
      }
    })]))[0]
    expect(parsed).toMatchObject({
      generator_id: "01900000-0000-7000-8000-0000000000ff", body: Buffer.from([2, 250, 251, 252]).toString("base64"),
      content_type: "text/plain; charset=\"utf-8\"", title: "a \"title\"", tags: ["a", "b-c"], custom_key: "key\\with\"quotes", retry
    })
  })

  it("no rows: an empty array", () => {
    expect(JSON.parse(newOneShotsJson([]))).toEqual([])
  })
})

describe("itemRecordsJson", () => {
  const base = {
    id: "01900000-0000-7000-8000-000000000003", shard: 3, kind: "job" as const, status: "registered" as const,
    scheduledAtMs: Date.UTC(2099, 5, 1), cron: null, definition
  }
  it("a one-shot without optional fields, and with its expected status", () => {
    expect(JSON.parse(itemRecordsJson([base, { ...base, expectedStatus: "skipped" }]))).toEqual([
      { id: base.id, shard: 3, kind: "job", status: "registered", url: definition.url, method: "POST", headers: definition.headers, tags: [], scheduled_at: "2099-06-01T00:00:00.000Z" },
      { id: base.id, shard: 3, kind: "job", status: "registered", url: definition.url, method: "POST", headers: definition.headers, tags: [], scheduled_at: "2099-06-01T00:00:00.000Z", expected: "skipped" }
    ])
  })
  it("a generator with every field", () => {
    const parsed = JSON.parse(itemRecordsJson([{
      ...base, kind: "generator", status: "active", scheduledAtMs: null, cron: { cronExpr: "0 * * * *", cronTz: "Europe/Paris" },
      definition: { ...definition, body: new Uint8Array([104, 105]), contentType: "text/plain", title: "t", tags: ["x"], customKey: "k\"", retry: null }
    }]))[0]
    expect(parsed).toEqual({
      id: base.id, shard: 3, kind: "generator", status: "active", url: definition.url, method: "POST", headers: definition.headers,
      tags: ["x"], body: "aGk=", content_type: "text/plain", title: "t", custom_key: "k\"", cron_expr: "0 * * * *", cron_tz: "Europe/Paris"
    })
  })
})
