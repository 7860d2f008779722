// The codec of encryption at rest (domain/sealing.ts): AES-256-GCM with a random iv per value; the
// plain text comes back with the key that sealed it; a value altered, opened for another purpose or
// relabelled with another key of the same id does not open; a stored prefix opens to the plain
// prefix; a key id the keyring lacks is an error naming it and the setting.
import { assert, describe, it } from "@effect/vitest"
import * as crypto from "node:crypto"
import {
  keyFor, openBytes, openPrefix, parseEncryptionKeys, SEAL_OVERHEAD, sealBytes, sealedPrefixBytes, SealedValueError
} from "../../src/domain/sealing.ts"

const keyring = parseEncryptionKeys(`a:${crypto.randomBytes(32).toString("base64")},b:${crypto.randomBytes(32).toString("base64")}`)
if (typeof keyring === "string") throw new Error(keyring)
const A = keyring.byId.get("a")!
const plain = Buffer.from("Authorization: Bearer secret — and some bytes \u0000\u00ff")

const throwsSealed = (f: () => unknown, message: RegExp) => {
  try {
    f()
  } catch (error) {
    assert.instanceOf(error, SealedValueError)
    assert.match((error as Error).message, message)
    return
  }
  assert.fail("expected a SealedValueError")
}

describe("sealing", () => {
  it("seals with a fresh iv (same plain text, different values) of the plain size plus the overhead, and opens", () => {
    const one = sealBytes(A, "body", plain)
    const two = sealBytes(A, "body", plain)
    assert.notDeepEqual(one, two)
    assert.strictEqual(one.length, plain.length + SEAL_OVERHEAD)
    assert.notInclude(one.toString("latin1"), "secret")
    assert.deepStrictEqual(openBytes(A, "body", one), plain)
    assert.deepStrictEqual(openBytes(A, "body", sealBytes(A, "body", new Uint8Array(0))), Buffer.alloc(0))
  })

  it("an altered value, another purpose, another key under the same id: refused", () => {
    const sealed = sealBytes(A, "headers", plain)
    const altered = Buffer.from(sealed)
    altered[20]! ^= 1
    throwsSealed(() => openBytes(A, "headers", altered), /does not open with key "a"/)
    throwsSealed(() => openBytes(A, "body", sealed), /does not open with key "a"/)
    throwsSealed(() => openBytes({ id: "a", key: keyring.byId.get("b")!.key }, "headers", sealed), /does not open/)
    throwsSealed(() => openBytes(A, "headers", sealed.subarray(0, 10)), /truncated/)
  })

  it("a stored prefix opens to the plain prefix", () => {
    const sealed = sealBytes(A, "body", plain)
    assert.deepStrictEqual(openPrefix(A, sealed.subarray(0, sealedPrefixBytes(10))), plain.subarray(0, 10))
  })

  it("the writer is the first key; a key id the keyring lacks names itself and the setting", () => {
    assert.strictEqual(keyring.writer.id, "a")
    assert.strictEqual(keyFor(keyring, "b").id, "b")
    throwsSealed(() => keyFor(keyring, "gone"), /sealed with the encryption key "gone", which ENCRYPTION_KEYS does not hold/)
    throwsSealed(() => keyFor(null, "a"), /"a", which ENCRYPTION_KEYS does not hold/)
  })
})
