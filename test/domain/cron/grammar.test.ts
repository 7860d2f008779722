// Cron value grammar (docs/cron.md "The value") as tables: accepted values with their next fire times
// from a fixed start, rejected values with their exact 400 message, the wrapper and time-zone split, H
// stability, and the stored expression/zone.
import { describe, expect, it } from "vitest"
import {
  expressionAndZone,
  formatCronValue,
  isCronValue,
  nextFireAfter,
  parseCronValue
} from "../../../src/domain/cron/index.ts"
import { errorOf, fires, schedule } from "../../support/cron.ts"

const JAN1 = "2025-01-01T00:00:00Z" // a Wednesday

describe("accepted values: next fire times from a fixed start", () => {
  const table: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
    // 5 fields fire at second 0; 6 fields lead with seconds
    ["cron(*/5 * * * *)", JAN1, ["2025-01-01T00:05:00.000Z", "2025-01-01T00:10:00.000Z", "2025-01-01T00:15:00.000Z"]],
    ["cron(30 * * * * *)", JAN1, ["2025-01-01T00:00:30.000Z", "2025-01-01T00:01:30.000Z", "2025-01-01T00:02:30.000Z"]],
    ["cron(*/20 * * * * *)", JAN1, ["2025-01-01T00:00:20.000Z", "2025-01-01T00:00:40.000Z", "2025-01-01T00:01:00.000Z", "2025-01-01T00:01:20.000Z"]],
    ["cron(0 30 9 1 * *)", JAN1, ["2025-01-01T09:30:00.000Z", "2025-02-01T09:30:00.000Z", "2025-03-01T09:30:00.000Z"]],
    // strictly after: a start on a fire time, or between seconds
    ["cron(0 0 * * *)", "2025-01-01T00:00:00.500Z", ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z"]],
    ["cron(0 0 * * *)", "2024-12-31T23:59:59.999Z", ["2025-01-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z"]],
    // leap day
    ["cron(0 0 29 2 *)", JAN1, ["2028-02-29T00:00:00.000Z", "2032-02-29T00:00:00.000Z", "2036-02-29T00:00:00.000Z"]],
    ["cron(0 0 29 2 *)", "2096-03-01T00:00:00Z", ["2104-02-29T00:00:00.000Z", "2108-02-29T00:00:00.000Z"]],
    // aliases
    ["cron(@secondly)", JAN1, ["2025-01-01T00:00:01.000Z", "2025-01-01T00:00:02.000Z", "2025-01-01T00:00:03.000Z"]],
    ["cron(@minutely)", JAN1, ["2025-01-01T00:01:00.000Z", "2025-01-01T00:02:00.000Z", "2025-01-01T00:03:00.000Z"]],
    ["cron(@hourly)", JAN1, ["2025-01-01T01:00:00.000Z", "2025-01-01T02:00:00.000Z", "2025-01-01T03:00:00.000Z"]],
    ["cron(@daily)", JAN1, ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "2025-01-04T00:00:00.000Z"]],
    ["cron(@weekly)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-01-12T00:00:00.000Z", "2025-01-19T00:00:00.000Z"]],
    ["cron(@monthly)", JAN1, ["2025-02-01T00:00:00.000Z", "2025-03-01T00:00:00.000Z", "2025-04-01T00:00:00.000Z"]],
    ["cron(@yearly)", JAN1, ["2026-01-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z", "2028-01-01T00:00:00.000Z"]],
    ["cron(@annually)", JAN1, ["2026-01-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z", "2028-01-01T00:00:00.000Z"]],
    ["cron(@weekdays)", JAN1, ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "2025-01-06T00:00:00.000Z", "2025-01-07T00:00:00.000Z"]],
    ["cron(@weekends)", JAN1, ["2025-01-04T00:00:00.000Z", "2025-01-05T00:00:00.000Z", "2025-01-11T00:00:00.000Z", "2025-01-12T00:00:00.000Z"]],
    // aliases with a zone
    ["cron(@daily, Europe/Paris)", JAN1, ["2025-01-01T23:00:00.000Z", "2025-01-02T23:00:00.000Z"]],
    ["cron(@daily,Asia/Tokyo)", JAN1, ["2025-01-01T15:00:00.000Z", "2025-01-02T15:00:00.000Z"]],
    ["cron(@weekdays, America/New_York)", JAN1, ["2025-01-01T05:00:00.000Z", "2025-01-02T05:00:00.000Z", "2025-01-03T05:00:00.000Z", "2025-01-06T05:00:00.000Z"]],
    ["cron(0 9 * * MON-FRI, America/New_York)", JAN1, ["2025-01-01T14:00:00.000Z", "2025-01-02T14:00:00.000Z", "2025-01-03T14:00:00.000Z", "2025-01-06T14:00:00.000Z"]],
    // names in any case
    ["cron(0 0 1 jan,Jul *)", JAN1, ["2025-07-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", "2026-07-01T00:00:00.000Z"]],
    ["cron(0 0 * * mOn)", JAN1, ["2025-01-06T00:00:00.000Z", "2025-01-13T00:00:00.000Z", "2025-01-20T00:00:00.000Z"]],
    ["cron(0 0 * * MON-FRI/2)", JAN1, ["2025-01-03T00:00:00.000Z", "2025-01-06T00:00:00.000Z", "2025-01-08T00:00:00.000Z", "2025-01-10T00:00:00.000Z"]],
    // 0 and 7 are Sunday
    ["cron(0 0 * * 0)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-01-12T00:00:00.000Z", "2025-01-19T00:00:00.000Z"]],
    ["cron(0 0 * * 7)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-01-12T00:00:00.000Z", "2025-01-19T00:00:00.000Z"]],
    ["cron(0 0 * * SUN)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-01-12T00:00:00.000Z", "2025-01-19T00:00:00.000Z"]],
    ["cron(0 0 * * 5-7)", JAN1, ["2025-01-03T00:00:00.000Z", "2025-01-04T00:00:00.000Z", "2025-01-05T00:00:00.000Z", "2025-01-10T00:00:00.000Z"]],
    ["cron(0 0 * * 1/2)", JAN1, ["2025-01-03T00:00:00.000Z", "2025-01-05T00:00:00.000Z", "2025-01-06T00:00:00.000Z", "2025-01-08T00:00:00.000Z"]],
    // ? is *
    ["cron(0 0 ? * MON)", JAN1, ["2025-01-06T00:00:00.000Z", "2025-01-13T00:00:00.000Z", "2025-01-20T00:00:00.000Z"]],
    ["cron(0 0 1 * ?)", JAN1, ["2025-02-01T00:00:00.000Z", "2025-03-01T00:00:00.000Z", "2025-04-01T00:00:00.000Z"]],
    ["cron(? ? ? ? ? ?)", JAN1, ["2025-01-01T00:00:01.000Z", "2025-01-01T00:00:02.000Z"]],
    // steps and ranges
    ["cron(5/15 * * * *)", JAN1, ["2025-01-01T00:05:00.000Z", "2025-01-01T00:20:00.000Z", "2025-01-01T00:35:00.000Z", "2025-01-01T00:50:00.000Z", "2025-01-01T01:05:00.000Z"]],
    ["cron(0 1-12/5 * * *)", JAN1, ["2025-01-01T01:00:00.000Z", "2025-01-01T06:00:00.000Z", "2025-01-01T11:00:00.000Z", "2025-01-02T01:00:00.000Z"]],
    ["cron(10,20-22 8 * * *)", JAN1, ["2025-01-01T08:10:00.000Z", "2025-01-01T08:20:00.000Z", "2025-01-01T08:21:00.000Z", "2025-01-01T08:22:00.000Z", "2025-01-02T08:10:00.000Z"]],
    ["cron(*/90 * * * *)", JAN1, ["2025-01-01T01:00:00.000Z", "2025-01-01T02:00:00.000Z"]],
    // day of month L (5L is L)
    ["cron(0 0 L * *)", JAN1, ["2025-01-31T00:00:00.000Z", "2025-02-28T00:00:00.000Z", "2025-03-31T00:00:00.000Z", "2025-04-30T00:00:00.000Z"]],
    ["cron(0 0 5L * *)", JAN1, ["2025-01-31T00:00:00.000Z", "2025-02-28T00:00:00.000Z", "2025-03-31T00:00:00.000Z", "2025-04-30T00:00:00.000Z"]],
    ["cron(0 0 L 2 *)", "2027-01-01T00:00:00Z", ["2027-02-28T00:00:00.000Z", "2028-02-29T00:00:00.000Z", "2029-02-28T00:00:00.000Z"]],
    ["cron(0 0 1,L * *)", JAN1, ["2025-01-31T00:00:00.000Z", "2025-02-01T00:00:00.000Z", "2025-02-28T00:00:00.000Z", "2025-03-01T00:00:00.000Z"]],
    // day of week nL
    ["cron(0 0 * * 5L)", JAN1, ["2025-01-31T00:00:00.000Z", "2025-02-28T00:00:00.000Z", "2025-03-28T00:00:00.000Z", "2025-04-25T00:00:00.000Z"]],
    ["cron(0 0 * * FRIL)", JAN1, ["2025-01-31T00:00:00.000Z", "2025-02-28T00:00:00.000Z", "2025-03-28T00:00:00.000Z"]],
    ["cron(0 0 * * 0L)", JAN1, ["2025-01-26T00:00:00.000Z", "2025-02-23T00:00:00.000Z", "2025-03-30T00:00:00.000Z"]],
    ["cron(0 0 * * 7L)", JAN1, ["2025-01-26T00:00:00.000Z", "2025-02-23T00:00:00.000Z", "2025-03-30T00:00:00.000Z"]],
    ["cron(0 0 * * 1L,5)", JAN1, ["2025-01-03T00:00:00.000Z", "2025-01-10T00:00:00.000Z", "2025-01-17T00:00:00.000Z", "2025-01-24T00:00:00.000Z", "2025-01-27T00:00:00.000Z"]],
    // day of week n#k
    ["cron(0 0 * * 1#2)", JAN1, ["2025-01-13T00:00:00.000Z", "2025-02-10T00:00:00.000Z", "2025-03-10T00:00:00.000Z"]],
    ["cron(0 0 * * 1#5)", JAN1, ["2025-03-31T00:00:00.000Z", "2025-06-30T00:00:00.000Z", "2025-09-29T00:00:00.000Z", "2025-12-29T00:00:00.000Z"]],
    ["cron(0 0 * * 7#1)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-02-02T00:00:00.000Z", "2025-03-02T00:00:00.000Z"]],
    ["cron(0 0 * * sun#1)", JAN1, ["2025-01-05T00:00:00.000Z", "2025-02-02T00:00:00.000Z", "2025-03-02T00:00:00.000Z"]],
    ["cron(0 0 12 * * MON#3)", JAN1, ["2025-01-20T12:00:00.000Z", "2025-02-17T12:00:00.000Z", "2025-03-17T12:00:00.000Z"]],
    ["cron(0 0 * 2 5#5)", JAN1, ["2036-02-29T00:00:00.000Z", "2064-02-29T00:00:00.000Z"]],
    // a day of month that only some listed months have
    ["cron(0 0 31 1,4 *)", JAN1, ["2025-01-31T00:00:00.000Z", "2026-01-31T00:00:00.000Z"]],
    ["cron(0 0 */5 2 *)", JAN1, ["2025-02-01T00:00:00.000Z", "2025-02-06T00:00:00.000Z", "2025-02-11T00:00:00.000Z", "2025-02-16T00:00:00.000Z", "2025-02-21T00:00:00.000Z", "2025-02-26T00:00:00.000Z", "2026-02-01T00:00:00.000Z"]],
    // spaces inside the parentheses and around the zone comma; runs of spaces between fields
    ["cron(  0  0 * * *   ,   Europe/Paris )", JAN1, ["2025-01-01T23:00:00.000Z", "2025-01-02T23:00:00.000Z"]],
    // a zone name in another case takes Intl's spelling
    ["cron(0 0 * * *, europe/paris)", JAN1, ["2025-01-01T23:00:00.000Z"]],
    // Etc/GMT zones have inverted signs
    ["cron(0 0 * * *, Etc/GMT+5)", JAN1, ["2025-01-01T05:00:00.000Z", "2025-01-02T05:00:00.000Z"]],
    ["cron(0 0 * * *, Asia/Kathmandu)", JAN1, ["2025-01-01T18:15:00.000Z", "2025-01-02T18:15:00.000Z"]]
  ]
  it.each(table)("%s from %s", (value, from, expected) => {
    expect(fires(value, from, expected.length)).toEqual(expected)
  })
})

describe("day-of-month / day-of-week OR rule", () => {
  const table: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    // both restricted: either matches
    ["cron(0 0 13 * 5)", ["2025-01-03T00:00:00.000Z", "2025-01-10T00:00:00.000Z", "2025-01-13T00:00:00.000Z", "2025-01-17T00:00:00.000Z"]],
    ["cron(0 0 L * 1)", ["2025-01-06T00:00:00.000Z", "2025-01-13T00:00:00.000Z", "2025-01-20T00:00:00.000Z", "2025-01-27T00:00:00.000Z", "2025-01-31T00:00:00.000Z"]],
    ["cron(0 0 15 * 1#1)", ["2025-01-06T00:00:00.000Z", "2025-01-15T00:00:00.000Z", "2025-02-03T00:00:00.000Z", "2025-02-15T00:00:00.000Z"]],
    ["cron(0 0 1-7 * 1)", ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "2025-01-04T00:00:00.000Z", "2025-01-05T00:00:00.000Z", "2025-01-06T00:00:00.000Z", "2025-01-07T00:00:00.000Z", "2025-01-13T00:00:00.000Z"]],
    // */1 is restricted: day 1 OR every weekday = every day
    ["cron(0 0 1 * */1)", ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "2025-01-04T00:00:00.000Z"]],
    ["cron(0 0 */1 * 1)", ["2025-01-02T00:00:00.000Z", "2025-01-03T00:00:00.000Z", "2025-01-04T00:00:00.000Z"]],
    // only one restricted: that one alone
    ["cron(0 0 13 * *)", ["2025-01-13T00:00:00.000Z", "2025-02-13T00:00:00.000Z"]],
    ["cron(0 0 13 * ?)", ["2025-01-13T00:00:00.000Z", "2025-02-13T00:00:00.000Z"]],
    ["cron(0 0 * * 5)", ["2025-01-03T00:00:00.000Z", "2025-01-10T00:00:00.000Z"]],
    ["cron(0 0 ? * 5)", ["2025-01-03T00:00:00.000Z", "2025-01-10T00:00:00.000Z"]]
  ]
  it.each(table)("%s", (value, expected) => {
    expect(fires(value, JAN1, expected.length)).toEqual(expected)
  })
})

describe("rejected values: exact 400 message", () => {
  const P = "Invalid cron expression: "
  const table: ReadonlyArray<readonly [string, string]> = [
    // wrapper
    ["Cron(0 0 * * *)", 'expected cron(<expression>[, <time zone>]), got "Cron(0 0 * * *)"'],
    ["cron(0 0 * * *", 'expected cron(<expression>[, <time zone>]), got "cron(0 0 * * *"'],
    ["cron()", "the expression is empty"],
    ["cron(   )", "the expression is empty"],
    // field count: never filled in
    ["cron(0 0 * *)", "expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 4"],
    ["cron(*)", "expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 1"],
    ["cron(* * * * * * *)", "expected 5 or 6 fields, got 7 (a year field is not supported)"],
    ["cron(0 0 0 1 1 * 2030)", "expected 5 or 6 fields, got 7 (a year field is not supported)"],
    ["cron(0 0 1 1 * 2030)", "a year field is not supported (got 6 fields ending in 2030)"],
    // ranges of values
    ["cron(61 * * * *)", "minute value 61 out of range 0-59"],
    ["cron(60 * * * * *)", "second value 60 out of range 0-59"],
    ["cron(0 24 * * *)", "hour value 24 out of range 0-23"],
    ["cron(0 0 0 * *)", "day-of-month value 0 out of range 1-31"],
    ["cron(0 0 32 * *)", "day-of-month value 32 out of range 1-31"],
    ["cron(0 0 * 0 *)", "month value 0 out of range 1-12"],
    ["cron(0 0 * 13 *)", "month value 13 out of range 1-12"],
    ["cron(0 0 * * 8)", "day-of-week value 8 out of range 0-7"],
    ["cron(0 0-60 * * *)", "hour value 60 out of range 0-23"],
    // names: three letters only
    ["cron(0 0 * * MONDAY)", 'day-of-week value "MONDAY" is not valid: use three-letter names (SUN, MON, ...)'],
    ["cron(0 0 * January *)", 'month value "January" is not valid: use three-letter names (JAN, FEB, ...)'],
    ["cron(0 0 * FOO *)", 'month value "FOO" is not valid (use 1-12 or JAN-DEC)'],
    ["cron(MON 0 * * *)", 'minute value "MON" is not valid (use 0-59)'],
    ["cron(0 0 * * MON,FRX)", 'day-of-week value "FRX" is not valid (use 0-7 or SUN-SAT)'],
    // lists, ranges, steps
    ["cron(0 0 * * 1,1)", 'day-of-week list "1,1" repeats value 1'],
    ["cron(0 0 1-5,3 * *)", 'day-of-month list "1-5,3" repeats value 3'],
    ["cron(*/15,30 * * * *)", 'minute list "*/15,30" repeats value 30'],
    ["cron(0 0 * * 0,7)", 'day-of-week list "0,7" repeats value 7 (0 and 7 are both Sunday)'],
    ["cron(0 0 1,,2 * *)", 'day-of-month field "1,,2" has an empty list element'],
    ["cron(0 0 * * 1,)", "nothing follows the last comma (expected a time zone or a list element)"],
    ["cron(0 5-1 * * *)", "hour range 5-1 must go upward (write the smaller value first)"],
    ["cron(0 0 * * SAT-SUN)", "day-of-week range SAT-SUN must go upward (write the smaller value first)"],
    ["cron(*/0 * * * *)", 'minute step 0 in "*/0" is not allowed (use 1 or more)'],
    ["cron(0 0 1-10/0 * *)", 'day-of-month step 0 in "1-10/0" is not allowed (use 1 or more)'],
    ["cron(*/x * * * *)", 'minute step "x" in "*/x" is not a whole number'],
    ["cron(1/2/3 * * * *)", 'minute field "1/2/3": "1/2/3" has more than one "/"'],
    ["cron(1-2-3 * * * *)", 'minute field "1-2-3": "1-2-3" is not a valid range'],
    ["cron(0 0 ?,1 * *)", 'day-of-month field "?,1": "?" must be the whole field'],
    // L and W
    ["cron(0 0 L-2 * *)", 'day-of-month value "L-2" is not supported: L-n forms are rejected (use L for the last day)'],
    ["cron(0 0 LW * *)", 'day-of-month value "LW" is not supported: W (nearest weekday) forms are rejected'],
    ["cron(0 0 W * *)", 'day-of-month value "W" is not supported: W (nearest weekday) forms are rejected'],
    ["cron(0 0 15W * *)", 'day-of-month value "15W" is not supported: W (nearest weekday) forms are rejected'],
    ["cron(0 0 32L * *)", "day-of-month value 32 out of range 1-31"],
    ["cron(0 0 * * L)", 'day-of-week value "L" is not supported: use nL for the last weekday n of the month (e.g. 5L)'],
    ["cron(0 0 * * 8L)", "day-of-week value 8 out of range 0-7"],
    ["cron(0 0 * L *)", 'month value "L" is not valid (use 1-12 or JAN-DEC)'],
    // #
    ["cron(0 0 * * 1#6)", 'day-of-week "1#6": occurrence 6 out of range 1-5'],
    ["cron(0 0 * * 1#0)", 'day-of-week "1#0": occurrence 0 out of range 1-5'],
    ["cron(0 0 * * 1#2,3)", 'day-of-week "1#2,3": n#k cannot be combined with a list, range or step'],
    ["cron(0 0 * * 3,1#2)", 'day-of-week "3,1#2": n#k cannot be combined with a list, range or step'],
    ["cron(0 0 * * 1-5#2)", 'day-of-week "1-5#2": n#k cannot be combined with a list, range or step'],
    ["cron(0 0 * * 1#2/2)", 'day-of-week "1#2/2": n#k cannot be combined with a list, range or step'],
    ["cron(0 0 1#2 * *)", 'day-of-month field "1#2": # is only allowed in the day-of-week field'],
    // aliases
    ["cron(@reboot)", "@reboot is not supported"],
    ["cron(@midnight)", "@midnight is not supported"],
    ["cron(@DAILY)", 'unknown alias "@DAILY" (aliases are lowercase: @yearly, @annually, @monthly, @weekly, @daily, @hourly, @weekdays, @weekends, @minutely, @secondly)'],
    ["cron(@daily 1)", 'an alias must be used alone, got "@daily 1"'],
    // impossible dates
    ["cron(0 0 30 2 *)", "day-of-month 30 does not exist in FEB"],
    ["cron(0 0 31 4 *)", "day-of-month 31 does not exist in APR"],
    ["cron(0 0 31 2,4 *)", "day-of-month 31 does not exist in any of FEB, APR"],
    ["cron(0 0 1,31 6 *)", "day-of-month 31 does not exist in JUN"],
    ["cron(0 0 30-31 2 *)", "no day of the day-of-month field exists in FEB"],
    ["cron(0 0 30 FEB MON)", "day-of-month 30 does not exist in FEB"],
    // H
    ["cron(0 0 1,H * *)", 'day-of-month field "1,H": H must be the whole field'],
    ["cron(0 0 Hx * *)", 'day-of-month value "Hx" is not valid (use H, H/n, H(a-b) or H(a-b)/n)'],
    ["cron(0 0 H(5-1) * *)", 'day-of-month range 5-1 in "H(5-1)" must go upward'],
    ["cron(H(0-60) * * * *)", "minute value 60 out of range 0-59"],
    ["cron(H/0 * * * *)", 'minute step 0 in "H/0" is not allowed (use 1 or more)'],
    ["cron(H(0-9)/20 * * * *)", 'minute step 20 in "H(0-9)/20" is larger than its range 0-9'],
    ["cron(0 0 H(1-31) 2 *)", "day-of-month H can pick 31, which does not exist in FEB"],
    ["cron(0 0 31 H *)", "day-of-month 31 does not exist in FEB, which the month field's H can pick"],
    ["cron(0 0 31 H(2-6)/2 *)", "day-of-month 31 does not exist in FEB, APR, JUN, which the month field's H can pick"],
    // time zones
    ["cron(0 0 * * *, Foo/Bar)", 'unknown time zone "Foo/Bar"'],
    ["cron(0 0 * * *,Foo/Bar)", 'unknown time zone "Foo/Bar"'],
    ["cron(0 0 * * *, +01:00)", 'unknown time zone "+01:00"'],
    ["cron(0 0 * * *, )", "nothing follows the last comma (expected a time zone or a list element)"],
    ["cron(0 0 * * 1, 5)", 'unknown time zone "5" (lists take no spaces after their commas)'],
    ["cron(0 0 1, * *)", '"* *" after the last comma is not a time zone (lists take no spaces)'],
    ["cron(0 0 * * * Europe/Paris)", 'day-of-week value "Europe/Paris" is not valid (a time zone goes after a comma)']
  ]
  it.each(table)("%s", (value, details) => {
    expect(errorOf(value)).toBe(P + details)
  })
})

describe("the cron(...) wrapper", () => {
  it.each([
    ["cron(0 0 * * *)", true],
    ["cron()", true],
    ["cron(@daily, UTC)", true],
    ["Cron(0 0 * * *)", false],
    ["CRON(0 0 * * *)", false],
    ["cron (0 0 * * *)", false],
    [" cron(0 0 * * *)", false],
    ["cron(0 0 * * *) ", false],
    ["cron(0 0 * * *", false],
    ["2025-01-01T00:00:00Z", false],
    ["now | add 1d", false]
  ] as const)("isCronValue(%j) is %s", (value, expected) => {
    expect(isCronValue(value)).toBe(expected)
  })

  it.each([
    // no zone: the comma belongs to the day-of-week list
    ["cron(0 0 * * 1,5)", "0 0 * * 1,5", "UTC"],
    ["cron(0 0 * * MON,FRI)", "0 0 * * MON,FRI", "UTC"],
    ["cron(0 0 * * 1-2,5L)", "0 0 * * 1-2,5L", "UTC"],
    ["cron(0 0 * * *)", "0 0 * * *", "UTC"],
    // a zone after a spaced comma
    ["cron(0 0 * * 1,5, Europe/Paris)", "0 0 * * 1,5", "Europe/Paris"],
    ["cron(0 0 * * 1,5 ,Europe/Paris)", "0 0 * * 1,5", "Europe/Paris"],
    ["cron( 0 0 * * 1,5 , Europe/Paris )", "0 0 * * 1,5", "Europe/Paris"],
    // a zone glued to the list when it cannot be a list element
    ["cron(0 0 * * MON,FRI,America/New_York)", "0 0 * * MON,FRI", "America/New_York"],
    ["cron(0 0 * * *,UTC)", "0 0 * * *", "UTC"],
    ["cron(0 0 * * *,EST)", "0 0 * * *", "EST"],
    ["cron(0 0 0 * * *,Europe/Paris)", "0 0 0 * * *", "Europe/Paris"],
    // aliases expand; zones keep the written name when valid
    ["cron(@weekends)", "0 0 * * 0,6", "UTC"],
    ["cron(@hourly,Asia/Tokyo)", "0 * * * *", "Asia/Tokyo"],
    ["cron(0 0 * * *, US/Eastern)", "0 0 * * *", "US/Eastern"],
    ["cron(0 0 * * *, utc)", "0 0 * * *", "UTC"],
    ["cron(0   0 *  * *)", "0 0 * * *", "UTC"],
    ["cron(H H * * *)", "H H * * *", "UTC"]
  ])("%s -> expression %j, zone %j", (value, expression, timeZone) => {
    const parsed = schedule(value)
    expect(expressionAndZone(parsed)).toEqual({ expression, timeZone })
  })

  it("formatCronValue gives a value that parses back to the same schedule", () => {
    for (const value of ["cron(0 9 * * MON,FRI,America/New_York)", "cron(@weekends)", "cron(0 0 * * 1,5)", "cron(H H(0-5) * * 1-5, Europe/Paris)"]) {
      const first = schedule(value, "gen-1")
      const stored = formatCronValue(expressionAndZone(first))
      const again = schedule(stored, "gen-1")
      expect(expressionAndZone(again)).toEqual(expressionAndZone(first))
      expect(fires(again, JAN1, 5)).toEqual(fires(first, JAN1, 5))
    }
    expect(formatCronValue({ expression: "0 0 * * 1,5", timeZone: "UTC" })).toBe("cron(0 0 * * 1,5, UTC)")
  })
})

describe("H: a stable value derived from the hash seed", () => {
  it("is the same for the same seed, across parses", () => {
    const a = fires(schedule("cron(H H * * *)", "generator-42"), JAN1, 3)
    const b = fires(schedule("cron(H H * * *)", "generator-42"), JAN1, 3)
    expect(a).toEqual(b)
    expect(a).toHaveLength(3)
  })

  it("differs between seeds, stays inside the field's range, and stays fixed from run to run", () => {
    const minutesAndHours = new Set<string>()
    for (let i = 0; i < 40; i++) {
      const [first, second] = fires(schedule("cron(H H * * *)", `generator-${i}`), JAN1, 2)
      const firstDate = new Date(first)
      // daily: the same minute and hour every day
      expect(Date.parse(second) - Date.parse(first)).toBe(86_400_000)
      expect(firstDate.getUTCSeconds()).toBe(0)
      minutesAndHours.add(`${firstDate.getUTCHours()}:${firstDate.getUTCMinutes()}`)
    }
    expect(minutesAndHours.size).toBeGreaterThan(30)
  })

  it("uses a fixed seed when none is given", () => {
    expect(fires("cron(H H * * *)", JAN1, 2)).toEqual(fires(schedule("cron(H H * * *)"), JAN1, 2))
    expect(fires("cron(H H * * *)", JAN1, 2)).toEqual(["2025-01-01T09:05:00.000Z", "2025-01-02T09:05:00.000Z"])
  })

  it("H(a-b) picks inside the range, H/n repeats every n, day-of-month H stays in 1-28", () => {
    for (let i = 0; i < 50; i++) {
      const seed = `seed-${i}`
      const ranged = new Date(fires(schedule("cron(H(10-14) 3 * * *)", seed), JAN1, 1)[0])
      expect(ranged.getUTCMinutes()).toBeGreaterThanOrEqual(10)
      expect(ranged.getUTCMinutes()).toBeLessThanOrEqual(14)

      const stepped = fires(schedule("cron(H/15 * * * *)", seed), JAN1, 5).map((iso) => new Date(iso).getUTCMinutes())
      expect(new Set(stepped.map((m) => m % 15)).size).toBe(1)
      expect(stepped.slice(1).map((m, k) => (m - stepped[k] + 60) % 60)).toEqual([15, 15, 15, 15])

      const day = new Date(fires(schedule("cron(0 0 H * *)", seed), JAN1, 1)[0]).getUTCDate()
      expect(day).toBeGreaterThanOrEqual(1)
      expect(day).toBeLessThanOrEqual(28)

      const weekday = new Date(fires(schedule("cron(0 0 * * H)", seed), JAN1, 1)[0]).getUTCDay()
      expect(weekday).toBeGreaterThanOrEqual(0)
      expect(weekday).toBeLessThanOrEqual(6)
    }
  })

  it("accepts or rejects the same value whatever the seed", () => {
    for (const value of ["cron(0 0 31 H *)", "cron(0 0 31 H(2-6)/2 *)", "cron(0 0 H(1-31) 4,6 *)"]) {
      const tags = new Set(Array.from({ length: 30 }, (_, i) => parseCronValue(value, { hashSeed: `g${i}` })._tag))
      expect([value, [...tags]]).toEqual([value, ["Err"]])
    }
    for (const value of ["cron(0 0 15 H *)", "cron(0 0 H * *)", "cron(0 0 H 2 *)", "cron(0 0 30 H(1-6)/3 *)", "cron(0 0 H(1-31) 1,3 *)"]) {
      const tags = new Set(Array.from({ length: 30 }, (_, i) => parseCronValue(value, { hashSeed: `g${i}` })._tag))
      expect([value, [...tags]]).toEqual([value, ["Ok"]])
    }
  })

  it("H in the hour field is a specific hour (wall-clock rules apply)", () => {
    // whichever hour is picked, it appears once a day
    const runs = fires(schedule("cron(0 H * * *, America/New_York)", "x"), JAN1, 3)
    expect(Date.parse(runs[2]) - Date.parse(runs[1])).toBe(86_400_000)
  })
})

describe("nextFireAfter edge cases", () => {
  it("returns null when no time exists within the search bound", () => {
    expect(nextFireAfter(schedule("cron(0 0 * * *)"), Date.parse("9999-12-31T12:00:00Z"))).toBeNull()
    expect(nextFireAfter(schedule("cron(0 0 * * *)"), Number.NaN)).toBeNull()
  })

  it("works far from now in both directions", () => {
    expect(fires("cron(0 0 1 1 *)", "1900-06-01T00:00:00Z", 2)).toEqual(["1901-01-01T00:00:00.000Z", "1902-01-01T00:00:00.000Z"])
    expect(fires("cron(0 0 29 2 *)", "2399-03-01T00:00:00Z", 1)).toEqual(["2400-02-29T00:00:00.000Z"])
    expect(fires("cron(0 12 * * *, Europe/Paris)", "1950-06-01T00:00:00Z", 1)).toEqual(["1950-06-01T11:00:00.000Z"])
  })

  it("parses a full value without touching the clock and rejects non-cron values", () => {
    const parsed = parseCronValue("2025-01-01T00:00:00Z")
    expect(parsed).toEqual({ _tag: "Err", message: 'Invalid cron expression: expected cron(<expression>[, <time zone>]), got "2025-01-01T00:00:00Z"' })
  })
})
