// One cron field's text -> the values it allows. Handles `*`, `?`, lists, upward ranges, steps,
// three-letter names, `H` (hashed), day-of-month `L`/`nL`, day-of-week `nL` and `n#k`.
// Every rejection throws a CronSyntaxError whose message names the field and the offending value.

export class CronSyntaxError extends Error {}

const fail = (details: string): never => {
  throw new CronSyntaxError(details)
}

export type FieldKey = "second" | "minute" | "hour" | "dayOfMonth" | "month" | "dayOfWeek"

export interface FieldSpec {
  readonly key: FieldKey
  /** Name used in messages. */
  readonly label: string
  readonly min: number
  readonly max: number
  /** Three-letter names, the first one standing for `nameBase`. */
  readonly names: ReadonlyArray<string>
  readonly nameBase: number
  /** What `H` may pick when no range is given (day of month stops at 28 so every month has it). */
  readonly hashMin: number
  readonly hashMax: number
  /** How the values are described in "not valid" messages. */
  readonly accepts: string
}

const MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
const DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

const spec = (
  key: FieldKey,
  label: string,
  min: number,
  max: number,
  extra: Partial<Pick<FieldSpec, "names" | "nameBase" | "hashMax" | "accepts">> = {}
): FieldSpec => ({
  key,
  label,
  min,
  max,
  names: extra.names ?? [],
  nameBase: extra.nameBase ?? min,
  hashMin: min,
  hashMax: extra.hashMax ?? max,
  accepts: extra.accepts ?? `${min}-${max}`
})

export const FIELD_SPECS: Readonly<Record<FieldKey, FieldSpec>> = {
  second: spec("second", "second", 0, 59),
  minute: spec("minute", "minute", 0, 59),
  hour: spec("hour", "hour", 0, 23),
  dayOfMonth: spec("dayOfMonth", "day-of-month", 1, 31, { hashMax: 28, accepts: "1-31, L or nL" }),
  month: spec("month", "month", 1, 12, { names: MONTH_NAMES, nameBase: 1, accepts: "1-12 or JAN-DEC" }),
  dayOfWeek: spec("dayOfWeek", "day-of-week", 0, 7, {
    names: DAY_NAMES,
    nameBase: 0,
    hashMax: 6,
    accepts: "0-7 or SUN-SAT"
  })
}

/** What a field allows once parsed. Day-of-week values keep 7 (callers fold it onto 0). */
export interface FieldValues {
  /** Exactly `*` or `?`: the field does not restrict (matters for the day-of-month/day-of-week OR rule). */
  readonly unrestricted: boolean
  /** Sorted distinct plain values allowed. */
  readonly values: ReadonlyArray<number>
  /** Values written as single numbers or names (not from a range or step). */
  readonly singles: ReadonlyArray<number>
  /** Day of month: `L` (or `nL`, which means the same). */
  readonly last: boolean
  /** Day of week: weekdays (0-6) written as `nL`, last such weekday of the month. */
  readonly lastWeekdays: ReadonlyArray<number>
  /** Day of week: `n#k`, the k-th weekday n (0-6) of the month. */
  readonly nth: { readonly weekday: number; readonly occurrence: number } | null
  /** For `H` forms: every value set the hash could pick, whatever the seed (checks must not depend on it). */
  readonly hashedChoices: ReadonlyArray<ReadonlyArray<number>> | null
}

const DIGITS = /^\d+$/

const describe = (field: FieldSpec, text: string): string => `${field.label} field "${text}"`

/** A single number or name -> its value, range-checked. */
const parseValue = (field: FieldSpec, token: string): number => {
  if (DIGITS.test(token)) {
    const value = Number(token)
    if (value < field.min || value > field.max) {
      return fail(`${field.label} value ${token} out of range ${field.min}-${field.max}`)
    }
    return value
  }
  if (/^[A-Za-z]+$/.test(token) && field.names.length > 0) {
    const upper = token.toUpperCase()
    const index = field.names.indexOf(upper)
    if (index >= 0) return field.nameBase + index
    if (field.names.some((name) => upper.startsWith(name))) {
      return fail(`${field.label} value "${token}" is not valid: use three-letter names (${field.names[0]}, ${field.names[1]}, ...)`)
    }
  }
  if (token === "") return fail(`${field.label} field has an empty value`)
  return fail(`${field.label} value "${token}" is not valid (use ${field.accepts})`)
}

const parseStep = (field: FieldSpec, element: string, stepText: string): number => {
  if (!DIGITS.test(stepText)) return fail(`${field.label} step "${stepText}" in "${element}" is not a whole number`)
  const step = Number(stepText)
  if (step === 0) return fail(`${field.label} step 0 in "${element}" is not allowed (use 1 or more)`)
  return step
}

const rangeValues = (from: number, to: number, step: number): Array<number> => {
  const values: Array<number> = []
  for (let v = from; v <= to; v += step) values.push(v)
  return values
}

interface ElementValues {
  readonly values: ReadonlyArray<number>
  readonly single: boolean
  readonly last?: boolean
  readonly lastWeekday?: number
}

/** One list element: `*`, `*\/n`, `a`, `a-b`, `a-b/n`, `a/n`, plus `L` forms where the field allows them. */
const parseElement = (field: FieldSpec, element: string, fieldText: string): ElementValues => {
  if (element === "") return fail(`${describe(field, fieldText)} has an empty list element`)
  if (element === "?") return fail(`${describe(field, fieldText)}: "?" must be the whole field`)
  if (element.startsWith("H")) return fail(`${describe(field, fieldText)}: H must be the whole field`)
  if (element.includes("#")) {
    return fail(field.key === "dayOfWeek"
      ? `day-of-week "${fieldText}": n#k cannot be combined with a list, range or step`
      : `${describe(field, fieldText)}: # is only allowed in the day-of-week field`)
  }
  if (/W/i.test(element) && field.key === "dayOfMonth") {
    return fail(`day-of-month value "${element}" is not supported: W (nearest weekday) forms are rejected`)
  }
  if (field.key === "dayOfWeek" && /^[A-Za-z][\w+-]*\/[A-Za-z]/.test(element)) {
    return fail(`day-of-week value "${element}" is not valid (a time zone goes after a comma)`)
  }
  if (element.includes("L") && (field.key === "dayOfMonth" || field.key === "dayOfWeek")) {
    return parseLastElement(field, element)
  }

  const slash = element.split("/")
  if (slash.length > 2) return fail(`${describe(field, fieldText)}: "${element}" has more than one "/"`)
  const [base, stepText] = slash
  const step = stepText === undefined ? null : parseStep(field, element, stepText)
  if (base === "*") return { values: rangeValues(field.min, field.max, step ?? 1), single: false }
  const dash = base.split("-")
  if (dash.length > 2) return fail(`${describe(field, fieldText)}: "${element}" is not a valid range`)
  const from = parseValue(field, dash[0])
  if (dash.length === 2) {
    const to = parseValue(field, dash[1])
    if (to < from) return fail(`${field.label} range ${base} must go upward (write the smaller value first)`)
    return { values: rangeValues(from, to, step ?? 1), single: false }
  }
  if (step !== null) return { values: rangeValues(from, field.max, step), single: false }
  return { values: [from], single: true }
}

/** `L`, `nL` (day of month: both mean the last day) and `nL` (day of week: last weekday n). */
const parseLastElement = (field: FieldSpec, element: string): ElementValues => {
  if (field.key === "dayOfMonth") {
    if (element === "L") return { values: [], single: false, last: true }
    const match = /^(\d+)L$/.exec(element)
    if (match !== null) {
      parseValue(field, match[1])
      return { values: [], single: false, last: true }
    }
    if (element.startsWith("L-")) {
      return fail(`day-of-month value "${element}" is not supported: L-n forms are rejected (use L for the last day)`)
    }
    return fail(`day-of-month value "${element}" is not valid (use L for the last day of the month)`)
  }
  if (element === "L") {
    return fail(`day-of-week value "L" is not supported: use nL for the last weekday n of the month (e.g. 5L)`)
  }
  const match = /^(\d+|[A-Za-z]{3})L$/.exec(element)
  if (match !== null) return { values: [], single: false, lastWeekday: parseValue(field, match[1]) % 7 }
  return fail(`day-of-week value "${element}" is not valid (nL must be a single weekday followed by L, e.g. 5L)`)
}

/** `n#k` as the whole day-of-week field. */
const parseNth = (field: FieldSpec, text: string): FieldValues => {
  if (/[,/-]/.test(text)) return fail(`day-of-week "${text}": n#k cannot be combined with a list, range or step`)
  const match = /^(\d+|[A-Za-z]{3})#(\d+)$/.exec(text)
  if (match === null) return fail(`day-of-week value "${text}" is not valid (use n#k, e.g. 1#2 for the second Monday)`)
  const weekday = parseValue(field, match[1]) % 7
  const occurrence = Number(match[2])
  if (occurrence < 1 || occurrence > 5) {
    return fail(`day-of-week "${text}": occurrence ${match[2]} out of range 1-5`)
  }
  return { ...restricted([], []), nth: { weekday, occurrence } }
}

const restricted = (values: ReadonlyArray<number>, singles: ReadonlyArray<number>): FieldValues => ({
  unrestricted: false,
  values,
  singles,
  last: false,
  lastWeekdays: [],
  nth: null,
  hashedChoices: null
})

/** `H`, `H/n`, `H(a-b)`, `H(a-b)/n` as the whole field: a stable value picked from `hash`. */
const parseHashed = (field: FieldSpec, text: string, hash: number): FieldValues => {
  const match = /^H(?:\((\d+)-(\d+)\))?(?:\/(\d+))?$/.exec(text)
  if (match === null) return fail(`${field.label} value "${text}" is not valid (use H, H/n, H(a-b) or H(a-b)/n)`)
  let low = field.hashMin
  let high = field.hashMax
  if (match[1] !== undefined) {
    low = parseValue(field, match[1])
    high = parseValue(field, match[2])
    if (high < low) return fail(`${field.label} range ${match[1]}-${match[2]} in "${text}" must go upward`)
  }
  if (match[3] === undefined) {
    const choices = rangeValues(low, high, 1).map((v) => [v])
    return { ...restricted([low + (hash % (high - low + 1))], []), hashedChoices: choices }
  }
  const step = parseStep(field, text, match[3])
  if (step > high - low + 1) return fail(`${field.label} step ${step} in "${text}" is larger than its range ${low}-${high}`)
  const choices = rangeValues(0, step - 1, 1).map((offset) => rangeValues(low + offset, high, step))
  return { ...restricted(rangeValues(low + (hash % step), high, step), []), hashedChoices: choices }
}

/** Parses one field. `hash` is the stable pseudo-random number used by `H`. */
export const parseField = (field: FieldSpec, text: string, hash: number): FieldValues => {
  if (text === "*" || text === "?") {
    return { ...restricted(rangeValues(field.min, field.max, 1), []), unrestricted: true }
  }
  if (text.startsWith("H")) return parseHashed(field, text, hash)
  if (text.includes("#") && field.key === "dayOfWeek") return parseNth(field, text)

  const elements = text.split(",")
  const seen = new Set<number>()
  const singles: Array<number> = []
  const lastWeekdays: Array<number> = []
  let last = false
  for (const element of elements) {
    const parsed = parseElement(field, element, text)
    if (parsed.last === true) {
      if (last) return fail(`${describe(field, text)} repeats L`)
      last = true
    }
    if (parsed.lastWeekday !== undefined) {
      if (lastWeekdays.includes(parsed.lastWeekday)) return fail(`${describe(field, text)} repeats "${element}"`)
      lastWeekdays.push(parsed.lastWeekday)
    }
    const folded = new Set<number>()
    for (const value of parsed.values) {
      const key = field.key === "dayOfWeek" ? value % 7 : value
      if (seen.has(key) && !folded.has(key)) {
        const sunday = field.key === "dayOfWeek" && key === 0 ? " (0 and 7 are both Sunday)" : ""
        return fail(`${field.label} list "${text}" repeats value ${value}${sunday}`)
      }
      seen.add(key)
      folded.add(key)
    }
    if (parsed.single) singles.push(parsed.values[0])
  }
  const values = [...seen].sort((a, b) => a - b)
  return { ...restricted(values, singles), last, lastWeekdays }
}
