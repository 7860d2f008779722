// Pieces of the JSON records `jsonb_to_recordset` reads: fields written out as text (the plain
// creates' records, store/triggers.ts newOneShotsJson: 1.9 against 2.1 us a row for objects and
// JSON.stringify, and 15 % shorter), a field whose value is null left out (jsonb_to_recordset reads
// a missing field as NULL); and the ISO text of a column's instants, remembered, as a batch's rows
// often share their request moment.
import { Buffer } from "node:buffer"

/** `,"name":value` of a JSON value; nothing for null. */
export const jsonField = (name: string, value: unknown): string => (value === null ? "" : `,"${name}":${JSON.stringify(value)}`)

/** `,"name":"<base64>"` of bytes (a view of a larger buffer included); nothing for null. */
export const base64Field = (name: string, bytes: Uint8Array | null): string =>
  bytes === null ? "" : `,"${name}":"${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}"`

/**
 * An ISO timestamp, the last one remembered: for a column whose rows often share their instant (a
 * batch's request moments). One per column: two columns taking turns would never hit.
 */
export const makeIsoOf = (): ((ms: number) => string) => {
  let lastMs = Number.NaN
  let lastIso = ""
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms
      lastIso = new Date(ms).toISOString()
    }
    return lastIso
  }
}
