// The day partitions of the executions table (docs/operations.md "How history is stored"): one
// partition per UTC day of the attempts' ids (a UUIDv7 begins with its millisecond time, so the
// lowest id of a day is that day's start in 48 bits followed by zeros), named after the day; the
// table that held every execution before partitioning is the partition of all ids before its bound,
// named after that bound. What exists is read back from the names; which days to make ahead and
// which partitions retention drops are decided here. Pure.

export const DAY_MS = 24 * 60 * 60 * 1000

/** Days made ahead of today by housekeeping (today and the next three). */
export const DAYS_AHEAD = 3

const DAY_PARTITION = /^executions_(\d{4})(\d{2})(\d{2})$/
const UNTIL_PARTITION = /^executions_until_(\d{4})(\d{2})(\d{2})$/

/** The start (00:00 UTC) of the day holding `ms`. */
export const dayStartMs = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS

/** The lowest UUID of the millisecond `ms` (any UUIDv7 made at `ms` or later sorts at or after it). */
export const uuidFloor = (ms: number): string => {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`
}

/**
 * How far before its trigger's id an execution's id may be and still be read with it: the nodes'
 * clocks differ a little (a trigger made on one node, sent at once by another whose clock is behind).
 */
export const EXECUTION_FLOOR_MARGIN_MS = 60 * 60 * 1000

/** Version 7 in a UUID's text (the 15th character). */
const isV7 = (id: string) => id.charAt(14) === "7"

/**
 * The lowest id an execution of the trigger `triggerId` can have: the start of the UTC day holding
 * its creation time (the first 48 bits of its UUIDv7) less EXECUTION_FLOOR_MARGIN_MS, so a read of
 * its executions bounded by it reaches only the partitions of that day and later. The nil UUID (no
 * bound) for an id that is not a UUIDv7. store/executionFloor.ts computes the same in SQL.
 */
export const executionIdFloor = (triggerId: string): string => {
  if (!isV7(triggerId)) return uuidFloor(0)
  const ms = Number.parseInt(triggerId.slice(0, 8) + triggerId.slice(9, 13), 16)
  return uuidFloor(dayStartMs(Math.max(0, ms - EXECUTION_FLOOR_MARGIN_MS)))
}

const yyyymmdd = (dayMs: number) => new Date(dayMs).toISOString().slice(0, 10).replaceAll("-", "")

/** The partition of the day starting at `dayMs`. */
export const dayPartitionName = (dayMs: number): string => `executions_${yyyymmdd(dayMs)}`

/** The partition of every id before the day starting at `dayMs` (the table from before partitioning). */
export const untilPartitionName = (dayMs: number): string => `executions_until_${yyyymmdd(dayMs)}`

/** A partition of ids in [fromMs, toMs) (fromMs -Infinity: no lower bound). */
export interface PartitionRange {
  readonly name: string
  readonly fromMs: number
  readonly toMs: number
}

const dateOf = (m: RegExpExecArray) => Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))

/** The range of a partition named by this module; undefined for any other (the default partition). */
export const partitionRange = (name: string): PartitionRange | undefined => {
  const day = DAY_PARTITION.exec(name)
  if (day !== null) return { name, fromMs: dateOf(day), toMs: dateOf(day) + DAY_MS }
  const until = UNTIL_PARTITION.exec(name)
  if (until !== null) return { name, fromMs: -Infinity, toMs: dateOf(until) }
  return undefined
}

/**
 * The days (their starts) from today to DAYS_AHEAD days ahead that no existing partition covers,
 * oldest first.
 */
export const daysToMake = (nowMs: number, existing: ReadonlyArray<PartitionRange>): ReadonlyArray<number> => {
  const today = dayStartMs(nowMs)
  const days: Array<number> = []
  for (let i = 0; i <= DAYS_AHEAD; i++) {
    const day = today + i * DAY_MS
    if (!existing.some((p) => p.fromMs < day + DAY_MS && day < p.toMs)) days.push(day)
  }
  return days
}

/** The partitions whose every id is older than `beforeMs` (the retention cutoff), oldest first. */
export const partitionsToDrop = (beforeMs: number, existing: ReadonlyArray<PartitionRange>): ReadonlyArray<PartitionRange> =>
  [...existing.filter((p) => p.toMs <= beforeMs)].sort((a, b) => a.toMs - b.toMs)
