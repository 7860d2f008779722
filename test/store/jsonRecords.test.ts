// The JSON parameter of the plain creates' batch write, written out by hand for speed
// (store/jsonRecords.ts, store/triggers.ts newOneShotsJson). Every row reads back as the record
// jsonb_to_recordset expects, null fields left out, text escaped as JSON, bodies as base64 of their
// own bytes (also when they view a larger buffer).
import { describe, expect, it } from "vitest"
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
    expect(JSON.parse(newOneShotsJson([row(), row({ status: "skipped", id: "01900000-0000-7000-8000-000000000002" })], null))).toEqual([
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
    })], null))[0]
    expect(parsed).toMatchObject({
      generator_id: "01900000-0000-7000-8000-0000000000ff", body: Buffer.from([2, 250, 251, 252]).toString("base64"),
      content_type: "text/plain; charset=\"utf-8\"", title: "a \"title\"", tags: ["a", "b-c"], custom_key: "key\\with\"quotes", retry
    })
  })

  it("no rows: an empty array", () => {
    expect(JSON.parse(newOneShotsJson([], null))).toEqual([])
  })
})
