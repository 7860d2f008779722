// A shard actor's mailbox (scheduler/shardMailbox.ts): wake-ups are taken oldest first, at most as
// many as asked, and every offer of at least one tells the listener (the actor's alarm).
import { describe, expect, it } from "vitest"
import type { ShardMessage } from "../../src/cluster/wakeups.ts"
import { ShardMailbox } from "../../src/scheduler/shardMailbox.ts"

const wake = (id: string): ShardMessage => ({ shard: 1, id, dueAtMs: 1_000 })

describe("ShardMailbox", () => {
  it("keeps wake-ups in order, takes at most as many as asked, and tells its listener of each offer", () => {
    const mailbox = new ShardMailbox()
    let told = 0
    mailbox.offer([wake("early")])
    mailbox.listen(() => told++)
    mailbox.offer([wake("a"), wake("b")])
    mailbox.offer([])
    mailbox.offer([wake("c")])
    expect(told).toBe(2)
    expect(mailbox.size).toBe(4)
    expect(mailbox.take(2).map((item) => "id" in item && item.id)).toEqual(["early", "a"])
    expect(mailbox.take(10).map((item) => "id" in item && item.id)).toEqual(["b", "c"])
    expect(mailbox.size).toBe(0)
    mailbox.listen(undefined)
    mailbox.offer([wake("d")])
    expect(told).toBe(2)
  })
})
