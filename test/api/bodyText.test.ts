// readBodyText (src/api/bodyText.ts): a body read as text keeps none of its chunks past their 'data'
// event (each one can be collected while the rest is still arriving: no copy of a large body in
// bytes outlives its read), decodes UTF-8 split across chunks as one decode would, and over its
// limit fails with the rest read and dropped.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { PassThrough } from "node:stream"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { readBodyText } from "../../src/api/bodyText.ts"

v8.setFlagsFromString("--expose-gc")
const collectGarbage = vm.runInNewContext("gc") as () => void

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

const MiB = 1024 * 1024

describe("readBodyText", () => {
  it("drops each chunk once it is decoded: the chunks read so far are collected before the body ends", async () => {
    const source = new PassThrough()
    const collected = new Set<number>()
    const registry = new FinalizationRegistry<number>((index) => collected.add(index))
    const read = Effect.runPromiseExit(readBodyText(source, undefined))
    const chunks = 16
    // one writer function per chunk, so no variable of this test keeps a chunk alive
    const writeChunk = (index: number) => {
      const chunk = Buffer.alloc(MiB, 0x61 + (index % 26))
      registry.register(chunk, index)
      source.write(chunk)
    }
    for (let index = 0; index < chunks / 2; index++) {
      writeChunk(index)
      await tick()
    }
    collectGarbage()
    await tick() // finalization callbacks run after the collection, as tasks
    await tick()
    // the PassThrough's own buffer may still hold the last chunk or two; the others were decoded and dropped
    for (let index = 0; index < chunks / 2 - 2; index++) assert.isTrue(collected.has(index), `chunk ${index} collected while the body is read`)
    for (let index = chunks / 2; index < chunks; index++) {
      writeChunk(index)
      await tick()
    }
    source.end()
    const exit = await read
    assert.isTrue(Exit.isSuccess(exit))
    const text = Exit.isSuccess(exit) ? exit.value : ""
    assert.strictEqual(text.length, chunks * MiB)
    for (let index = 0; index < chunks; index++) assert.strictEqual(text[index * MiB], String.fromCharCode(0x61 + (index % 26)))
  })

  it("decodes a character split across chunks, drops a BOM and turns invalid bytes into U+FFFD, as one decode does", async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":"é€😀"}'), Buffer.from([0xff])])
    const source = new PassThrough()
    const read = Effect.runPromise(readBodyText(source, undefined))
    for (let at = 0; at < bytes.length; at++) source.write(bytes.subarray(at, at + 1))
    source.end()
    assert.strictEqual(await read, new TextDecoder().decode(bytes))
    assert.strictEqual(await read, '{"a":"é€😀"}\uFFFD')
  })

  it("over its limit fails TooLarge and reads the rest to its end without keeping it", async () => {
    const source = new PassThrough()
    const read = Effect.runPromiseExit(readBodyText(source, 10))
    source.write("0123456789")
    source.write("x")
    source.write("more")
    source.end()
    const exit = await read
    assert.deepStrictEqual(exit, Exit.fail("TooLarge"))
    await tick()
    assert.isTrue(source.readableEnded, "the rest was read to its end")
  })

  it("a body exactly at its limit, and an empty one, are read", async () => {
    const atLimit = new PassThrough()
    const read = Effect.runPromise(readBodyText(atLimit, 4))
    atLimit.end("abcd")
    assert.strictEqual(await read, "abcd")
    const empty = new PassThrough()
    const none = Effect.runPromise(readBodyText(empty, 4))
    empty.end()
    assert.strictEqual(await none, "")
  })

  it("a stream that fails is Unreadable", async () => {
    const source = new PassThrough()
    const read = Effect.runPromiseExit(readBodyText(source, undefined))
    source.write("partial")
    source.destroy(new Error("reset"))
    assert.deepStrictEqual(await read, Exit.fail("Unreadable"))
  })
})
