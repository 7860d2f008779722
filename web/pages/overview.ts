// Overview of the project: deliveries by outcome, first attempts' lateness — the scheduler's own
// apart from the wait of triggers held by their tags' limits — how many triggers end in a dead letter
// now (the Dead letters page's count, linked), dead-letter attempts per hour over 24 h, and
// queued / in-flight triggers per tag policy, all from the service's rollup (GET /overview),
// refreshed every 15 s. Every chart's axis is the chosen range (1, 6 or 24 h, kept in the address as
// `?hours=`); bars are buckets of 1, 5 or 15 minutes.
import type { Overview } from "../../src/domain/overview.ts"
import { api } from "../api.ts"
import { Chart } from "../chart.ts"
import { setQuery, useLocation } from "../router.ts"
import { bucketName } from "../timeAxis.ts"
import { Empty, formatMs, html, Link, Notice, PageHeader, useLoad } from "../ui.ts"

/** GET /overview: the rollup's overview and, counted apart, the triggers whose latest attempt is a dead letter now (the Dead letters page lists them). */
type OverviewAnswer = Overview & { readonly deadLetterTriggers: number }

const RANGES = [1, 6, 24] as const

const Stat = ({ label, value, tone, href }: { label: string; value: string; tone?: string; href?: string }) => {
  const inner = html`<div class="value">${value}</div><div class="label">${label}</div>`
  return html`<div class=${`stat ${tone ?? ""}`}>${href === undefined ? inner : html`<${Link} href=${href} class="stat-link">${inner}</${Link}>`}</div>`
}

const count = (n: number) => n.toLocaleString("en-US")

export const OverviewPage = ({ projectId }: { projectId: string }) => {
  const asked = Number(useLocation().query.get("hours"))
  const hours: number = (RANGES as ReadonlyArray<number>).includes(asked) ? asked : 1
  const setHours = (h: number) => setQuery({ hours: String(h) })
  const { data, error } = useLoad(() => api<OverviewAnswer>("GET", `/overview?hours=${hours}`), [hours], 15_000)
  const per = data === undefined ? "" : bucketName(data.bucketSeconds)
  return html`<div>
    <${PageHeader} title="Overview" subtitle="Deliveries, lateness and dead letters of this project (UTC).">
      <div class="segmented" role="group" aria-label="Range">
        ${RANGES.map((h) => html`<button class=${h === hours ? "on" : ""} aria-pressed=${h === hours} onClick=${() => setHours(h)}>${h} h</button>`)}
      </div>
    </${PageHeader}>
    ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
    ${data === undefined ? html`<div class="muted">Loading…</div>` : html`
      <div class="stats">
        <${Stat} label=${`delivered (${hours} h)`} value=${count(data.totals.succeeded)} tone="green" />
        <${Stat} label=${`failed, retried (${hours} h)`} value=${count(data.totals.failed)} tone="amber" />
        <${Stat} label="triggers ending in a dead letter now" value=${count(data.deadLetterTriggers)}
          tone=${data.deadLetterTriggers > 0 ? "red" : ""} href=${`/dashboard/p/${projectId}/dead-letters`} />
        <${Stat} label=${`scheduler lateness p50 / p99 (${hours} h)`} value=${`${formatMs(data.totals.latenessP50)} / ${formatMs(data.totals.latenessP99)}`} />
        <${Stat} label=${`held by tag limits p99 (${hours} h)`} value=${formatMs(data.totals.gatedLatenessP99)} />
      </div>
      <div class="grid two">
        <div class="card"><${Chart} title=${`Deliveries per ${per}`} t=${data.deliveries.t} range=${data.range} stacked=${true} counts=${true} emptyText="No delivery in this range"
          values=${[data.deliveries.succeeded, data.deliveries.failed, data.deliveries.deadLetters]}
          series=${[{ label: "delivered", color: "#12a150", bars: true }, { label: "failed, retried", color: "#e59a0b", bars: true },
            { label: "dead-letter attempts", color: "#d92d20", bars: true }]} /></div>
        <div class="card"><${Chart} title="Scheduler lateness of first attempts (start − scheduled time; triggers without tag limits)"
          t=${data.lateness.t} range=${data.range} values=${[data.lateness.p50, data.lateness.p99]} format=${formatMs} emptyText="No first attempt in this range"
          series=${[{ label: "p50", color: "#2563eb" }, { label: "p99", color: "#7c3aed" }]} /></div>
        <div class="card"><${Chart} title="Wait of triggers with tag limits (lateness and time held by concurrency or throughput)"
          t=${data.lateness.t} range=${data.range} values=${[data.lateness.gatedP50, data.lateness.gatedP99]} format=${formatMs}
          emptyText="No first attempt of a trigger with tag limits in this range"
          series=${[{ label: "p50", color: "#0ea5e9" }, { label: "p99", color: "#c2410c" }]} /></div>
        <div class="card"><${Chart} title=${`Dead-letter attempts per hour, last 24 h (${count(data.deadLetters24h)} in all; a trigger replayed and failed again counts again)`}
          t=${data.deadLettersByHour.t} values=${[data.deadLettersByHour.count]} counts=${true} emptyText="No dead-letter attempt in the last 24 h"
          series=${[{ label: "dead-letter attempts", color: "#d92d20", bars: true }]} /></div>
        <div class="card">
          <h2 class="card-title">Tag policies: queued and in flight</h2>
          ${data.tagPolicies.length === 0 ? html`<${Empty}>No tag policy in this project.</${Empty}>` : html`
            <div class="scroll-x"><table class="compact"><thead><tr><th>Tag</th><th class="num">Queued now</th><th class="num">In flight now</th></tr></thead>
              <tbody>${data.tagPolicies.map((p) => html`<tr><td><code>${p.tag}</code></td><td class="num">${p.queued}</td><td class="num">${p.inFlight}</td></tr>`)}</tbody>
            </table></div>`}
        </div>
      </div>
      ${data.tagPolicies.length === 0 ? null : html`<div class="grid two">
        ${data.tagPolicies.map((p) => !p.sampled
          ? html`<div class="card" key=${p.id}><h2 class="card-title">Tag ${p.tag}: queued and in flight</h2><${Empty}>No sample in this range yet: taken every 5 s.</${Empty}></div>`
          : html`<div class="card" key=${p.id}><${Chart} title=${`Tag ${p.tag}: queued and in flight (peak per ${per}, sampled every 5 s)`} height=${160} counts=${true} emptyText="Nothing queued or in flight in this range"
          t=${p.t} range=${data.range} values=${[p.queuedSeries, p.inFlightSeries]}
          series=${[{ label: "queued", color: "#7c3aed", fill: true }, { label: "in flight", color: "#0ea5e9", fill: true }]} /></div>`)}
      </div>`}
    `}
  </div>`
}
