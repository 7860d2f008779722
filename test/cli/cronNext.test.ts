// `cron next '<value>' [--from <ISO>] [--count N]` as a pure function: output lines, defaults,
// the 400 messages for bad values, and one-line usage errors.
import { describe, expect, it } from "vitest"
import { cronNext, parseIsoInstant } from "../../src/cli/cronNext.ts"

const NOW = Date.parse("2025-06-15T10:20:30.400Z")
const USAGE = "usage: cron next '<value>' [--from <ISO instant>] [--count N]"

describe("cron next", () => {
  it("prints the next 5 fire times after now by default, one ISO instant per line", () => {
    expect(cronNext(["cron(0 9 * * MON-FRI, America/New_York)"], NOW)).toEqual({
      exitCode: 0,
      stdout: [
        "2025-06-16T13:00:00.000Z",
        "2025-06-17T13:00:00.000Z",
        "2025-06-18T13:00:00.000Z",
        "2025-06-19T13:00:00.000Z",
        "2025-06-20T13:00:00.000Z",
        ""
      ].join("\n")
    })
  })

  it("takes --from and --count, in either order and in --flag=value form", () => {
    const expected = { exitCode: 0, stdout: "2025-01-31T00:00:00.000Z\n2025-02-28T00:00:00.000Z\n" }
    expect(cronNext(["cron(0 0 L * *)", "--from", "2025-01-01T00:00:00Z", "--count", "2"], NOW)).toEqual(expected)
    expect(cronNext(["--count", "2", "--from", "2025-01-01T00:00:00Z", "cron(0 0 L * *)"], NOW)).toEqual(expected)
    expect(cronNext(["cron(0 0 L * *)", "--from=2025-01-01", "--count=2"], NOW)).toEqual(expected)
  })

  it("counts strictly after --from, and reads an offset in --from", () => {
    expect(cronNext(["cron(@daily)", "--from", "2025-01-01T00:00:00.000Z", "--count", "1"], NOW)).toEqual({
      exitCode: 0,
      stdout: "2025-01-02T00:00:00.000Z\n"
    })
    expect(cronNext(["cron(@hourly)", "--from", "2025-01-01T00:30:00+02:00", "--count", "1"], NOW)).toEqual({
      exitCode: 0,
      stdout: "2024-12-31T23:00:00.000Z\n"
    })
  })

  it("shows clock changes as they will happen", () => {
    expect(cronNext(["cron(0 */15 2 * * *, America/New_York)", "--from", "2025-03-08T12:00:00Z", "--count", "3"], NOW)).toEqual({
      exitCode: 0,
      stdout: "2025-03-09T07:00:00.000Z\n2025-03-10T06:00:00.000Z\n2025-03-10T06:15:00.000Z\n"
    })
  })

  it("prints the 400 message of a bad value on stderr, exit 1", () => {
    expect(cronNext(["cron(61 * * * *)"], NOW)).toEqual({ exitCode: 1, stderr: "Invalid cron expression: minute value 61 out of range 0-59" })
    expect(cronNext(["cron(0 0 * * *, Foo/Bar)"], NOW)).toEqual({ exitCode: 1, stderr: 'Invalid cron expression: unknown time zone "Foo/Bar"' })
    expect(cronNext(["0 0 * * *"], NOW)).toEqual({ exitCode: 1, stderr: "Invalid date: 0 0 * * *" })
    expect(cronNext(["Cron(0 0 * * *)"], NOW)).toEqual({ exitCode: 1, stderr: "Invalid date: Cron(0 0 * * *)" })
  })

  it("answers a one-line usage error for missing or bad arguments", () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [[], "missing cron value"],
      [["--count", "2"], "missing cron value"],
      [["cron(@daily)", "--from"], "--from needs a value"],
      [["cron(@daily)", "--from", "yesterday"], '--from "yesterday" is not an ISO 8601 instant (e.g. 2025-01-01T00:00:00Z)'],
      [["cron(@daily)", "--from", "2025-02-30T00:00:00Z"], '--from "2025-02-30T00:00:00Z" is not an ISO 8601 instant (e.g. 2025-01-01T00:00:00Z)'],
      [["cron(@daily)", "--count", "0"], '--count "0" must be a whole number from 1 to 1000'],
      [["cron(@daily)", "--count", "1.5"], '--count "1.5" must be a whole number from 1 to 1000'],
      [["cron(@daily)", "--count", "1001"], '--count "1001" must be a whole number from 1 to 1000'],
      [["cron(@daily)", "--every", "2"], "unknown option --every"],
      [["cron(@daily)", "cron(@hourly)"], 'unexpected argument "cron(@hourly)"']
    ]
    for (const [args, problem] of cases) {
      const result = cronNext(args, NOW)
      expect(result).toEqual({ exitCode: 1, stderr: `${problem}; ${USAGE}` })
      if (result.exitCode === 1) expect(result.stderr).not.toContain("\n")
    }
  })
})

describe("ISO instants for --from", () => {
  it.each([
    ["2025-01-01", "2025-01-01T00:00:00.000Z"],
    ["2025-01-01T10:20", "2025-01-01T10:20:00.000Z"],
    ["2025-01-01T10:20:30", "2025-01-01T10:20:30.000Z"],
    ["2025-01-01T10:20:30.123456Z", "2025-01-01T10:20:30.123Z"],
    ["2025-01-01T10:20:30-0500", "2025-01-01T15:20:30.000Z"],
    ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"]
  ])("%s is %s", (text, iso) => {
    expect(new Date(parseIsoInstant(text)!).toISOString()).toBe(iso)
  })

  it.each(["", "2025-13-01", "2023-02-29", "2025-01-01T24:00:00Z", "2025-01-01T10:60", "1735689600000", "2025-01-01T00:00:00+25:00"])(
    "%j is refused",
    (text) => {
      expect(parseIsoInstant(text)).toBeNull()
    }
  )
})
