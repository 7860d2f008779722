// The field decoders the policy bodies share (tag policies, target policies): a JSON value of the
// right type or the reason it is not, for the `Timewheel-Error` hint of the empty 400 (docs/errors.md).
// Ranges are validation's, not these. Pure.
import { windowLabelMs } from "./gates/throughput.ts"
import type { Throughput } from "./gates/throughput.ts"

export type FieldResult<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly reason: string }
export type FieldDecoder<A> = (value: unknown) => FieldResult<A>

export const valid = <A>(value: A): FieldResult<A> => ({ ok: true, value })
export const wrong = (reason: string): FieldResult<never> => ({ ok: false, reason })

/** Largest integer a field accepts as an integer: the range of a PostgreSQL `integer` column. */
const MAX_INT32 = 2_147_483_647
const MIN_INT32 = -2_147_483_648

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A whole JSON number a PostgreSQL `integer` holds. Negative values pass: ranges are validation's. */
const isInteger32 = (value: unknown): value is number =>
  Number.isInteger(value) && (value as number) >= MIN_INT32 && (value as number) <= MAX_INT32

export const nullable = <A>(decode: FieldDecoder<A>): FieldDecoder<A | null> => (value) =>
  value === null ? valid(null) : decode(value)

/** An integer field; `-0` (valid JSON) is stored as 0. */
export const integer = (field: string): FieldDecoder<number> => (value) =>
  isInteger32(value) ? valid(value + 0) : wrong(`${field} must be an integer`)

export const oneOf = <A extends string>(field: string, values: ReadonlyArray<A>): FieldDecoder<A> => (value) =>
  (values as ReadonlyArray<unknown>).includes(value) ? valid(value as A) : wrong(`${field} must be one of ${values.join(", ")}`)

/**
 * Throughput: an object of well-formed window labels to JSON numbers, or null (unset). `{}` has no
 * window and is decoded as null. The rate's range (finite, ≥ 0) is validation's; JSON's `1e400`
 * arrives as Infinity, still a number.
 */
export const decodeThroughput: FieldDecoder<Throughput | null> = (value) => {
  if (value === null) return valid(null)
  if (!isPlainObject(value)) return wrong("throughput must be an object")
  const throughput: Record<string, number> = {}
  for (const [label, rate] of Object.entries(value)) {
    if (windowLabelMs(label) === undefined) return wrong(`throughput window "${label}": a whole number followed by s, m, h or d`)
    if (typeof rate !== "number") return wrong(`throughput rate for '${label}' must be a number`)
    throughput[label] = rate
  }
  return valid(Object.keys(throughput).length === 0 ? null : throughput)
}
