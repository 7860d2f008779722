// What the `Timewheel-Warning` of a list read says of query parameters it does not take (the answer
// itself is as without them: a client may send a cache-buster): each one named, with the parameter
// it most likely meant (`isDeadLetter` → `deadLetter` on GET /jobs, `deadLetterOnly` on GET
// /executions: the same words without case, `is` in front or `only` behind), else the list of those
// the endpoint takes. Pure; docs/reading.md lists the parameters.

/** A parameter's name as compared: letters and digits, lower case, without a leading `is` or a trailing `only`. */
const stem = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "").replace(/^is(?=[a-z])/, "").replace(/only$/, "")

/** The warning for the parameters of `given` that `known` lacks; undefined when there is none. */
export const unknownParametersWarning = (endpoint: string, given: ReadonlyArray<string>, known: ReadonlyArray<string>): string | undefined => {
  const unknown = [...new Set(given)].filter((name) => !known.includes(name))
  if (unknown.length === 0) return undefined
  const parts = unknown.map((name) => {
    const meant = known.find((candidate) => stem(candidate) === stem(name))
    return meant === undefined ? name : `${name} (did you mean ${meant}?)`
  })
  return `${endpoint} ignored the unknown query parameter${unknown.length === 1 ? "" : "s"} ${parts.join(", ")}; it takes ${known.join(", ")}`
}
