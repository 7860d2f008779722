// Signed deliveries end to end (docs/signatures.md): the target
// verifies what it receives with the `standardwebhooks` package, as docs/signatures.md tells it to,
// with the project's secret as `project secret show` prints it: a body of raw bytes, no body, a
// retry (webhook-id stable across attempts), a rotation (both secrets sign, new first; the old one
// alone after a rotation without overlap). A body that is not UTF-8, which that package cannot
// verify, verifies with the raw-bytes check the page gives (run as the page prints it).
// Timewheel-Signature, kept for earlier targets, verifies with an independent HMAC of node:crypto.
// No header with the service's prefix ever arrives.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { Webhook } from "standardwebhooks"
import { rotateSigningSecret, showSigningSecret } from "../../src/commands/projects.ts"
import { makeTempDir } from "../support/database.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { type Arrival, arrivalsAt, headerNames, headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

/** What a target does with a delivery (docs/signatures.md): the library, the raw body, the headers as received. */
const verifies = (arrival: Arrival, secret: string) => {
  const headers: Record<string, string> = {}
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const values = headerValues(arrival.rawHeaders, name)
    assert.strictEqual(values.length, 1, `one ${name} header: ${JSON.stringify(values)}`)
    headers[name] = values[0]!
  }
  try {
    new Webhook(secret).verify(arrival.body, headers, { jsonParse: false })
    return true
  } catch {
    return false
  }
}

/** Timewheel-Signature checked by hand: HMAC-SHA256 keyed with the secret's key bytes over "<t>.<body>". */
const verifiesTimewheelSignature = (arrival: Arrival, secret: string) => {
  const [header] = headerValues(arrival.rawHeaders, "timewheel-signature")
  const parts = header!.split(",").map((part) => part.split("=") as [string, string])
  const t = parts.find(([name]) => name === "t")![1]
  const key = Buffer.from(secret.slice("whsec_".length), "base64")
  const expected = crypto.createHmac("sha256", key).update(`${t}.`).update(arrival.body).digest("hex")
  return parts.some(([name, value]) => name === "v1" && value === expected)
}

type VerifyBytes = (headers: Record<string, string>, body: Buffer, secret: string) => boolean

/** The raw-bytes check of docs/signatures.md, taken from the page as a reader copies it. */
const documentedVerifyBytes = Effect.promise(async (): Promise<VerifyBytes> => {
  const page = fs.readFileSync(path.join(import.meta.dirname, "../../docs/signatures.md"), "utf8")
  const block = /```js\n(import \{ createHmac[\s\S]*?export function verifyBytes[\s\S]*?)\n```/.exec(page)
  assert.isNotNull(block, "docs/signatures.md shows verifyBytes in a js block")
  const file = path.join(makeTempDir("signatures"), "verifyBytes.mjs")
  fs.writeFileSync(file, block![1]!)
  return ((await import(pathToFileURL(file).href)) as { verifyBytes: VerifyBytes }).verifyBytes
})

/** The webhook-* headers as a Node target reads them (lowercase names). */
const webhookHeaders = (arrival: Arrival) =>
  Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => [name, headerValues(arrival.rawHeaders, name)[0]!]))

const signatures = (arrival: Arrival) => headerValues(arrival.rawHeaders, "webhook-signature")[0]!.split(" ")

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

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("signed deliveries", (it) => {
  describe("what the target receives", () => {
    it.effect("a body of raw bytes: the trigger id as webhook-id, the time it left, a signature standardwebhooks verifies", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        assert.match(current, /^whsec_[A-Za-z0-9+/]{43}=$/)
        // every byte value but those that are not UTF-8 (the library decodes the payload as UTF-8): NUL, CRLF, multi-byte
        const body = new Uint8Array([0x00, 0x0d, 0x0a, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x7b, 0x7d, 0x7f])
        const beforeS = Math.floor(Date.now() / 1000)
        const id = yield* p.schedule({ "ttr-url": `${t.origin}/hook`, "content-type": "application/octet-stream" }, body)
        const [arrival] = yield* arrivalsAt(t, "/hook", 1)
        const afterS = Math.ceil(Date.now() / 1000)
        assert.deepStrictEqual([...arrival!.body], [...body])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "webhook-id"), [id])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-trigger-id"), [id])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-attempt"), ["1"])
        const sentAt = Number(headerValues(arrival!.rawHeaders, "webhook-timestamp")[0])
        assert.isTrue(sentAt >= beforeS && sentAt <= afterS, String(sentAt))
        assert.strictEqual(signatures(arrival!).length, 1)
        assert.isTrue(verifies(arrival!, current))
        assert.isTrue(verifiesTimewheelSignature(arrival!, current))
        assert.isFalse(verifies(arrival!, `whsec_${crypto.randomBytes(32).toString("base64")}`))
        // a target that has the body a byte off rejects it
        assert.isFalse(verifies({ ...arrival!, body: Buffer.concat([arrival!.body, Buffer.from(" ")]) }, current))
        assert.deepStrictEqual(headerNames(arrival!.rawHeaders).filter((name) => name.startsWith("ttr-")), [])
      }))

    it.effect("bytes that are not UTF-8 are signed as sent: an HMAC over the raw bytes verifies (standardwebhooks 1.1.1 decodes them, so it cannot)", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        const body = new Uint8Array([0xff, 0x00, 0xc3, 0x28, 0x80])
        const id = yield* p.schedule({ "ttr-url": `${t.origin}/binary` }, body)
        const [arrival] = yield* arrivalsAt(t, "/binary", 1)
        assert.deepStrictEqual([...arrival!.body], [...body])
        const at = headerValues(arrival!.rawHeaders, "webhook-timestamp")[0]!
        const key = Buffer.from(current.slice("whsec_".length), "base64")
        const expected = crypto.createHmac("sha256", key).update(`${id}.${at}.`).update(arrival!.body).digest("base64")
        assert.deepStrictEqual(signatures(arrival!), [`v1,${expected}`])
        assert.isFalse(verifies(arrival!, current), "if this passes, the library now takes bytes: say so in docs/signatures.md")
        // the check the page gives instead
        const verifyBytes = yield* documentedVerifyBytes
        assert.isTrue(verifyBytes(webhookHeaders(arrival!), arrival!.body, current))
        assert.isFalse(verifyBytes(webhookHeaders(arrival!), Buffer.from([0xff, 0x00, 0xc3, 0x28, 0x81]), current), "another body")
        assert.isFalse(verifyBytes(webhookHeaders(arrival!), arrival!.body, `whsec_${crypto.randomBytes(32).toString("base64")}`), "another secret")
      }))

    it.effect("no body: verified over \"<id>.<t>.\"; stored webhook-* and Timewheel-* headers are replaced by the service's own", () =>
      Effect.gen(function*() {
        const t = yield* target
        const p = yield* project
        const { current } = yield* showSigningSecret(p.name)
        const id = yield* p.schedule({
          "ttr-url": `${t.origin}/empty`,
          "webhook-signature": "v1,forged",
          "Webhook-Id": "not-this",
          "Timewheel-Signature": "t=1,v1=forged",
          "timewheel-attempt": "99"
        })
        const [arrival] = yield* arrivalsAt(t, "/empty", 1)
        assert.strictEqual(arrival!.body.length, 0)
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "webhook-id"), [id])
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "timewheel-attempt"), ["1"])
        assert.isTrue(verifies(arrival!, current))
        assert.isTrue(verifiesTimewheelSignature(arrival!, current))
      }))

    it.effect("a retry carries attempt 2 and the same webhook-id, signed anew", () =>
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
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "webhook-id"), [id])
          assert.isTrue(verifies(arrival, current))
        }
      }))
  })

  describe("rotation", () => {
    it.effect("during the overlap both secrets sign (new first); after a rotation without overlap the replaced one no longer verifies", () =>
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
        assert.strictEqual(signatures(during!).length, 2)
        assert.isTrue(verifies(during!, old))
        assert.isTrue(verifies(during!, rotated.secret))
        // the new secret's signature first: a target with only the new secret matches the first
        const onlyFirst = { ...during!, rawHeaders: during!.rawHeaders.map((v, i, all) =>
          i % 2 === 1 && all[i - 1]!.toLowerCase() === "webhook-signature" ? v.split(" ")[0]! : v) }
        assert.isTrue(verifies(onlyFirst, rotated.secret))
        assert.isFalse(verifies(onlyFirst, old))
        assert.isTrue(verifiesTimewheelSignature(during!, old) && verifiesTimewheelSignature(during!, rotated.secret))

        // a rotation without overlap (a leaked secret): the replaced one stops signing at once
        const leaked = rotated.secret
        const fresh = yield* rotateSigningSecret(p.name, 0)
        assert.isNull((yield* showSigningSecret(p.name)).previous)
        yield* p.schedule({ "ttr-url": `${t.origin}/after` })
        const [after] = yield* arrivalsAt(t, "/after", 1)
        assert.strictEqual(signatures(after!).length, 1)
        assert.isTrue(verifies(after!, fresh.secret))
        assert.isFalse(verifies(after!, leaked))
        assert.isFalse(verifies(after!, old))
      }))

    it.effect("rotating an unknown project is a 404-style failure", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(rotateSigningSecret("no-such-project"))
        assert.isTrue(exit._tag === "Failure")
      }))
  })
})
