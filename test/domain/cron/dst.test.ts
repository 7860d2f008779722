// Clock changes (docs/cron.md "Time zones and clock changes"): specific-hour fields follow the wall
// clock (first skipped time runs one gap later, a repeated hour runs once in its first pass);
// every-hour fields follow elapsed time (nothing in a skipped hour, both passes).
//
// 2025 transitions used below (local wall clock):
//   America/New_York    Mar 9  02:00 EST -> 03:00 EDT (07:00Z)   Nov 2  02:00 EDT -> 01:00 EST (06:00Z)
//   Europe/Paris        Mar 30 02:00 CET -> 03:00 CEST (01:00Z)  Oct 26 03:00 CEST -> 02:00 CET (01:00Z)
//   Australia/Sydney    Oct 5  02:00 AEST -> 03:00 AEDT (Oct 4 16:00Z)   Apr 6 03:00 AEDT -> 02:00 AEST (Apr 5 16:00Z)
//   Australia/Lord_Howe Oct 5  02:00 -> 02:30 (+10:30 -> +11, Oct 4 15:30Z)  Apr 6 02:00 -> 01:30 (Apr 5 15:00Z)
//   America/Santiago    Sep 7  00:00 -> 01:00 (-04 -> -03, 04:00Z): the gap is at midnight
import { describe, expect, it } from "vitest"
import { fires } from "../../support/cron.ts"

type Row = readonly [value: string, from: string, expected: ReadonlyArray<string>, note: string]

const check = (rows: ReadonlyArray<Row>) =>
  it.each(rows.map(([value, from, expected, note]) => [`${value} from ${from}: ${note}`, value, from, expected] as const))(
    "%s",
    (_title, value, from, expected) => {
      expect(fires(value, from, expected.length)).toEqual(expected)
    }
  )

describe("America/New_York", () => {
  describe("spring forward, specific hour: wall clock", () => {
    check([
      ["cron(0 30 2 * * *, America/New_York)", "2025-03-08T12:00:00Z", ["2025-03-09T07:30:00.000Z", "2025-03-10T06:30:00.000Z", "2025-03-11T06:30:00.000Z"], "02:30 skipped -> 03:30 EDT"],
      ["cron(0 */15 2 * * *, America/New_York)", "2025-03-08T12:00:00Z", ["2025-03-09T07:00:00.000Z", "2025-03-10T06:00:00.000Z", "2025-03-10T06:15:00.000Z"], "02:00 -> 03:00, 02:15/02:30/02:45 do not run"],
      ["cron(0 0,30 2,3 * * *, America/New_York)", "2025-03-09T06:00:00Z", ["2025-03-09T07:00:00.000Z", "2025-03-09T07:30:00.000Z", "2025-03-10T06:00:00.000Z"], "shifted 02:00 and real 03:00 run once"],
      ["cron(0 30 2 * * *, America/New_York)", "2025-03-09T07:15:00Z", ["2025-03-09T07:30:00.000Z", "2025-03-10T06:30:00.000Z"], "docs/cron.md: created at 03:15 EDT -> 03:30 EDT"],
      ["cron(0 30 2 * * *, America/New_York)", "2025-03-09T07:30:00Z", ["2025-03-10T06:30:00.000Z"], "after the shifted run: next day"],
      ["cron(0 */15 2 * * *, America/New_York)", "2025-03-09T07:05:00Z", ["2025-03-10T06:00:00.000Z"], "later skipped times never run"]
    ])
  })
  describe("fall back, specific hour: once, first pass", () => {
    check([
      ["cron(0 30 1 * * *, America/New_York)", "2025-11-01T12:00:00Z", ["2025-11-02T05:30:00.000Z", "2025-11-03T06:30:00.000Z"], "01:30 EDT, not 01:30 EST"],
      ["cron(0 30 1 * * *, America/New_York)", "2025-11-02T06:10:00Z", ["2025-11-03T06:30:00.000Z"], "asked during the second pass: next day"],
      ["cron(0 */30 1,2 * * *, America/New_York)", "2025-11-02T04:00:00Z", ["2025-11-02T05:00:00.000Z", "2025-11-02T05:30:00.000Z", "2025-11-02T07:00:00.000Z", "2025-11-02T07:30:00.000Z"], "01:00, 01:30 EDT then 02:00 EST"]
    ])
  })
  describe("every-hour field: elapsed time", () => {
    check([
      ["cron(0 30 * * * *, America/New_York)", "2025-03-09T05:00:00Z", ["2025-03-09T05:30:00.000Z", "2025-03-09T06:30:00.000Z", "2025-03-09T07:30:00.000Z", "2025-03-09T08:30:00.000Z"], "no 02:30"],
      ["cron(0 0-23 * * *, America/New_York)", "2025-03-09T05:30:00Z", ["2025-03-09T06:00:00.000Z", "2025-03-09T07:00:00.000Z", "2025-03-09T08:00:00.000Z"], "01:00 EST then 03:00 EDT"],
      ["cron(15 ? * * *, America/New_York)", "2025-03-09T06:00:00Z", ["2025-03-09T06:15:00.000Z", "2025-03-09T07:15:00.000Z"], "? hour: 01:15 then 03:15"],
      ["cron(0 30 * * * *, America/New_York)", "2025-11-02T04:00:00Z", ["2025-11-02T04:30:00.000Z", "2025-11-02T05:30:00.000Z", "2025-11-02T06:30:00.000Z", "2025-11-02T07:30:00.000Z"], "01:30 EDT and 01:30 EST"],
      ["cron(0 0 */1 * * *, America/New_York)", "2025-11-02T04:30:00Z", ["2025-11-02T05:00:00.000Z", "2025-11-02T06:00:00.000Z", "2025-11-02T07:00:00.000Z"], "*/1: 01:00 twice"],
      ["cron(0 30 * * * *, America/New_York)", "2025-11-02T05:45:00Z", ["2025-11-02T06:30:00.000Z", "2025-11-02T07:30:00.000Z"], "asked in the first pass: second pass still runs"],
      ["cron(*/20 * * * *, America/New_York)", "2025-11-02T05:50:00Z", ["2025-11-02T06:00:00.000Z", "2025-11-02T06:20:00.000Z", "2025-11-02T06:40:00.000Z", "2025-11-02T07:00:00.000Z"], "every 20 minutes of elapsed time"]
    ])
  })
})

describe("Europe/Paris", () => {
  check([
    ["cron(0 30 2 * * *, Europe/Paris)", "2025-03-29T12:00:00Z", ["2025-03-30T01:30:00.000Z", "2025-03-31T00:30:00.000Z"], "spring, specific: 02:30 -> 03:30 CEST"],
    ["cron(0 0,20,40 2 * * *, Europe/Paris)", "2025-03-29T12:00:00Z", ["2025-03-30T01:00:00.000Z", "2025-03-31T00:00:00.000Z"], "spring, specific: only 02:00 runs, at 03:00"],
    ["cron(0 30 * * * *, Europe/Paris)", "2025-03-30T00:00:00Z", ["2025-03-30T00:30:00.000Z", "2025-03-30T01:30:00.000Z", "2025-03-30T02:30:00.000Z"], "spring, every hour: 01:30, 03:30, 04:30"],
    ["cron(0 30 2 * * *, Europe/Paris)", "2025-10-25T12:00:00Z", ["2025-10-26T00:30:00.000Z", "2025-10-27T01:30:00.000Z"], "fall, specific: 02:30 CEST only"],
    ["cron(0 30 * * * *, Europe/Paris)", "2025-10-26T00:00:00Z", ["2025-10-26T00:30:00.000Z", "2025-10-26T01:30:00.000Z", "2025-10-26T02:30:00.000Z"], "fall, every hour: 02:30 CEST, 02:30 CET, 03:30"]
  ])
})

describe("Australia/Sydney", () => {
  check([
    ["cron(0 30 2 * * *, Australia/Sydney)", "2025-10-04T00:00:00Z", ["2025-10-04T16:30:00.000Z", "2025-10-05T15:30:00.000Z"], "spring, specific: 02:30 -> 03:30 AEDT"],
    ["cron(0 30 * * * *, Australia/Sydney)", "2025-10-04T15:00:00Z", ["2025-10-04T15:30:00.000Z", "2025-10-04T16:30:00.000Z", "2025-10-04T17:30:00.000Z"], "spring, every hour: 01:30, 03:30, 04:30"],
    ["cron(0 30 2 * * *, Australia/Sydney)", "2025-04-05T12:00:00Z", ["2025-04-05T15:30:00.000Z", "2025-04-06T16:30:00.000Z"], "fall, specific: 02:30 AEDT only"],
    ["cron(0 30 * * * *, Australia/Sydney)", "2025-04-05T14:00:00Z", ["2025-04-05T14:30:00.000Z", "2025-04-05T15:30:00.000Z", "2025-04-05T16:30:00.000Z", "2025-04-05T17:30:00.000Z"], "fall, every hour: 02:30 twice"]
  ])
})

describe("half-hour and midnight transitions", () => {
  check([
    ["cron(0 15 2 * * *, Australia/Lord_Howe)", "2025-10-04T12:00:00Z", ["2025-10-04T15:45:00.000Z", "2025-10-05T15:15:00.000Z"], "02:15 skipped by a 30-minute gap -> 02:45"],
    ["cron(0 15 * * * *, Australia/Lord_Howe)", "2025-10-04T14:00:00Z", ["2025-10-04T14:45:00.000Z", "2025-10-04T16:15:00.000Z", "2025-10-04T17:15:00.000Z"], "every hour: no 02:15"],
    ["cron(0 45 * * * *, Australia/Lord_Howe)", "2025-10-04T14:00:00Z", ["2025-10-04T14:15:00.000Z", "2025-10-04T15:15:00.000Z", "2025-10-04T15:45:00.000Z"], "every hour: 02:45 exists"],
    ["cron(0 45 * * * *, Australia/Lord_Howe)", "2025-04-05T14:00:00Z", ["2025-04-05T14:45:00.000Z", "2025-04-05T15:15:00.000Z", "2025-04-05T16:15:00.000Z", "2025-04-05T17:15:00.000Z"], "every hour: 01:45 twice"],
    ["cron(0 15 1 * * *, Australia/Lord_Howe)", "2025-04-05T12:00:00Z", ["2025-04-05T14:15:00.000Z", "2025-04-06T14:45:00.000Z"], "01:15 is before the repeated half hour"],
    ["cron(0 0 * * *, America/Santiago)", "2025-09-05T12:00:00Z", ["2025-09-06T04:00:00.000Z", "2025-09-07T04:00:00.000Z", "2025-09-08T03:00:00.000Z"], "midnight skipped -> 01:00"],
    ["cron(0 30 0 * * *, America/Santiago)", "2025-09-05T12:00:00Z", ["2025-09-06T04:30:00.000Z", "2025-09-07T04:30:00.000Z", "2025-09-08T03:30:00.000Z"], "00:30 skipped -> 01:30"]
  ])
})

describe("long searches across many clock changes", () => {
  check([
    ["cron(0 0 29 2 *, America/New_York)", "2025-03-01T00:00:00Z", ["2028-02-29T05:00:00.000Z", "2032-02-29T05:00:00.000Z"], "leap day in EST"],
    ["cron(0 12 * 7 1#1, Europe/Paris)", "2025-08-01T00:00:00Z", ["2026-07-06T10:00:00.000Z", "2027-07-05T10:00:00.000Z"], "summer time every year"],
    ["cron(0 0 * 2 5#5, Australia/Sydney)", "2025-01-01T00:00:00Z", ["2036-02-28T13:00:00.000Z"], "fifth Friday of February, 11 years ahead"]
  ])
})
