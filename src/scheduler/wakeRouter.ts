// The live Wakeups: items for shards whose actor runs in this process go straight to its mailbox;
// the rest are sent as notifications (payloads chunked under PostgreSQL's 8000-byte limit) to the
// process that owns them, whose shard manager listens and routes them back here.
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { encodeWake, type ShardMessage, Wakeups } from "../cluster/wakeups.ts"
import { Notifications, WAKE_CHANNEL } from "../store/notifications.ts"

const MAX_PAYLOAD = 7000

const chunks = (items: ReadonlyArray<ShardMessage>): Array<string> => {
  const out: Array<string> = []
  let current: Array<ShardMessage> = []
  let size = 0
  for (const item of items) {
    const line = encodeWake([item]).length + 1
    if (size + line > MAX_PAYLOAD && current.length > 0) {
      out.push(encodeWake(current))
      current = []
      size = 0
    }
    current.push(item)
    size += line
  }
  if (current.length > 0) out.push(encodeWake(current))
  return out
}

export const WakeRouterLive = Layer.effect(Wakeups, Effect.gen(function*() {
  const notifications = yield* Notifications
  const local = new Map<number, (items: ReadonlyArray<ShardMessage>) => Effect.Effect<void>>()
  return Wakeups.of({
    attach: (shard, deliver) => Effect.sync(() => void local.set(shard, deliver)),
    detach: (shard) => Effect.sync(() => void local.delete(shard)),
    wake: (items) =>
      Effect.gen(function*() {
        if (items.length === 0) return
        const byShard = new Map<number, Array<ShardMessage>>()
        const remote: Array<ShardMessage> = []
        for (const item of items) {
          if (local.has(item.shard)) {
            const list = byShard.get(item.shard) ?? []
            list.push(item)
            byShard.set(item.shard, list)
          } else remote.push(item)
        }
        for (const [shard, list] of byShard) yield* local.get(shard)!(list)
        for (const payload of chunks(remote)) {
          yield* notifications.send(WAKE_CHANNEL, payload).pipe(
            Effect.catchCause((cause) => Effect.logWarning("sending a wake-up failed; the loader will find the trigger", cause))
          )
        }
      })
  })
}))
