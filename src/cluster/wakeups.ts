// Wake-ups: after a commit that creates, moves or cancels a trigger, its shard's actor learns of it
// at once — straight into the local actor's mailbox when this process owns the shard, else through a
// notification to the owner (scheduler/wakeRouter.ts provides the live implementation). Commands and
// delivery raise wake-ups; the scheduler consumes them.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface WakeItem {
  readonly shard: number
  readonly id: string
  /** When the trigger is due next; null when it no longer is (cancelled, moved to skipped). */
  readonly dueAtMs: number | null
}

export class Wakeups extends Context.Service<Wakeups, {
  readonly wake: (items: ReadonlyArray<WakeItem>) => Effect.Effect<void>
  /** The shard manager attaches the mailbox of each shard actor it runs, and detaches it on stop. */
  readonly attach: (shard: number, deliver: (items: ReadonlyArray<WakeItem>) => Effect.Effect<void>) => Effect.Effect<void>
  readonly detach: (shard: number) => Effect.Effect<void>
}>()("timewheel/Wakeups") {
  /** For processes and tests without a scheduler: wake-ups go nowhere (the loader still finds rows). */
  static readonly none = Layer.succeed(Wakeups)({ wake: () => Effect.void, attach: () => Effect.void, detach: () => Effect.void })
}

/** Notification payload: `shard id dueAtMs|-` lines (payloads are limited to 8000 bytes; callers chunk). */
export const encodeWake = (items: ReadonlyArray<WakeItem>): string =>
  items.map((item) => `${item.shard} ${item.id} ${item.dueAtMs ?? "-"}`).join("\n")

export const decodeWake = (payload: string): ReadonlyArray<WakeItem> =>
  payload.split("\n").flatMap((line) => {
    const [shard, id, due] = line.split(" ")
    if (shard === undefined || id === undefined || due === undefined) return []
    return [{ shard: Number(shard), id, dueAtMs: due === "-" ? null : Number(due) }]
  })
