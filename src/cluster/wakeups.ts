// Wake-ups: after a commit that creates, moves or cancels a trigger, its shard's actor learns of it
// at once — straight into the local actor's mailbox when this process owns the shard, else through a
// notification to the owner (scheduler/wakeRouter.ts provides the live implementation). The same
// way, a tag gate's actor (the owner of the gate's shard) is kicked when the gate may admit more:
// triggers came to wait at it, one in flight finished, or its policy changed. Commands and delivery
// raise wake-ups; the scheduler consumes them.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface WakeItem {
  readonly shard: number
  readonly id: string
  /** When the trigger is due next; null when it no longer is (cancelled, moved to skipped). */
  readonly dueAtMs: number | null
}

/** A tag of a project whose policy may gate its triggers. */
export interface GateRef {
  readonly projectId: string
  readonly tag: string
}

/** "Look at this gate now", for the actor of the gate's shard (domain/gates/gate.ts gateShardOf). */
export interface GateKick {
  readonly shard: number
  readonly gate: GateRef
}

export type ShardMessage = WakeItem | GateKick

export const isGateKick = (message: ShardMessage): message is GateKick => "gate" in message

export class Wakeups extends Context.Service<Wakeups, {
  readonly wake: (items: ReadonlyArray<ShardMessage>) => Effect.Effect<void>
  /** The shard manager attaches the mailbox of each shard actor it runs, and detaches it on stop. */
  readonly attach: (shard: number, deliver: (items: ReadonlyArray<ShardMessage>) => Effect.Effect<void>) => Effect.Effect<void>
  readonly detach: (shard: number) => Effect.Effect<void>
}>()("timewheel/Wakeups") {
  /** For processes and tests without a scheduler: wake-ups go nowhere (the loader still finds rows). */
  static readonly none = Layer.succeed(Wakeups)({ wake: () => Effect.void, attach: () => Effect.void, detach: () => Effect.void })
}

/**
 * Notification payload, one line per message (payloads are limited to 8000 bytes; callers chunk):
 * `shard id dueAtMs|-` for a trigger, `shard gate projectId tag` for a gate (gated tags have policies,
 * whose tags are `a-z 0-9 _ -` only).
 */
export const encodeWake = (items: ReadonlyArray<ShardMessage>): string =>
  items.map((item) =>
    isGateKick(item) ? `${item.shard} gate ${item.gate.projectId} ${item.gate.tag}` : `${item.shard} ${item.id} ${item.dueAtMs ?? "-"}`
  ).join("\n")

export const decodeWake = (payload: string): ReadonlyArray<ShardMessage> =>
  payload.split("\n").flatMap((line): Array<ShardMessage> => {
    const [shard, second, third, fourth] = line.split(" ")
    if (shard === undefined || second === undefined || third === undefined) return []
    if (second === "gate") return fourth === undefined ? [] : [{ shard: Number(shard), gate: { projectId: third, tag: fourth } }]
    return [{ shard: Number(shard), id: second, dueAtMs: third === "-" ? null : Number(third) }]
  })
