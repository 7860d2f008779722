// The sender pool: never more than maxInFlight sends at once, rows sent in the order they came,
// every outcome reported with its row (once, even from a send that answers at once or twice), a
// crashing send or outcome handler reported without stopping the pool or losing its sender, and
// nothing started after close.
import { assert, describe, it } from "@effect/vitest"
import { makeSenderPool } from "../../src/delivery/senderPool.ts"
import type { DeliveryRow } from "../../src/domain/trigger.ts"

const row = (id: string) => ({ id }) as unknown as DeliveryRow

/** A send that finishes only when the test says so. */
const controlledSends = () => {
  const started: Array<string> = []
  const finish = new Map<string, (outcome: string) => void>()
  const send = (r: DeliveryRow, done: (outcome: string) => void) => {
    started.push(r.id)
    if (r.id.startsWith("crash")) throw new Error(`boom ${r.id}`)
    finish.set(r.id, done)
  }
  return { started, finish, send }
}

const unexpected = (error: unknown) => assert.fail(`unexpected crash: ${String(error)}`)

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe("makeSenderPool", () => {
  it("runs at most maxInFlight sends, starts the next as one finishes, in order, and reports each outcome", async () => {
    const { started, finish, send } = controlledSends()
    const outcomes: Array<[string, string]> = []
    const pool = makeSenderPool({ maxInFlight: 2, send, onOutcome: (r, o) => outcomes.push([r.id, o]), onCrash: unexpected })
    pool.push(["a", "b", "c"].map(row))
    pool.push(["d", "e"].map(row))
    assert.deepStrictEqual(started, ["a", "b"])
    finish.get("b")!("ok b")
    await tick()
    assert.deepStrictEqual(started, ["a", "b", "c"])
    for (const id of ["a", "c", "d", "e"]) {
      finish.get(id)?.(`ok ${id}`)
      await tick()
    }
    assert.deepStrictEqual(started, ["a", "b", "c", "d", "e"])
    assert.deepStrictEqual(outcomes, [["b", "ok b"], ["a", "ok a"], ["c", "ok c"], ["d", "ok d"], ["e", "ok e"]])
  })

  it("reports a crashing send and goes on with the next rows", async () => {
    const { started, finish, send } = controlledSends()
    const crashes: Array<string> = []
    const pool = makeSenderPool({ maxInFlight: 1, send, onOutcome: () => {}, onCrash: (e) => crashes.push(String(e)) })
    pool.push(["crash-1", "x"].map(row))
    await tick()
    assert.deepStrictEqual(crashes, ["Error: boom crash-1"])
    assert.deepStrictEqual(started, ["crash-1", "x"])
    finish.get("x")!("ok")
  })

  it("starts nothing after close", async () => {
    const { started, finish, send } = controlledSends()
    const pool = makeSenderPool({ maxInFlight: 1, send, onOutcome: () => {}, onCrash: unexpected })
    pool.push(["a", "b"].map(row))
    pool.close()
    finish.get("a")!("ok")
    await tick()
    pool.push([row("c")])
    assert.deepStrictEqual(started, ["a"])
  })

  it("drains 5,000 rows through 3 senders, in order", async () => {
    const sent: Array<string> = []
    let done = 0
    const pool = makeSenderPool({
      maxInFlight: 3,
      send: (r: DeliveryRow, done: (outcome: string) => void) => {
        sent.push(r.id)
        void tick().then(() => done(r.id))
      },
      onOutcome: () => void done++,
      onCrash: unexpected
    })
    const ids = Array.from({ length: 5_000 }, (_, i) => `r${i}`)
    pool.push(ids.map(row))
    while (done < ids.length) await tick()
    assert.deepStrictEqual(sent, ids)
  })

  it("a send answering at once (or twice) frees its sender once; a throwing outcome handler is reported and the pool goes on", () => {
    const sent: Array<string> = []
    const outcomes: Array<string> = []
    const crashes: Array<string> = []
    const pool = makeSenderPool({
      maxInFlight: 2,
      send: (r: DeliveryRow, done: (outcome: string) => void) => {
        sent.push(r.id)
        done(`ok ${r.id}`)
        done(`again ${r.id}`)
      },
      onOutcome: (r, o) => {
        outcomes.push(o)
        if (r.id === "b") throw new Error("handler bug")
      },
      onCrash: (e) => crashes.push(String(e))
    })
    pool.push(["a", "b", "c", "d"].map(row))
    assert.deepStrictEqual(sent, ["a", "b", "c", "d"])
    assert.deepStrictEqual(outcomes, ["ok a", "ok b", "ok c", "ok d"])
    assert.deepStrictEqual(crashes, ["Error: handler bug"])
    assert.strictEqual(pool.inFlight(), 0)
    assert.strictEqual(pool.size(), 0)
  })
  it("whenBelow: each waiter resolves once the rows waiting (here and besides) are fewer than its limit, not before", async () => {
    const { finish, send } = controlledSends()
    let besides = 1
    const pool = makeSenderPool({ maxInFlight: 1, send, onOutcome: () => {}, onCrash: unexpected, besides: () => besides })
    pool.push(["a", "b", "c", "d", "e"].map(row)) // a in flight, 4 waiting + 1 besides = 5
    const resolved: Array<number> = []
    for (const limit of [5, 3, 2]) void pool.whenBelow(limit).then(() => resolved.push(limit))
    await pool.whenBelow(6) // already below: at once
    await tick()
    assert.deepStrictEqual(resolved, [])
    finish.get("a")!("ok") // 3 waiting + 1
    await tick()
    assert.deepStrictEqual(resolved, [5])
    finish.get("b")!("ok") // 2 + 1: not below 3
    await tick()
    assert.deepStrictEqual(resolved, [5])
    besides = 0
    pool.recheck() // 2 + 0
    await tick()
    assert.deepStrictEqual(resolved, [5, 3])
    finish.get("c")!("ok") // 1 + 0
    await tick()
    assert.deepStrictEqual(resolved, [5, 3, 2])
    const later = pool.whenBelow(1).then(() => resolved.push(1))
    finish.get("d")!("ok") // 0 waiting
    await later
    assert.deepStrictEqual(resolved, [5, 3, 2, 1])
  })
})
