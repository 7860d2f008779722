// A small hand-written SVG line chart (no dependency): series of (x, y) points on log-scale axes,
// each series drawn as a line with dots, solid or dashed, a legend, and grid lines at powers of ten
// (and 2 and 5 between them). Used for the lateness-against-load curve (latenessCurve.ts).

export interface Series {
  readonly label: string
  readonly color: string
  readonly dashed?: boolean
  readonly points: ReadonlyArray<{ readonly x: number; readonly y: number }>
}

export interface ChartOptions {
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  readonly width?: number
  readonly height?: number
  /** Horizontal lines drawn across the plot, e.g. a goal. */
  readonly marks?: ReadonlyArray<{ readonly y: number; readonly label: string }>
}

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** 1, 2, 5 × powers of ten within [low, high]. */
const ticks = (low: number, high: number): Array<number> => {
  const out: Array<number> = []
  for (let e = Math.floor(Math.log10(low)); e <= Math.ceil(Math.log10(high)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e
      if (v >= low * 0.999 && v <= high * 1.001) out.push(v)
    }
  }
  return out
}

const tickLabel = (v: number) => (v >= 1000 ? `${v / 1000}k` : v >= 1 ? String(v) : String(Number(v.toPrecision(2))))

export const lineChart = (series: ReadonlyArray<Series>, options: ChartOptions): string => {
  const width = options.width ?? 720
  const height = options.height ?? 440
  const left = 70
  const right = 200
  const top = 40
  const bottom = 50
  const all = series.flatMap((s) => s.points).filter((p) => p.x > 0 && p.y > 0)
  const ys = [...all.map((p) => p.y), ...(options.marks ?? []).map((m) => m.y)]
  const xLow = 10 ** Math.floor(Math.log10(Math.min(...all.map((p) => p.x))))
  const xHigh = 10 ** Math.ceil(Math.log10(Math.max(...all.map((p) => p.x))))
  const yLow = 10 ** Math.floor(Math.log10(Math.min(...ys)))
  const yHigh = 10 ** Math.ceil(Math.log10(Math.max(...ys)))
  const plotW = width - left - right
  const plotH = height - top - bottom
  const sx = (x: number) => left + (plotW * (Math.log10(x) - Math.log10(xLow))) / (Math.log10(xHigh) - Math.log10(xLow))
  const sy = (y: number) => top + plotH - (plotH * (Math.log10(y) - Math.log10(yLow))) / (Math.log10(yHigh) - Math.log10(yLow))
  const out: Array<string> = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`)
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`)
  out.push(`<text x="${left}" y="22" font-size="14" font-weight="bold">${escape(options.title)}</text>`)
  for (const x of ticks(xLow, xHigh)) {
    out.push(`<line x1="${sx(x).toFixed(1)}" y1="${top}" x2="${sx(x).toFixed(1)}" y2="${top + plotH}" stroke="#e4e4e4"/>`)
    out.push(`<text x="${sx(x).toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle">${tickLabel(x)}</text>`)
  }
  for (const y of ticks(yLow, yHigh)) {
    out.push(`<line x1="${left}" y1="${sy(y).toFixed(1)}" x2="${left + plotW}" y2="${sy(y).toFixed(1)}" stroke="#e4e4e4"/>`)
    out.push(`<text x="${left - 6}" y="${(sy(y) + 4).toFixed(1)}" text-anchor="end">${tickLabel(y)}</text>`)
  }
  out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`)
  out.push(`<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escape(options.xLabel)}</text>`)
  out.push(`<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(options.yLabel)}</text>`)
  for (const mark of options.marks ?? []) {
    out.push(`<line x1="${left}" y1="${sy(mark.y).toFixed(1)}" x2="${left + plotW}" y2="${sy(mark.y).toFixed(1)}" stroke="#c00" stroke-dasharray="2 3"/>`)
    out.push(`<text x="${left + 4}" y="${(sy(mark.y) - 4).toFixed(1)}" fill="#c00">${escape(mark.label)}</text>`)
  }
  series.forEach((s, i) => {
    const points = s.points.filter((p) => p.x > 0 && p.y > 0)
    const path = points.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(" ")
    const dash = s.dashed === true ? ` stroke-dasharray="6 4"` : ""
    out.push(`<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`)
    for (const p of points) out.push(`<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="3" fill="${s.color}"/>`)
    const ly = top + 10 + i * 20
    out.push(`<line x1="${left + plotW + 14}" y1="${ly}" x2="${left + plotW + 44}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`)
    out.push(`<text x="${left + plotW + 50}" y="${ly + 4}">${escape(s.label)}</text>`)
  })
  out.push(`</svg>`)
  return out.join("\n") + "\n"
}
