// The lowest execution id of a trigger (domain/executionDays.ts executionIdFloor): the start of the
// UTC day it was made on, less the clocks' margin; no bound for an id that is not a UUIDv7.
import { assert, describe, it } from "@effect/vitest"
import { EXECUTION_FLOOR_MARGIN_MS, executionIdFloor, uuidFloor } from "../../src/domain/executionDays.ts"
import { uuidv7 } from "../../src/domain/ids.ts"

describe("executionIdFloor", () => {
  it("is the start of the UTC day the trigger was made on", () => {
    assert.strictEqual(executionIdFloor(uuidv7(Date.UTC(2031, 2, 10, 15, 30))), uuidFloor(Date.UTC(2031, 2, 10)))
    assert.strictEqual(executionIdFloor(uuidv7(Date.UTC(2031, 2, 10, 23, 59, 59, 999))), uuidFloor(Date.UTC(2031, 2, 10)))
  })

  it("is the day before for a trigger made within the margin after midnight (another node's clock may be behind)", () => {
    assert.strictEqual(executionIdFloor(uuidv7(Date.UTC(2031, 2, 10))), uuidFloor(Date.UTC(2031, 2, 9)))
    assert.strictEqual(executionIdFloor(uuidv7(Date.UTC(2031, 2, 10) + EXECUTION_FLOOR_MARGIN_MS - 1)), uuidFloor(Date.UTC(2031, 2, 9)))
    assert.strictEqual(executionIdFloor(uuidv7(Date.UTC(2031, 2, 10) + EXECUTION_FLOOR_MARGIN_MS)), uuidFloor(Date.UTC(2031, 2, 10)))
  })

  it("is no bound for an id that is not a UUIDv7, or one made before the margin of the epoch", () => {
    assert.strictEqual(executionIdFloor("6ba7b810-9dad-41d1-80b4-00c04fd430c8"), uuidFloor(0))
    assert.strictEqual(executionIdFloor(uuidv7(5)), uuidFloor(0))
  })
})
