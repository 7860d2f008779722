// Hostile shapes for the fuzzed JSON bodies and headers (RELIABILITY.md "Fuzzing"): deep JSON (arrays
// and objects nested up to 200,000 levels), wide JSON (objects of up to 50,000 keys, arrays of up to
// 200,000 elements), huge strings (up to 12 MB escaped, of control characters, quotes, emoji or lone
// surrogates), control characters in short strings, values of the wrong type, and many headers. Big
// shapes are rare by weight, so a long run sends some of them without spending all its time on them.
// Every string that parses as an http(s) URL to a host other than 127.0.0.1 is replaced by the safe
// target (`confine`), so that nothing a fuzzed body makes deliverable leaves the machine.
import fc from "fast-check"

/** The only target host a fuzzed request may name: the discard port on loopback (refused at once). */
export const SAFE_TARGET = "http://127.0.0.1:9"

/** A string the service would send a request (a delivery, an alert) to, outside loopback. */
const leavesTheMachine = (text: string): boolean => {
  try {
    const url = new URL(text)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "127.0.0.1"
  } catch {
    return false
  }
}

/** `value` with every string naming an outside http(s) URL replaced by the safe target. */
export const confine = (value: unknown): unknown => {
  if (typeof value === "string") return leavesTheMachine(value) ? `${SAFE_TARGET}/` : value
  if (Array.isArray(value)) return value.map(confine)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, confine(inner)]))
  }
  return value
}

/** JSON text of a value, confined; `undefined` (fast-check's) as `null`. */
export const jsonText = (value: unknown): string => JSON.stringify(confine(value)) ?? "null"

/** Short strings full of what escaping and storage care about: NUL and other controls, quotes, surrogates. */
export const controlString = fc.string({
  unit: fc.constantFrom("\u0000", "\u0001", "\u001f", "\b", "\t", "\n", "\r", "\"", "\\", "\u007f", "\u2028", "\ud800", "\udfff", "😀", "é", "a"),
  maxLength: 40
})

/** A value of any JSON type, for a field that expects another. */
export const wrongType = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.constant(-0), fc.constant(1e308),
  controlString, fc.constant([]), fc.constant({}), fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 })
)

/** JSON text nested `depth` levels: `[[[…]]]` or `{"a":{"a":…}}`, sometimes with a value inside. */
export const deepJson = fc.record({
  depth: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 2_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 2_000, max: 200_000 }) }),
  objects: fc.boolean(),
  inner: fc.constantFrom("", "1", "\"x\"", "null")
}).map(({ depth, objects, inner }) =>
  objects ? `${"{\"a\":".repeat(depth)}${inner === "" ? "{}" : inner}${"}".repeat(depth)}` : `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`)

/** An object of many keys, or an array of many elements (JSON text). */
export const wideJson = fc.record({
  size: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 100, max: 5_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 5_000, max: 200_000 }) }),
  element: fc.constantFrom("0", "null", "\"x\"", "{}", "[]", "{\"url\":\"http://127.0.0.1:9/\"}"),
  object: fc.boolean()
}).map(({ size, element, object }) => {
  const count = object ? Math.min(size, 50_000) : size
  const parts = Array.from({ length: count }, (_, i) => (object ? `"k${i}":${element}` : element))
  return object ? `{${parts.join(",")}}` : `[${parts.join(",")}]`
})

/** A huge JSON string literal of one character repeated, 1 KB to 12 MB once escaped (under the 16 MiB bodies). */
export const hugeString = fc.record({
  size: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1_000, max: 200_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 200_000, max: 12_000_000 }) }),
  unit: fc.constantFrom("a", "\u0001", "\"", "\\", "😀", "\ud800", "é", "\u0000")
}).map(({ size, unit }) => JSON.stringify(unit.repeat(Math.max(1, Math.floor(size / JSON.stringify(unit).length)))))

/** Any of the big or broken shapes, as JSON text (or not quite JSON). */
export const hostileJson = fc.oneof(
  { weight: 3, arbitrary: deepJson },
  { weight: 3, arbitrary: wideJson },
  { weight: 2, arbitrary: hugeString },
  { weight: 2, arbitrary: wrongType.map(jsonText) },
  { weight: 1, arbitrary: fc.constantFrom("", "{", "[", "{\"a\":1}x", "\u0000", "nul", "{\"__proto__\":{\"x\":1}}", "{\"constructor\":{\"prototype\":{}}}", "1e400", "-", "\"\\ud800\"") }
)

/**
 * A body for an endpoint whose sensible bodies `plausible` makes: mostly those (confined), now and
 * then a hostile shape, or a plausible body with a hostile shape spliced in as a field's value.
 */
export const shapedBody = (plausible: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 10, arbitrary: plausible.map(jsonText) },
    { weight: 2, arbitrary: hostileJson },
    {
      weight: 2,
      arbitrary: fc.tuple(plausible, fc.constantFrom("items", "upserts", "cancels", "body", "headers", "tag", "throughput", "retry", "params", "arguments", "webhookUrl", "emailRecipients", "x"), hostileJson)
        .map(([body, field, inner]) => {
          const text = jsonText({ ...body, [field]: "\u0000SPLICE\u0000" })
          return text.replace(JSON.stringify("\u0000SPLICE\u0000"), inner)
        })
    }
  )

const TOKEN = "abcdefghijklmnopqrstuvwxyz0123456789-"
/** Names no request frames itself with. */
const FRAMING = new Set(["host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "expect", "te", "trailer", "proxy-connection", "content-type", "cookie", "origin", "authorization"])

/** Extra headers: none mostly, else up to 1,500 small ones (past Node's limits: 431). */
export const manyHeaders: fc.Arbitrary<ReadonlyArray<readonly [string, string]>> = fc.oneof(
  { weight: 8, arbitrary: fc.constant([]) },
  {
    weight: 2,
    arbitrary: fc.record({
      count: fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 60, max: 1_500 })),
      name: fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 12 }),
      value: fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 30 })
    }).filter(({ name }) => !FRAMING.has(name) && !name.startsWith("ttr-") && !name.startsWith("mcp-"))
      .map(({ count, name, value }) => Array.from({ length: count }, (_, i) => [`${name}${i}`, value.trim()] as const))
  }
)
