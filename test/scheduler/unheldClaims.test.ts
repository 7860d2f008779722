// The two-pass rule of a node's unheld claims (scheduler/unheldClaims.ts): a claim is sent again only
// when the node held it at none of two passes in a row.
import { describe, expect, it } from "vitest"
import { makeUnheldWatch } from "../../src/scheduler/unheldClaims.ts"

describe("unheld claims: two passes in a row", () => {
  it.each([
    ["first seen unheld: not yet", [["a"]], []],
    ["unheld at two passes in a row: lost", [["a"], ["a"]], ["a"]],
    ["unheld, then held (its answer came), then unheld: not yet", [["a"], [], ["a"]], []],
    ["lost once is not lost again at the next pass (it was sent again)", [["a"], ["a"], ["a"]], []],
    ["only those unheld at both", [["a", "b"], ["b", "c"]], ["b"]],
    ["nothing unheld", [[], []], []]
  ] as const)("%s", (_, passes, lastLost) => {
    const watch = makeUnheldWatch()
    let lost: Array<string> = []
    for (const unheld of passes) lost = watch(unheld)
    expect(lost).toEqual(lastLost)
  })
})
