// Signed deliveries end to end (DECISIONS "What a target sees beyond the stored request"): the target
// receives the trigger id, the 1-based attempt and a signature that an independent HMAC-SHA256 of
// node:crypto over "<t>.<body bytes as received>" verifies with the project's secret; two v1 entries
// during a rotation (new secret first), one after; stored headers of the same names are replaced; no
// header with the service's prefix ever arrives.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { rotateSigningSecret, showSigningSecret } from "../../src/commands/projects.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { type Arrival, headerNames, headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

/** What a target does with a delivery, written from the recipe of docs/signed-deliveries.md, not from the service's code. */
const verify = (arrival: Arrival, secret: string) => {
  const header = headerValues(arrival.rawHeaders, "timewheel-signature")
  assert.strictEqual(header.length, 1, `one Timewheel-Signature header: ${JSON.stringify(header)}`)
  const parts = header[0]!.split(",").map((part) => part.split("=") as [string, string])
  const t = parts.find(([name]) => name === "t")?.[1]
  assert.isDefined(t)
  const expected = crypto.createHmac("sha256", secret).update(`${t}.`).update(arrival.body).digest()
  return parts.some(([name, value]) =>
    name === "v1" && /^[0-9a-f]{64}$/.test(value) && crypto.timingSafeEqual(Buffer.from(value, "hex"), expected))
}

const signatureParts = (arrival: Arrival) => headerValues(arrival.rawHeaders, "timewheel-signature")[0]!.split(",")

const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const sql = yield* SqlClient.SqlClient
  const projectId = yield* projectIdOfKey(key)
  const name = (yield* sql<{ name: string }>`SELECT name FROM projects WHERE id = ${projectId}`)[0]!.name
  const schedule = (headers: Record<string, string>, body?: Uint8Array) =>
    Effect.map(
      server.call("POST", "/schedule", {
        headers: { "ttr-api-key": key, "ttr-scheduled-at": "now", ...headers },
        ...(body === undefined ? {} : { body })
      }),
      (response) => {
        assert.strictEqual(response.status, 200, response.text)
        return response.json().triggerId as string
      }
    )
  return { name, schedule }
})

const arrivalsAt = (t: { readonly at: (path: string) => ReadonlyArray<Arrival> }, path: string, count: number) =>
  pollUntil(`${count} arrivals at ${path}`, Effect.sync(() => (t.at(path).length >= count ? t.at(path) : undefined)), { deadlineMs: 20_000 })

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("signed deliveries", (it) => {
  describe("what the target receives", () => {
    it.effect("the trigger id, attempt 1 and a signature over the exact body bytes, verified with node:crypto", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        assert.match(current, /^whsec_[0-9a-f]{64}$/)
        // bytes that are not UTF-8, a NUL and a CRLF: the signature covers them as sent
        const body = new Uint8Array([0xff, 0x00, 0x0d, 0x0a, 0xc3, 0x28, 0x7b, 0x7d])
        const beforeS = Math.floor(Date.now() / 1000)
        const id = yield* p.schedule({ "ttr-url": `${t.origin}/hook`, "content-type": "application/octet-stream" }, body)
        const [arrival] = yield* arrivalsAt(t, "/hook", 1)
        const afterS = Math.ceil(Date.now() / 1000)
        assert.deepStrictEqual([...arrival!.body], [...body])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-trigger-id"), [id])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-attempt"), ["1"])
        const parts = signatureParts(arrival!)
        assert.strictEqual(parts.length, 2)
        const t0 = Number(parts[0]!.slice(2))
        assert.isTrue(parts[0]!.startsWith("t=") && t0 >= beforeS && t0 <= afterS, parts[0])
        assert.isTrue(verify(arrival!, current))
        assert.isFalse(verify(arrival!, `whsec_${"0".repeat(64)}`))
        // a target that has the body a byte off rejects it
        assert.isFalse(verify({ ...arrival!, body: Buffer.concat([arrival!.body, Buffer.from(" ")]) }, current))
        assert.deepStrictEqual(headerNames(arrival!.rawHeaders).filter((name) => name.startsWith("ttr-")), [])
      }))

    it.effect("no body: the signature is over \"<t>.\"; a stored Timewheel-* header is replaced by the service's own", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        yield* p.schedule({
          "ttr-url": `${t.origin}/empty`,
          "Timewheel-Signature": "t=1,v1=forged",
          "timewheel-attempt": "99",
          "Timewheel-Trigger-Id": "not-this"
        })
        const [arrival] = yield* arrivalsAt(t, "/empty", 1)
        assert.strictEqual(arrival!.body.length, 0)
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-attempt"), ["1"])
        assert.strictEqual(headerValues(arrival!.rawHeaders, "timewheel-trigger-id").length, 1)
        assert.notStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-trigger-id")[0], "not-this")
        assert.isTrue(verify(arrival!, current))
        const [tPart] = signatureParts(arrival!)
        const expected = crypto.createHmac("sha256", current).update(`${tPart!.slice(2)}.`).digest("hex")
        assert.include(signatureParts(arrival!), `v1=${expected}`)
      }))

    it.effect("a retry carries attempt 2, signed anew", () =>
      Effect.gen(function*() {
        const t = yield* target
        t.reply("/flaky", { status: 503 })
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        const id = yield* p.schedule(
          { "ttr-url": `${t.origin}/flaky`, "ttr-retry-strategy": "fixed", "ttr-retry-initial-delay": "0", "ttr-retry-max-attempts": "2" },
          new TextEncoder().encode("{\"n\":1}")
        )
        const arrivals = yield* arrivalsAt(t, "/flaky", 2)
        assert.deepStrictEqual(arrivals.map((a) => headerValues(a.rawHeaders, "timewheel-attempt")[0]), ["1", "2"])
        for (const arrival of arrivals) {
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "timewheel-trigger-id"), [id])
          assert.isTrue(verify(arrival, current))
        }
      }))
  })

  describe("rotation", () => {
    it.effect("during the overlap both secrets sign (new first); the old one alone no longer verifies after it", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const old = (yield* showSigningSecret(p.name)).current
        const rotated = yield* rotateSigningSecret(p.name)
        assert.notStrictEqual(rotated.secret, old)
        assert.strictEqual((yield* showSigningSecret(p.name)).current, rotated.secret)
        assert.strictEqual((yield* showSigningSecret(p.name)).previous?.secret, old)
        yield* p.schedule({ "ttr-url": `${t.origin}/overlap` }, new TextEncoder().encode("rotating"))
        const [during] = yield* arrivalsAt(t, "/overlap", 1)
        const parts = signatureParts(during!)
        assert.strictEqual(parts.length, 3)
        const sign = (secret: string) =>
          crypto.createHmac("sha256", secret).update(`${parts[0]!.slice(2)}.`).update(during!.body).digest("hex")
        assert.deepStrictEqual(parts.slice(1), [`v1=${sign(rotated.secret)}`, `v1=${sign(old)}`])
        assert.isTrue(verify(during!, old))
        assert.isTrue(verify(during!, rotated.secret))

        // a rotation without overlap (a leaked secret): the replaced one stops signing at once
        const leaked = rotated.secret
        const fresh = yield* rotateSigningSecret(p.name, 0)
        assert.isNull((yield* showSigningSecret(p.name)).previous)
        yield* p.schedule({ "ttr-url": `${t.origin}/after` })
        const [after] = yield* arrivalsAt(t, "/after", 1)
        assert.strictEqual(signatureParts(after!).length, 2)
        assert.isTrue(verify(after!, fresh.secret))
        assert.isFalse(verify(after!, leaked))
        assert.isFalse(verify(after!, old))
      }))

    it.effect("rotating an unknown project is a 404-style failure", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(rotateSigningSecret("no-such-project"))
        assert.isTrue(exit._tag === "Failure")
      }))
  })
})
