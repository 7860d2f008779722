// A request body read as text, decoded as it arrives: each chunk becomes text in its 'data' event
// and is dropped, so a large JSON body (/declare and /bulk take 16 MiB) leaves no copy of itself in
// bytes behind. The HTTP layer's own reader keeps every chunk until the end, joins them into one
// more buffer and keeps that on the request: memory outside the JavaScript heap, alive long enough
// to be promoted, so it waited for a full collection, which an idle service may put off for good
// (after eight 15 MiB bodies, 70–140 MB of such dead buffers were still there). The text lives in
// the heap, where its size drives the collector like any other allocation.
import * as Effect from "effect/Effect"
import type { Readable } from "node:stream"
import { finished } from "node:stream"

/** Why a body was not read: over `maxBytes` (read to its end, not kept), or the stream failed. */
export type BodyTextFailure = "TooLarge" | "Unreadable"

/**
 * The whole body as UTF-8 text (invalid bytes become U+FFFD and a BOM is dropped, as TextDecoder
 * does); over `maxBytes` (undefined: no limit) the rest is read and discarded, and it fails.
 */
export const readBodyText = (source: Readable, maxBytes: number | undefined): Effect.Effect<string, BodyTextFailure> =>
  Effect.callback<string, BodyTextFailure>((resume) => {
    const decoder = new TextDecoder()
    let parts: Array<string> = []
    let bytes = 0
    let settled = false
    const settle = (effect: Effect.Effect<string, BodyTextFailure>) => {
      if (settled) return
      settled = true
      source.off("data", onData)
      resume(effect)
    }
    function onData(chunk: Buffer | string) {
      bytes += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length
      if (maxBytes !== undefined && bytes > maxBytes) {
        parts = []
        settle(Effect.fail("TooLarge"))
        source.resume() // read to its end and dropped: the connection can be kept
        return
      }
      const text = typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })
      if (text !== "") parts.push(text)
    }
    const stopWatching = finished(source, { readable: true, writable: false }, (error) => {
      stopWatching()
      if (error) return settle(Effect.fail("Unreadable"))
      parts.push(decoder.decode())
      const text = parts.join("")
      parts = []
      settle(Effect.succeed(text))
    })
    source.on("data", onData)
    return Effect.sync(() => {
      settled = true
      source.off("data", onData)
      stopWatching()
      source.resume()
    })
  })
