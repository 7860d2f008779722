// Who runs in each workload, under which label and settings: timewheel, graphile-worker and pg-boss,
// plus graphile-worker at its lowest polling interval in the precision workloads (precision-fast: at ten
// times the rate, timewheel and that graphile-worker only); the gated and redrive workloads are
// timewheel's alone (the peers have no tag policies, no bulk actions), gated on one node and on three
// sharing the database. timewheel's ingest runs twice: driven by wrk
// (its row, and the ceilings beside it) and by the bench's Node client (the row measured before wrk).
// With --encryption and --tracing, the delivery workload also runs timewheel with ENCRYPTION_KEYS set
// and with tracing on (to a discarding OTLP receiver, otlpSink.ts), each beside the plain run.
import * as crypto from "node:crypto"
import * as graphileWorker from "./graphileWorker.ts"
import { startOtlpSink } from "./otlpSink.ts"
import { startPeer } from "./peerProcess.ts"
import * as pgBoss from "./pgBoss.ts"
import type { PeerName, PeerSettings } from "./peers.ts"
import type { Contender } from "./system.ts"
import * as timewheel from "./timewheel.ts"
import { WRK_SETTINGS } from "./wrk.ts"

export type WorkloadName = "ingest" | "delivery" | "precision" | "precision-fast" | "batch" | "gated" | "redrive"
export type SystemName = Contender["system"]

export const WORKLOADS: ReadonlyArray<WorkloadName> = ["ingest", "delivery", "precision", "precision-fast", "batch", "gated", "redrive"]
export const SYSTEMS: ReadonlyArray<SystemName> = ["timewheel", "graphile-worker", "pg-boss"]

const timewheelContender: Contender = {
  system: "timewheel",
  label: "timewheel",
  settings: timewheel.SETTINGS,
  start: (databaseUrl) => timewheel.startTimewheel(databaseUrl)
}

/** The ingest workload's timewheel row: its calls made by wrk (ingestWrk.ts), not the bench's Node client. */
const timewheelWrk: Contender = {
  ...timewheelContender,
  client: "wrk",
  settings: { ...timewheel.SETTINGS, client: WRK_SETTINGS }
}

/** The ingest row as it was measured before wrk: the bench's undici client, kept so that old figures compare. */
const timewheelNodeClient: Contender = { ...timewheelContender, label: "timewheel (node client)" }

const peer = (system: PeerName, label: string, settings: PeerSettings): Contender => ({
  system,
  label,
  settings,
  start: (databaseUrl, worker) => startPeer(system, settings, databaseUrl, worker)
})

const BY_WORKLOAD: Record<WorkloadName, ReadonlyArray<Contender>> = {
  ingest: [
    timewheelWrk,
    timewheelNodeClient,
    peer("graphile-worker", "graphile-worker", graphileWorker.SETTINGS.ingest),
    peer("pg-boss", "pg-boss", pgBoss.SETTINGS.ingest)
  ],
  delivery: [
    timewheelContender,
    peer("graphile-worker", "graphile-worker", graphileWorker.SETTINGS.delivery),
    peer("pg-boss", "pg-boss", pgBoss.SETTINGS.delivery)
  ],
  precision: [
    timewheelContender,
    peer("graphile-worker", "graphile-worker", graphileWorker.SETTINGS.precision),
    peer("graphile-worker", "graphile-worker (1 ms poll)", graphileWorker.SETTINGS.precisionLowestPolling),
    peer("pg-boss", "pg-boss", pgBoss.SETTINGS.precision)
  ],
  // ten times the rate (2,000 due/s with the default --precision-n): the peers at their default polling are
  // a second or two late at any rate, so only graphile-worker at its lowest polling stands beside timewheel
  "precision-fast": [
    timewheelContender,
    peer("graphile-worker", "graphile-worker (1 ms poll)", graphileWorker.SETTINGS.precisionLowestPolling)
  ],
  batch: [
    timewheelContender,
    peer("graphile-worker", "graphile-worker", graphileWorker.SETTINGS.batch),
    peer("pg-boss", "pg-boss", pgBoss.SETTINGS.batch)
  ],
  gated: [timewheelContender, {
    ...timewheelContender,
    label: "timewheel (3 nodes)",
    nodes: 3,
    settings: { ...timewheel.SETTINGS, nodes: 3 },
    start: (databaseUrl) => timewheel.startTimewheel(databaseUrl, {}, 3)
  }],
  redrive: [timewheelContender]
}

/** The optional timewheel variants of the delivery workload (`--encryption`, `--tracing`). */
export interface Variants {
  readonly encryption: boolean
  readonly tracing: boolean
}

/** timewheel with every stored header and body encrypted (one key, random per run). */
const timewheelEncrypted: Contender = {
  ...timewheelContender,
  label: "timewheel (encrypted)",
  settings: { ...timewheel.SETTINGS, service: { ...timewheel.SETTINGS.service, ENCRYPTION_KEYS: "one key (bench:<random>)" } },
  start: (databaseUrl) => timewheel.startTimewheel(databaseUrl, { ENCRYPTION_KEYS: `bench:${crypto.randomBytes(32).toString("base64")}` })
}

/** timewheel exporting its spans (protobuf, every 5 s) to a local receiver that discards them. */
const timewheelTraced: Contender = {
  ...timewheelContender,
  label: "timewheel (tracing)",
  settings: { ...timewheel.SETTINGS, service: { ...timewheel.SETTINGS.service, OTEL_EXPORTER_OTLP_ENDPOINT: "local discarding receiver" } },
  start: async (databaseUrl) => {
    const receiver = await startOtlpSink()
    const system = await timewheel.startTimewheel(databaseUrl, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin }).catch(async (error: unknown) => {
      await receiver.stop()
      throw error
    })
    return {
      ...system,
      stop: async () => {
        const rss = await system.stop()
        const { exports, bytes } = receiver.received()
        process.stderr.write(`  tracing: ${exports} exports, ${Math.round(bytes / 1024)} KiB of spans received\n`)
        await receiver.stop()
        return rss
      }
    }
  }
}

export const contendersFor = (workload: WorkloadName, systems: ReadonlyArray<SystemName>, variants: Variants = { encryption: false, tracing: false }) => {
  const extra = workload === "delivery"
    ? [...(variants.encryption ? [timewheelEncrypted] : []), ...(variants.tracing ? [timewheelTraced] : [])]
    : []
  const all = [...BY_WORKLOAD[workload]]
  all.splice(1, 0, ...extra) // right after timewheel's plain run
  return all.filter((contender) => systems.includes(contender.system))
}
