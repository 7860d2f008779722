// A time-series chart drawn by uPlot (≈ 50 kB, canvas): the component creates the plot once, gives
// it new data on each render and follows its container's width. Its x axis is the range it is
// given (the overview's 1, 6 or 24 h), whatever the data covers, so every chart of a page shares
// it; the scale it drew is left on the figure (data-x-min, data-x-max) for the browser test. Times
// are shown in UTC (timeAxis.ts); stacked bars are drawn from cumulative sums while the legend shows
// each series' own value; lines show their points too, so a lone bucket is visible. A chart of counts
// ticks at whole numbers only, and a chart with nothing to show says so ("No data in this range", or
// its own words; chartScale.ts).
import { useEffect, useRef } from "preact/hooks"
import uPlot from "uplot"
import { COUNT_STEPS, countAxisMax, countLabel, nothingToShow } from "./chartScale.ts"
import { pointLabel, timeLabel } from "./timeAxis.ts"
import { html } from "./ui.ts"

export interface Series {
  readonly label: string
  readonly color: string
  /** Bars instead of a line. */
  readonly bars?: boolean
  /** Filled under the line. */
  readonly fill?: boolean
}

export interface ChartProps {
  readonly title: string
  /** Times in seconds. */
  readonly t: ReadonlyArray<number>
  readonly values: ReadonlyArray<ReadonlyArray<number | null>>
  readonly series: ReadonlyArray<Series>
  /** Bars stacked on one another (the first series at the bottom). */
  readonly stacked?: boolean
  readonly height?: number
  /** Formats a y value in the axis and the legend. */
  readonly format?: (value: number) => string
  /** The values are counts: whole-number ticks and labels. */
  readonly counts?: boolean
  /** What an empty chart says (default: "No data in this range"). */
  readonly emptyText?: string
  /** The x axis, in seconds (else the data's extent). */
  readonly range?: { readonly from: number; readonly to: number }
}

const bars = uPlot.paths.bars!({ size: [0.8, 24], gap: 1 })

/** The narrowest plot: it fits a 420 px phone screen's card. */
const MIN_WIDTH = 160


/** What uPlot draws: for stacked bars the cumulative sums, tallest first (drawn behind the others). */
const drawn = (props: ChartProps): Array<Array<number | null>> => {
  if (props.stacked !== true) return props.values.map((v) => [...v])
  let sum = props.t.map(() => 0)
  const cumulative = props.values.map((v) => (sum = sum.map((s, i) => s + (v[i] ?? 0))))
  return cumulative.reverse()
}

export const Chart = (props: ChartProps) => {
  const container = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  const raw = useRef(props.values)
  raw.current = props.values
  const range = useRef(props.range)
  range.current = props.range
  const shape = props.series.map((s) => `${s.label}${s.bars === true}`).join("|") + String(props.stacked)
  const counts = props.counts === true
  const format = props.format ?? (counts ? countLabel : (v: number) => String(Math.round(v * 100) / 100))

  useEffect(() => {
    const element = container.current!
    const ordered = props.stacked === true ? [...props.series].reverse() : props.series
    const rawIndex = (k: number) => (props.stacked === true ? props.series.length - 1 - k : k)
    const options: uPlot.Options = {
      width: Math.max(MIN_WIDTH, element.clientWidth),
      height: props.height ?? 200,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: {
        x: { time: true, range: (_u, min, max) => (range.current === undefined ? [min, max] : [range.current.from, range.current.to]) },
        y: { range: (_u, _min, max) => [0, counts ? countAxisMax(max) : max > 0 ? max * 1.15 : 1] }
      },
      hooks: {
        setScale: [(u, key) => {
          if (key !== "x") return
          element.closest("figure")?.setAttribute("data-x-min", String(u.scales.x!.min))
          element.closest("figure")?.setAttribute("data-x-max", String(u.scales.x!.max))
        }]
      },
      axes: [
        { stroke: "#667085", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#eef0f3" }, values: (_u, ticks) => ticks.map(timeLabel) },
        { stroke: "#667085", grid: { stroke: "#eef0f3" }, ticks: { stroke: "#eef0f3" }, size: 60, values: (_u, ticks) => ticks.map(format),
          ...(counts ? { incrs: COUNT_STEPS } : {}) }
      ],
      series: [
        { value: (_u, v) => (v === null ? "—" : pointLabel(v)) },
        ...ordered.map((s, k): uPlot.Series => ({
          label: s.label,
          stroke: s.color,
          width: s.bars === true ? 0 : 2,
          ...(s.bars === true ? { paths: bars, fill: s.color, points: { show: false } } : { points: { show: true, size: 5, fill: s.color } }),
          ...(s.fill === true ? { fill: `${s.color}22` } : {}),
          spanGaps: false,
          value: (_u, v, _si, i) => {
            const own = i === null ? v : raw.current[rawIndex(k)]?.[i] ?? null
            return own === null || own === undefined ? "—" : format(own)
          }
        }))
      ]
    }
    plot.current = new uPlot(options, [[...props.t], ...drawn(props)] as uPlot.AlignedData, element)
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(MIN_WIDTH, element.clientWidth), height: props.height ?? 200 }))
    resize.observe(element)
    return () => {
      resize.disconnect()
      plot.current?.destroy()
      plot.current = null
    }
  }, [shape])

  useEffect(() => {
    plot.current?.setData([[...props.t], ...drawn(props)] as uPlot.AlignedData)
  }, [props.t, props.values, props.range?.from, props.range?.to])

  const empty = nothingToShow(props.values)
  return html`<figure class="chart" data-empty=${empty}><figcaption>${props.title}</figcaption>
    <div class="chart-plot"><div ref=${container}></div>${empty ? html`<div class="chart-empty">${props.emptyText ?? "No data in this range"}</div>` : null}</div></figure>`
}
