// The lowest execution id of a trigger, in SQL (domain/executionDays.ts executionIdFloor computes the
// same from a known id): a read of a trigger's executions bounded by `e.id >= floor` lets the planner
// skip the day partitions before the trigger was made (docs/operations.md "How history is stored"),
// at plan time for a constant, at run time for a trigger joined row by row (`t.id`). Plain integer
// arithmetic on the id's first 48 bits, no time zone involved.
import { DAY_MS, EXECUTION_FLOOR_MARGIN_MS } from "../domain/executionDays.ts"

/** The floor of the executions of the trigger whose id is the SQL expression `triggerId` (e.g. `t.id`). */
export const executionFloorSql = (triggerId: string): string =>
  `(CASE WHEN substr(${triggerId}::text, 15, 1) = '7' THEN (lpad(to_hex(greatest(0::bigint, `
  + `('x' || left(replace(${triggerId}::text, '-', ''), 12))::bit(48)::bigint - ${EXECUTION_FLOOR_MARGIN_MS}) `
  + `/ ${DAY_MS} * ${DAY_MS}), 12, '0') || '00000000000000000000')::uuid `
  + `ELSE '00000000-0000-0000-0000-000000000000'::uuid END)`
