// The service's metrics in the Prometheus format (prom-client), served on the ops listener
// (ops/opsServer.ts). One registry per running service; the code that does the work records into it
// through the `Metrics` reference (a default instance when none is provided: tests, the CLI).
// Labels are bounded sets (no trigger ids, URLs, origins, project ids or tags). The delivery hot path records
// into plain arrays of counts read at scrape time (its two histograms too); nothing else (the
// gauge of how far behind it sends reads the dispatcher's state when scraped: delivery/behind.ts).
import * as Context from "effect/Context"
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client"
import { ERROR_KINDS, type ErrorKind } from "../domain/errorKind.ts"

/** Where a trigger was created: an API front end, or the materializer (a generator's instance). */
export const CREATED_SOURCES = ["schedule", "declare", "bulk", "materializer"] as const
export type CreatedSource = (typeof CREATED_SOURCES)[number]
const KINDS = ["job", "generator"] as const

/** What followed an attempt: a 2xx, another attempt later, or none (dead letter). */
export const DELIVERY_OUTCOMES = ["succeeded", "retrying", "dead_letter"] as const
export type DeliveryOutcomeName = (typeof DELIVERY_OUTCOMES)[number]
const ERROR_KIND_LABELS = ["none", ...ERROR_KINDS] as const
const STATUS_CLASSES = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"] as const

const LATENESS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

/** Values read when scraped from the parts of the service that hold them. */
export type Probe = "inFlight" | "waiting" | "behind" | "shardsOwned" | "gatesHeld" | "targetsHeld" | "circuitsOpen" | "circuitsProbing"

/** Why a tag was held: the target named a time (Retry-After), or the backoff without one. */
export const HOLD_REASONS = ["retry_after", "backoff"] as const
export type HoldReason = (typeof HOLD_REASONS)[number]

export interface MetricsShape {
  readonly registry: Registry
  readonly triggersCreated: (source: CreatedSource, kind: "job" | "generator", count: number) => void
  /** One attempt's outcome (hot path: an array increment). */
  readonly delivered: (outcome: DeliveryOutcomeName, errorKind: ErrorKind | null, httpStatus: number | null) => void
  /** Actual start − due time of a trigger sent at its time, in seconds (hot path). */
  readonly observeLateness: (seconds: number) => void
  /** How long an attempt took, in seconds (hot path). */
  readonly observeDuration: (seconds: number) => void
  readonly retentionDeleted: (count: number) => void
  /** Day partitions of the executions table made ahead by this node. */
  readonly partitionsCreated: (count: number) => void
  /** Day partitions of the executions table dropped by retention from this node. */
  readonly partitionsDropped: (count: number) => void
  /**
   * A session of the MCP server opened for one /mcp exchange, or its end confirmed by the server
   * (api/mcp/stateless.ts): none stays open once the exchanges are answered.
   */
  readonly mcpSession: (event: "opened" | "ended") => void
  /** A refusal of the target (429, 503) held a tag (or an origin: `target`), or held it longer, cluster-wide. */
  readonly gateHeld: (reason: HoldReason, target: boolean) => void
  /** An origin's circuit opened, settled by this node. */
  readonly circuitOpened: () => void
  /** Registers what a probe reads when scraped (the last registration wins). */
  readonly watch: (probe: Probe, read: () => number) => void
  /** Gauges the ops listener sets before each scrape. */
  readonly gauges: {
    readonly queued: Gauge
    readonly shards: Gauge
    readonly databaseConnections: Gauge<"state">
    readonly databaseConnectionsMax: Gauge
    readonly databaseReachable: Gauge
    readonly loopStaleSeconds: Gauge<"loop">
  }
}

/** A counter over a fixed label space: counts live in an array, handed to prom-client when scraped. */
const tableCounter = (
  registry: Registry,
  name: string,
  help: string,
  labels: ReadonlyArray<readonly [string, ReadonlyArray<string>]>
) => {
  const sizes = labels.map(([, values]) => values.length)
  const cells = sizes.reduce((a, b) => a * b, 1)
  const counts = new Float64Array(cells)
  const labelsOf = (cell: number): Record<string, string> => {
    const out: Record<string, string> = {}
    for (let i = labels.length - 1; i >= 0; i--) {
      const [label, values] = labels[i]!
      out[label] = values[cell % sizes[i]!]!
      cell = Math.floor(cell / sizes[i]!)
    }
    return out
  }
  const labelSets: Array<Record<string, string> | undefined> = []
  new Counter({
    name,
    help,
    labelNames: labels.map(([label]) => label),
    registers: [registry],
    collect() {
      this.reset()
      for (let cell = 0; cell < cells; cell++) {
        if (counts[cell] === 0) continue
        this.inc(labelSets[cell] ??= labelsOf(cell), counts[cell]!)
      }
    }
  })
  return counts
}

/**
 * A histogram without labels whose counts live in an array (one increment per observation, no
 * label lookup), given to the registry as prom-client's own histograms are when scraped.
 */
const tableHistogram = (registry: Registry, name: string, help: string, bounds: ReadonlyArray<number>) => {
  const counts = new Float64Array(bounds.length + 1) // the last one: above every bound
  let sum = 0
  let count = 0
  const values = () => {
    const out: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = []
    let cumulative = 0
    for (let i = 0; i < bounds.length; i++) {
      cumulative += counts[i]!
      out.push({ labels: { le: bounds[i]! }, value: cumulative, metricName: `${name}_bucket` })
    }
    out.push(
      { labels: { le: "+Inf" }, value: count, metricName: `${name}_bucket` },
      { labels: {}, value: sum, metricName: `${name}_sum` },
      { labels: {}, value: count, metricName: `${name}_count` }
    )
    return out
  }
  registry.registerMetric({
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    get: () => Promise.resolve({ name, help, type: "histogram", values: values(), aggregator: "sum" }),
    reset: () => {
      counts.fill(0)
      sum = 0
      count = 0
    }
  } as unknown as Parameters<Registry["registerMetric"]>[0])
  return (value: number): void => {
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    counts[i]! += 1
    sum += value
    count += 1
  }
}

const statusClass = (httpStatus: number | null): number =>
  httpStatus === null || httpStatus < 100 || httpStatus > 599 ? 0 : Math.floor(httpStatus / 100)

const ERROR_KIND_INDEX = new Map<string, number>(ERROR_KIND_LABELS.map((kind, i) => [kind, i]))

export const makeMetrics = (): MetricsShape => {
  const registry = new Registry()
  const probes = new Map<Probe, () => number>()
  const probed = (probe: Probe) => () => probes.get(probe)?.() ?? 0

  const created = tableCounter(registry, "timewheel_triggers_created_total",
    "Triggers created: by /schedule, /declare and /bulk (generators included), and generator instances by the materializer.",
    [["source", CREATED_SOURCES], ["kind", KINDS]])
  const deliveries = tableCounter(registry, "timewheel_deliveries_total",
    "Delivery attempts by what followed them (succeeded, retrying, dead_letter), the error kind when no response came (none otherwise) and the response's status class.",
    [["outcome", DELIVERY_OUTCOMES], ["error_kind", ERROR_KIND_LABELS], ["status_class", STATUS_CLASSES]])
  const deleted = new Counter({
    name: "timewheel_retention_deleted_triggers_total",
    help: "Finished triggers (with their executions) deleted by retention from this node.",
    registers: [registry]
  })
  const partitionsCreated = new Counter({
    name: "timewheel_execution_partitions_created_total",
    help: "Day partitions of the executions table made ahead by this node.",
    registers: [registry]
  })
  const partitionsDropped = new Counter({
    name: "timewheel_execution_partitions_dropped_total",
    help: "Partitions of the executions table (whole days of attempts) dropped by retention from this node.",
    registers: [registry]
  })
  const mcpSessions = new Gauge({
    name: "timewheel_mcp_sessions",
    help: "Sessions the MCP server of this node holds: one per /mcp request being answered, none when idle (no client keeps one).",
    registers: [registry]
  })
  const mcpSessionsOpened = new Counter({
    name: "timewheel_mcp_sessions_opened_total",
    help: "Sessions the MCP server of this node opened, one per /mcp request answered.",
    registers: [registry]
  })
  const lateness = tableHistogram(registry, "timewheel_delivery_lateness_seconds",
    "Actual start of a delivery minus its due time (triggers sent at their time or retry time; not gated, replayed or recovered ones).",
    LATENESS_BUCKETS)
  const duration = tableHistogram(registry, "timewheel_delivery_duration_seconds",
    "Duration of delivery attempts, from sending the request to the end of the response or the failure.",
    DURATION_BUCKETS)
  const probeGauge = (name: string, help: string, probe: Probe) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(probed(probe)()) } })
  probeGauge("timewheel_deliveries_in_flight", "Requests being sent by this node now.", "inFlight")
  probeGauge("timewheel_deliveries_waiting", "Triggers claimed by this node waiting for a sender (MAX_IN_FLIGHT reached).", "waiting")
  probeGauge("timewheel_delivery_behind_seconds",
    "How late the latest trigger this node sent at its time left (as the lateness histogram counts them); 0 when none left in the last second.",
    "behind")
  probeGauge("timewheel_shards_owned", "Shards this node owns now.", "shardsOwned")
  probeGauge("timewheel_tags_held", "Tags held now after a refusal of their target (429, 503), among the gates this node looks after.", "gatesHeld")
  const holds = tableCounter(registry, "timewheel_tag_holds_total",
    "Holds of a tag after a refusal of its target (429, 503) settled by this node: a new hold, or one made longer; by whether the target named the time (retry_after) or the backoff applied (backoff).",
    [["reason", HOLD_REASONS]])
  // origins are never labels (unbounded): per-origin state is in GET /targets and the dashboard
  probeGauge("timewheel_targets_held", "Origins under a target policy held now (a refusal of the target, or an open circuit), among the gates this node looks after.", "targetsHeld")
  const targetHolds = tableCounter(registry, "timewheel_target_holds_total",
    "Holds of an origin under a target policy after a refusal (429, 503) settled by this node, by reason (retry_after, backoff).",
    [["reason", HOLD_REASONS]])
  new Gauge({
    name: "timewheel_target_circuits",
    help: "Circuits of origins not closed now, by state (open, probing), among the gates this node looks after.",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      this.set({ state: "open" }, probed("circuitsOpen")())
      this.set({ state: "probing" }, probed("circuitsProbing")())
    }
  })
  const circuitOpenings = new Counter({
    name: "timewheel_target_circuit_openings_total",
    help: "Circuits of origins opened (from closed, or again after a failed probe), settled by this node.",
    registers: [registry]
  })
  const gauges = {
    queued: new Gauge({
      name: "timewheel_triggers_queued",
      help: "Triggers held back by tag gates (queued), in the whole cluster; NaN when the database could not be read.",
      registers: [registry]
    }),
    shards: new Gauge({ name: "timewheel_shards", help: "Shards of the cluster.", registers: [registry] }),
    databaseConnections: new Gauge({
      name: "timewheel_database_connections",
      help: "This node's PostgreSQL connections (its pool and its shard-lock session) by state, as PostgreSQL lists its sessions.",
      labelNames: ["state"] as const,
      registers: [registry]
    }),
    databaseConnectionsMax: new Gauge({
      name: "timewheel_database_connections_max",
      help: "The most connections this node's pool opens.",
      registers: [registry]
    }),
    databaseReachable: new Gauge({
      name: "timewheel_database_reachable",
      help: "1 when the scheduler's last turn (every second) reached the database, else 0.",
      registers: [registry]
    }),
    loopStaleSeconds: new Gauge({
      name: "timewheel_loop_stale_seconds",
      help: "Seconds since the scheduler and materializer loops last ran (/readyz fails past 30).",
      labelNames: ["loop"] as const,
      registers: [registry]
    })
  }

  const kinds = KINDS.length
  const errorKinds = ERROR_KIND_LABELS.length
  const classes = STATUS_CLASSES.length
  return {
    registry,
    triggersCreated: (source, kind, count) => {
      if (count > 0) created[CREATED_SOURCES.indexOf(source) * kinds + (kind === "job" ? 0 : 1)]! += count
    },
    delivered: (outcome, errorKind, httpStatus) => {
      const o = outcome === "succeeded" ? 0 : outcome === "retrying" ? 1 : 2
      const k = errorKind === null ? 0 : (ERROR_KIND_INDEX.get(errorKind) ?? 0)
      deliveries[(o * errorKinds + k) * classes + statusClass(httpStatus)]! += 1
    },
    observeLateness: (seconds) => lateness(seconds > 0 ? seconds : 0),
    observeDuration: (seconds) => duration(seconds > 0 ? seconds : 0),
    retentionDeleted: (count) => {
      if (count > 0) deleted.inc(count)
    },
    partitionsCreated: (count) => {
      if (count > 0) partitionsCreated.inc(count)
    },
    partitionsDropped: (count) => {
      if (count > 0) partitionsDropped.inc(count)
    },
    mcpSession: (event) => {
      if (event === "opened") {
        mcpSessions.inc()
        mcpSessionsOpened.inc()
      } else {
        mcpSessions.dec()
      }
    },
    gateHeld: (reason, target) => {
      ;(target ? targetHolds : holds)[HOLD_REASONS.indexOf(reason)]! += 1
    },
    circuitOpened: () => circuitOpenings.inc(),
    watch: (probe, read) => void probes.set(probe, read),
    gauges
  }
}

/**
 * The running service's metrics. Without one provided (tests of parts, the CLI), a default instance:
 * what is recorded there is served by nothing.
 */
export const Metrics = Context.Reference<MetricsShape>("timewheel/Metrics", { defaultValue: makeMetrics })

let processRegistry: Registry | undefined

/**
 * Node's process metrics (CPU, memory, heap, GC, handles, and the event-loop delay that
 * `monitorEventLoopDelay` measures: nodejs_eventloop_lag_*), one registry per process.
 */
export const processMetrics = (): Registry => {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 10 })
  }
  return processRegistry
}
