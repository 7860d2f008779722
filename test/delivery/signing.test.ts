// The identity headers prepareRequest adds (domain/signing.ts): names and order, the attempt, the
// signature over the body as sent (none: "<t>."), one v1 per secret in order, stored headers of the
// same names dropped whatever their case; checked against node:crypto directly.
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as crypto from "node:crypto"
import { type DeliveryRequest, prepareRequest } from "../../src/delivery/request.ts"
import { generateSigningSecret, signatureHeader } from "../../src/domain/signing.ts"

const A = generateSigningSecret()
const B = generateSigningSecret()

const request = (req: Partial<DeliveryRequest>): DeliveryRequest => ({
  url: "https://api.example.com/hook",
  method: "POST",
  headers: [],
  body: null,
  contentType: null,
  timeoutSeconds: 300,
  identity: { triggerId: "0190a0a0-0000-7000-8000-000000000001", attempt: 3, signingSecrets: [A], timestampSeconds: 1_700_000_000 },
  ...req
})

const headersOf = (req: DeliveryRequest): Array<[string, string]> => {
  const result = prepareRequest(req)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  const flat = result.success.headers
  return Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!])
}

const hmac = (secret: string, payload: Buffer) => crypto.createHmac("sha256", secret).update(payload).digest("hex")

describe("identity headers", () => {
  it("trigger id, attempt and t=…,v1=… over \"<t>.<body>\", after the stored headers", () => {
    const body = new Uint8Array([1, 2, 255, 0])
    const headers = headersOf(request({ headers: [["X-A", "1"]], body, contentType: "application/x" }))
    assert.deepStrictEqual(headers.slice(-3), [
      ["Timewheel-Trigger-Id", "0190a0a0-0000-7000-8000-000000000001"],
      ["Timewheel-Attempt", "3"],
      ["Timewheel-Signature", `t=1700000000,v1=${hmac(A, Buffer.concat([Buffer.from("1700000000."), Buffer.from(body)]))}`]
    ])
    assert.deepStrictEqual(headers[0], ["X-A", "1"])
  })

  it("no body, or an empty one: signed over \"<t>.\"", () => {
    const expected = `t=1700000000,v1=${hmac(A, Buffer.from("1700000000."))}`
    for (const body of [null, new Uint8Array(0)]) {
      assert.deepStrictEqual(headersOf(request({ body })).find(([name]) => name === "Timewheel-Signature"), ["Timewheel-Signature", expected])
    }
  })

  it("two secrets: two v1 entries in their order", () => {
    const value = signatureHeader([B, A], 42, new TextEncoder().encode("x"))
    assert.strictEqual(value, `t=42,v1=${hmac(B, Buffer.from("42.x"))},v1=${hmac(A, Buffer.from("42.x"))}`)
  })

  it("stored headers with the same names (any case) are dropped; without an identity they are sent as stored", () => {
    const stored: ReadonlyArray<readonly [string, string]> = [
      ["timewheel-signature", "t=1,v1=forged"], ["TIMEWHEEL-ATTEMPT", "9"], ["Timewheel-Trigger-Id", "x"], ["Timewheel-Other", "kept"]
    ]
    const names = headersOf(request({ headers: stored })).map(([name]) => name.toLowerCase())
    assert.deepStrictEqual(names.filter((name) => name.startsWith("timewheel-")), [
      "timewheel-other", "timewheel-trigger-id", "timewheel-attempt", "timewheel-signature"
    ])
    const { identity: _, ...bare } = request({ headers: stored })
    assert.deepStrictEqual(headersOf(bare).slice(0, 4), stored.map(([n, v]) => [n, v]))
  })

  it("a secret is whsec_ and 64 hex characters, new each time", () => {
    assert.match(A, /^whsec_[0-9a-f]{64}$/)
    assert.notStrictEqual(A, B)
  })
})
