// A shard actor's mailbox: the wake-ups for its shard (cluster/wakeups.ts) in a plain array, and a
// listener (the actor's alarm, lib/alarm.ts) told of each offer, so the actor's wait for "its next
// deadline or a wake-up" is one plain timer rather than a queue taker raced against a sleep.

import type { ShardMessage } from "../cluster/wakeups.ts"

export class ShardMailbox {
  #items: Array<ShardMessage> = []
  #listener: (() => void) | undefined

  get size(): number {
    return this.#items.length
  }

  /** Adds wake-ups and tells the listener. */
  offer(items: ReadonlyArray<ShardMessage>): void {
    if (items.length === 0) return
    for (const item of items) this.#items.push(item)
    this.#listener?.()
  }

  /** Removes and returns up to `max` wake-ups, oldest first. */
  take(max: number): Array<ShardMessage> {
    if (this.#items.length <= max) {
      const items = this.#items
      this.#items = []
      return items
    }
    return this.#items.splice(0, max)
  }

  /** Who is told of each offer (one listener: the actor running the shard). */
  listen(listener: (() => void) | undefined): void {
    this.#listener = listener
  }
}
