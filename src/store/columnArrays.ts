// Rows sent as arrays of columns: one typed array parameter per column, which the driver writes in
// PostgreSQL's binary format and a statement reads back as rows with `unnest(…)`. A batch of a
// thousand rows is then one statement without a JSON document to build, send and parse: uuids,
// integers and instants travel as their binary values, bytes as they are, and only the jsonb columns
// are JSON text (BENCHMARKS.md, "Batch: `/bulk` and `/declare`").
import * as PgTypes from "@effect/sql-pg/PgTypes"
import * as Result from "effect/Result"

/** A one-dimensional array parameter of `elementOid` (elements may be null). */
const typedArray = (values: ReadonlyArray<unknown>, elementOid: number): PgTypes.Parameter =>
  Result.getOrThrow(PgTypes.array(values, elementOid))

/** `uuid[]` of the ids' text. */
export const uuidArray = (values: ReadonlyArray<string>) => typedArray(values, PgTypes.OID.uuid)
/** `int4[]`. */
export const int4Array = (values: ReadonlyArray<number>) => typedArray(values, PgTypes.OID.int4)
/** `text[]`. */
export const textArray = (values: ReadonlyArray<string | null>) => typedArray(values, PgTypes.OID.text)
/** `timestamptz[]` of epoch milliseconds. */
export const timestamptzArray = (values: ReadonlyArray<number | null>) => typedArray(values, PgTypes.OID.timestamptz)
/** `bytea[]`. */
export const byteaArray = (values: ReadonlyArray<Uint8Array | null>) => typedArray(values, PgTypes.OID.bytea)
/** `jsonb[]` of JSON values (each element serialised with JSON.stringify; null is SQL NULL). */
export const jsonbArray = (values: ReadonlyArray<unknown>) => typedArray(values, PgTypes.OID.jsonb)

const EMPTY_TEXT_ARRAY = "{}"

/**
 * A text[] value as PostgreSQL's array literal (`{"a","b"}`), for a column of arrays sent as one
 * `text[]` element per row and cast with `::text[]` (the driver sends one-dimensional arrays only).
 * Every element is quoted, `"` and `\` escaped, so any text reads back unchanged.
 */
export const textArrayLiteral = (values: ReadonlyArray<string>): string => {
  if (values.length === 0) return EMPTY_TEXT_ARRAY
  let literal = "{"
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!
    literal += `${i === 0 ? "" : ","}"${/["\\]/.test(value) ? value.replace(/["\\]/g, "\\$&") : value}"`
  }
  return literal + "}"
}
