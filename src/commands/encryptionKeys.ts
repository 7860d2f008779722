// `keys rotate-encryption` (DECISIONS "Tracing and encryption at rest"): seals every stored trigger
// with the writer key of ENCRYPTION_KEYS (the first one): those sealed with an older key, and those
// stored plain before encryption was turned on. Chunk by chunk, each a short transaction that skips
// rows a claim or a write holds at that moment, so delivery never waits for it; passes repeat (at
// most MAX_PASSES) until one finds nothing skipped. Afterwards the older keys can leave ENCRYPTION_KEYS.
import * as Effect from "effect/Effect"
import type { Keyring } from "../domain/sealing.ts"
import { refuseMissingKeys, triggersResealChunk } from "../store/sealedRequests.ts"

const CHUNK = 500
const MAX_PASSES = 10
/** Between passes: the rows a claim or a write held are free again by then. */
const PASS_PAUSE_MS = 200

export interface Resealed {
  readonly writerId: string
  readonly resealed: number
  /** Rows still held by others after the last pass (run the command again). */
  readonly skipped: boolean
}

export const resealStoredTriggers = (keyring: Keyring, chunk = CHUNK) =>
  Effect.gen(function*() {
    yield* refuseMissingKeys(keyring)
    let resealed = 0
    let skipped = true
    for (let pass = 0; pass < MAX_PASSES && skipped; pass++) {
      if (pass > 0) yield* Effect.sleep(PASS_PAUSE_MS)
      skipped = false
      let afterId: string | null = null
      do {
        const done: { lastId: string | null; resealed: number; skipped: boolean } = yield* triggersResealChunk({ keyring, afterId, limit: chunk })
        resealed += done.resealed
        skipped ||= done.skipped
        afterId = done.lastId
      } while (afterId !== null)
    }
    return { writerId: keyring.writer.id, resealed, skipped } satisfies Resealed
  })
