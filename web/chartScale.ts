// The value axis of the dashboard's charts (docs/dashboard.md, "Overview"): a chart of counts ticks
// at whole numbers only (never 2.5 deliveries), and a chart with nothing to show says so instead of
// an empty frame. No DOM: the tests import it.

/** uPlot's tick steps for counts: whole numbers only. */
export const COUNT_STEPS: Array<number> = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 2.5e4, 5e4, 1e5, 2e5, 2.5e5, 5e5, 1e6, 2e6, 2.5e6, 5e6, 1e7, 2e7, 5e7, 1e8]

/** The top of a count axis: room above the highest value, on a whole number (1 when all are 0). */
export const countAxisMax = (max: number): number => (max > 0 ? Math.max(1, Math.ceil(max * 1.15)) : 1)

/** A count as an axis label or in the legend: a whole number with thousands separated. */
export const countLabel = (value: number): string => Math.round(value).toLocaleString("en-US")

/** Whether a chart has nothing to show: no point, or every value missing or 0. */
export const nothingToShow = (values: ReadonlyArray<ReadonlyArray<number | null>>): boolean =>
  values.every((series) => series.every((value) => value === null || value === 0))
