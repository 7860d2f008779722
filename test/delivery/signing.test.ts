// The identity headers prepareRequest adds (domain/signing.ts): names and order, the attempt, the
// Standard Webhooks headers checked with the `standardwebhooks` package (the one a target would use),
// the Timewheel-Signature over the body as sent (none: "<t>."), one signature per secret in order,
// stored headers of the same names dropped whatever their case; secrets in the Standard Webhooks
// encoding, and the earlier format's secrets rewritten so that their signatures do not change.
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as crypto from "node:crypto"
import { Webhook } from "standardwebhooks"
import { type DeliveryRequest, prepareRequest } from "../../src/delivery/request.ts"
import {
  generateSigningSecret, signatureHeader, SIGNING_SECRET_PATTERN, standardFormOfLegacySecret, webhookSignature
} from "../../src/domain/signing.ts"

const A = generateSigningSecret()
const B = generateSigningSecret()
const ID = "0190a0a0-0000-7000-8000-000000000001"
const T = 1_700_000_000

const request = (req: Partial<DeliveryRequest>): DeliveryRequest => ({
  url: "https://api.example.com/hook",
  method: "POST",
  headers: [],
  body: null,
  contentType: null,
  timeoutSeconds: 300,
  identity: { triggerId: ID, attempt: 3, signingSecrets: [A], timestampSeconds: T },
  ...req
})

const headersOf = (req: DeliveryRequest): Array<[string, string]> => {
  const result = prepareRequest(req)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  const flat = result.success.headers
  return Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!])
}

const keyOf = (secret: string) => Buffer.from(secret.slice("whsec_".length), "base64")
const hmac = (secret: string, payload: Buffer, encoding: "hex" | "base64" = "hex") =>
  crypto.createHmac("sha256", keyOf(secret)).update(payload).digest(encoding)

/** standardwebhooks' check, with the clock at T (its tolerance is 5 minutes around now). */
const verifiesWith = (secret: string, headers: Array<[string, string]>, body: Buffer) => {
  const wanted = Object.fromEntries(headers.filter(([name]) => name.startsWith("webhook-")))
  const realNow = Date.now
  Date.now = () => T * 1000
  try {
    new Webhook(secret).verify(body, wanted, { jsonParse: false })
    return true
  } catch {
    return false
  } finally {
    Date.now = realNow
  }
}

describe("identity headers", () => {
  it("trigger id, attempt, webhook-id/-timestamp/-signature and Timewheel-Signature, after the stored headers", () => {
    const body = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x31, 0x7d]) // {"a":1}
    const headers = headersOf(request({ headers: [["X-A", "1"]], body, contentType: "application/json" }))
    const signed = Buffer.concat([Buffer.from(`${ID}.${T}.`), Buffer.from(body)])
    assert.deepStrictEqual(headers.slice(-6), [
      ["Timewheel-Trigger-Id", ID],
      ["Timewheel-Attempt", "3"],
      ["webhook-id", ID],
      ["webhook-timestamp", String(T)],
      ["webhook-signature", `v1,${hmac(A, signed, "base64")}`],
      ["Timewheel-Signature", `t=${T},v1=${hmac(A, Buffer.concat([Buffer.from(`${T}.`), Buffer.from(body)]))}`]
    ])
    assert.deepStrictEqual(headers[0], ["X-A", "1"])
    assert.isTrue(verifiesWith(A, headers, Buffer.from(body)))
    assert.isFalse(verifiesWith(B, headers, Buffer.from(body)))
    assert.isFalse(verifiesWith(A, headers, Buffer.from("{\"a\":2}")))
  })

  it("no body, or an empty one: signed over \"<id>.<t>.\" and \"<t>.\"", () => {
    for (const body of [null, new Uint8Array(0)]) {
      const headers = headersOf(request({ body }))
      assert.deepStrictEqual(headers.find(([name]) => name === "webhook-signature")?.[1], `v1,${hmac(A, Buffer.from(`${ID}.${T}.`), "base64")}`)
      assert.deepStrictEqual(headers.find(([name]) => name === "Timewheel-Signature")?.[1], `t=${T},v1=${hmac(A, Buffer.from(`${T}.`))}`)
      assert.isTrue(verifiesWith(A, headers, Buffer.alloc(0)))
    }
  })

  it("two secrets (a rotation): two signatures in their order, either one verifies", () => {
    const body = new TextEncoder().encode("x")
    assert.strictEqual(webhookSignature([B, A], ID, 42, body),
      `v1,${hmac(B, Buffer.from(`${ID}.42.x`), "base64")} v1,${hmac(A, Buffer.from(`${ID}.42.x`), "base64")}`)
    assert.strictEqual(signatureHeader([B, A], 42, body), `t=42,v1=${hmac(B, Buffer.from("42.x"))},v1=${hmac(A, Buffer.from("42.x"))}`)
    const headers = headersOf(request({ body, identity: { triggerId: ID, attempt: 1, signingSecrets: [B, A], timestampSeconds: T } }))
    assert.isTrue(verifiesWith(A, headers, Buffer.from(body)))
    assert.isTrue(verifiesWith(B, headers, Buffer.from(body)))
    assert.isFalse(verifiesWith(generateSigningSecret(), headers, Buffer.from(body)))
  })

  it("stored headers with the same names (any case) are dropped; without an identity they are sent as stored", () => {
    const stored: ReadonlyArray<readonly [string, string]> = [
      ["timewheel-signature", "t=1,v1=forged"], ["TIMEWHEEL-ATTEMPT", "9"], ["Timewheel-Trigger-Id", "x"], ["Timewheel-Other", "kept"],
      ["Webhook-Id", "forged"], ["WEBHOOK-TIMESTAMP", "1"], ["webhook-signature", "v1,forged"]
    ]
    const names = headersOf(request({ headers: stored })).map(([name]) => name.toLowerCase())
    assert.deepStrictEqual(names.filter((name) => name.startsWith("timewheel-") || name.startsWith("webhook-")), [
      "timewheel-other", "timewheel-trigger-id", "timewheel-attempt", "webhook-id", "webhook-timestamp", "webhook-signature",
      "timewheel-signature"
    ])
    const { identity: _, ...bare } = request({ headers: stored })
    assert.deepStrictEqual(headersOf(bare).slice(0, 7), stored.map(([n, v]) => [n, v]))
  })

  it("with a trace context: traceparent and tracestate are ours; without one a stored traceparent is sent as stored", () => {
    const stored: ReadonlyArray<readonly [string, string]> = [["TraceParent", "00-stored-01"], ["tracestate", "a=b"]]
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    const identity = { triggerId: ID, attempt: 1, signingSecrets: [A], timestampSeconds: T }
    const traced = headersOf(request({ headers: stored, identity: { ...identity, trace: { traceparent, tracestate: "tw=1" } } }))
    assert.deepStrictEqual(traced.filter(([name]) => name.toLowerCase().startsWith("trace")), [["traceparent", traceparent], ["tracestate", "tw=1"]])
    const noState = headersOf(request({ headers: stored, identity: { ...identity, trace: { traceparent, tracestate: null } } }))
    assert.deepStrictEqual(noState.filter(([name]) => name.toLowerCase().startsWith("trace")), [["traceparent", traceparent]])
    const untraced = headersOf(request({ headers: stored, identity }))
    assert.deepStrictEqual(untraced.filter(([name]) => name.toLowerCase().startsWith("trace")), stored.map(([n, v]) => [n, v]))
  })
})

describe("signing secrets", () => {
  it("whsec_ and base64 of 32 bytes (the Standard Webhooks encoding), new each time", () => {
    assert.match(A, SIGNING_SECRET_PATTERN)
    assert.strictEqual(keyOf(A).length, 32)
    assert.strictEqual(`whsec_${keyOf(A).toString("base64")}`, A)
    assert.notStrictEqual(A, B)
  })

  it("a secret of the earlier format (whsec_ + 64 hex, the whole string the key) becomes one that signs the same", () => {
    const legacy = `whsec_${crypto.randomBytes(32).toString("hex")}`
    const converted = standardFormOfLegacySecret(legacy)
    assert.match(converted, SIGNING_SECRET_PATTERN)
    // the earlier verification (docs/signatures.md "Timewheel-Signature"): HMAC keyed with the whole string
    const body = Buffer.from("payload")
    const before = crypto.createHmac("sha256", legacy).update(`${T}.`).update(body).digest("hex")
    assert.strictEqual(signatureHeader([converted], T, body), `t=${T},v1=${before}`)
    // and the standard library verifies with the converted secret
    assert.isTrue(verifiesWith(converted, headersOf(request({
      body, identity: { triggerId: ID, attempt: 1, signingSecrets: [converted], timestampSeconds: T }
    })), body))
  })
})
