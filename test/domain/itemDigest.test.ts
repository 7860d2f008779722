// The digest of an item's compared fields (domain/itemDigest.ts): equal exactly when changedFields
// (domain/itemMatch.ts) finds nothing different, over variants of every compared field and of what
// is not compared; keyed under ENCRYPTION_KEYS (another digest than without keys, and another per key).
import * as crypto from "node:crypto"
import { describe, expect, it } from "vitest"
import { DECLARE_WORDING, decodeItem, validateItems } from "../../src/domain/item.ts"
import type { Item } from "../../src/domain/item.ts"
import { comparedText, digestKeyOf, itemDigest } from "../../src/domain/itemDigest.ts"
import { changedFields, type StoredTrigger } from "../../src/domain/itemMatch.ts"
import { parseEncryptionKeys, type Keyring } from "../../src/domain/sealing.ts"

const TAG = "billing"
const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const URL = "https://example.com/hook"

const itemOf = (json: Record<string, unknown>): Item => {
  const result = validateItems([decodeItem({ url: URL, scheduledAt: "2030-01-01T00:00:00Z", customKey: "k", ...json })], NOW, DECLARE_WORDING, TAG)
  if (result._tag === "Invalid") throw new Error(result.message)
  return result.items[0]!
}

/** The item as the store would read it back (the same definition and time). */
const storedOf = (item: Item, contentType: string | null = null): StoredTrigger => ({
  id: "00000000-0000-7000-8000-000000000000",
  kind: item.schedule._tag === "Cron" ? "generator" : "job",
  status: item.schedule._tag === "Cron" ? "active" : "registered",
  generatorId: null,
  definition: { ...item.definition, contentType },
  scheduledAtMs: item.schedule._tag === "Once" ? item.schedule.fireAtMs : null,
  cron: item.schedule._tag === "Cron" ? { cronExpr: item.schedule.cronExpr, cronTz: item.schedule.cronTz } : null
})

const BASE = { method: "POST", headers: { "content-type": "application/json", "x-a": "1" }, body: { n: 1 }, title: "t", tags: ["a", "b"], retry: { maxAttempts: 2 } }

const variants: ReadonlyArray<readonly [name: string, json: Record<string, unknown>]> = [
  ["the same", BASE],
  ["headers in another order and case", { ...BASE, headers: { "X-A": "1", "Content-Type": "application/json" } }],
  ["tags in another order", { ...BASE, tags: ["b", "a"] }],
  ["another key (not compared)", { ...BASE, customKey: "other" }],
  ["the body as text of the same bytes", { ...BASE, body: { _tag: "text", value: "{\"n\":1}" } }],
  ["another time", { ...BASE, scheduledAt: "2030-01-01T00:00:00.001Z" }],
  ["a cron value", { ...BASE, scheduledAt: "cron(0 9 * * *)" }],
  ["another url", { ...BASE, url: `${URL}/2` }],
  ["another method", { ...BASE, method: "PUT" }],
  ["another header value", { ...BASE, headers: { "content-type": "application/json", "x-a": "2" } }],
  ["a header more", { ...BASE, headers: { ...BASE.headers, "x-b": "" } }],
  ["another body", { ...BASE, body: { n: 2 } }],
  ["no body", { ...BASE, body: null }],
  ["an empty text body", { ...BASE, body: { _tag: "text", value: "" } }],
  ["bytes that are not UTF-8", { ...BASE, body: { _tag: "base64", value: "/w==" } }],
  ["no title", { ...BASE, title: undefined }],
  ["an empty title", { ...BASE, title: "" }],
  ["a tag more", { ...BASE, tags: ["a", "b", "c"] }],
  ["no retry", { ...BASE, retry: undefined }],
  ["the default retry", { ...BASE, retry: {} }],
  ["another retry value", { ...BASE, retry: { maxAttempts: 3 } }]
]

const keyring = (): Keyring => parseEncryptionKeys(`k:${crypto.randomBytes(32).toString("base64")}`) as Keyring

describe("itemDigest", () => {
  const items = variants.map(([name, json]) => [name, itemOf(json)] as const)

  it("equal digests exactly where changedFields finds nothing different, without keys and with", () => {
    for (const key of [null, digestKeyOf(keyring())]) {
      for (const [a, itemA] of items) {
        for (const [b, itemB] of items) {
          if (itemA.schedule._tag !== itemB.schedule._tag) {
            expect(itemDigest(itemA, key), `${a} / ${b}`).not.toBe(itemDigest(itemB, key))
            continue
          }
          const unchanged = changedFields(itemA, storedOf(itemB)).length === 0
          expect(itemDigest(itemA, key) === itemDigest(itemB, key), `${a} / ${b}`).toBe(unchanged)
        }
      }
    }
  })

  it("a stored content type counts as the content-type header it is sent as", () => {
    const withHeader = itemOf({ headers: { "content-type": "text/plain" } })
    const without = itemOf({})
    const stored = { ...without, definition: { ...without.definition, contentType: "text/plain" } }
    expect(changedFields(withHeader, storedOf(without, "text/plain"))).toEqual([])
    expect(itemDigest(stored, null)).toBe(itemDigest(withHeader, null))
  })

  it("keyed: another digest than the plain SHA-256 and than under another key; one derived key per keyring", () => {
    const item = itemOf(BASE)
    const one = keyring()
    const plain = crypto.createHash("sha256").update(comparedText(item)).digest("base64")
    expect(itemDigest(item, null)).toBe(plain)
    expect(itemDigest(item, digestKeyOf(one))).not.toBe(plain)
    expect(itemDigest(item, digestKeyOf(one))).not.toBe(itemDigest(item, digestKeyOf(keyring())))
    expect(digestKeyOf(one)).toBe(digestKeyOf(one))
    expect(digestKeyOf(null)).toBeNull()
  })
})
