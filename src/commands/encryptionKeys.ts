// `keys rotate-encryption` (docs/encryption.md): seals every stored trigger, and the headers every
// bulk replay added (store/sealedReplays.ts), with the writer key of ENCRYPTION_KEYS (the first
// one): those sealed with an older key, and those stored plain before encryption was turned on. Chunk by chunk, each a short transaction that skips
// rows a claim or a write holds at that moment, so delivery never waits for it; passes repeat (at
// most MAX_PASSES) until one finds nothing skipped. Afterwards the older keys can leave ENCRYPTION_KEYS.
import * as Effect from "effect/Effect"
import type { Keyring } from "../domain/sealing.ts"
import { bulkActionsResealReplays, replayOverridesResealChunk } from "../store/sealedReplays.ts"
import { refuseMissingKeys, triggersResealChunk } from "../store/sealedRequests.ts"

const CHUNK = 500
const MAX_PASSES = 10
/** Between passes: the rows a claim or a write held are free again by then. */
const PASS_PAUSE_MS = 200

export interface Resealed {
  readonly writerId: string
  /** Triggers re-sealed. */
  readonly resealed: number
  /** Bulk replays' headers re-sealed (with their actions and with the triggers they queued). */
  readonly replays: number
  /** Rows still held by others after the last pass (run the command again). */
  readonly skipped: boolean
}

interface ChunkDone {
  readonly lastId: string | null
  readonly resealed: number
  readonly skipped: boolean
}

/** One pass of a table, chunk by chunk: how many rows it re-sealed, and whether some were busy. */
const pass = <E, R>(chunk: (afterId: string | null) => Effect.Effect<ChunkDone, E, R>) =>
  Effect.gen(function*() {
    let resealed = 0
    let skipped = false
    let afterId: string | null = null
    do {
      const done: ChunkDone = yield* chunk(afterId)
      resealed += done.resealed
      skipped ||= done.skipped
      afterId = done.lastId
    } while (afterId !== null)
    return { resealed, skipped }
  })

export const resealStoredTriggers = (keyring: Keyring, chunk = CHUNK) =>
  Effect.gen(function*() {
    yield* refuseMissingKeys(keyring)
    let resealed = 0
    let replays = 0
    let skipped = true
    for (let round = 0; round < MAX_PASSES && skipped; round++) {
      if (round > 0) yield* Effect.sleep(PASS_PAUSE_MS)
      const triggers = yield* pass((afterId) => triggersResealChunk({ keyring, afterId, limit: chunk }))
      const overrides = yield* pass((afterId) => replayOverridesResealChunk({ keyring, afterId, limit: chunk }))
      const actions = yield* bulkActionsResealReplays(keyring)
      resealed += triggers.resealed
      replays += overrides.resealed + actions.resealed
      skipped = triggers.skipped || overrides.skipped || actions.skipped
    }
    return { writerId: keyring.writer.id, resealed, replays, skipped } satisfies Resealed
  })
