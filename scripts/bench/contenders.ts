// Who runs in each workload, under which label and settings: timewheel, graphile-worker and pg-boss,
// plus graphile-worker at its lowest polling interval in the precision workload; the gated and redrive
// workloads are timewheel's alone (the peers have no tag policies, no bulk actions). timewheel's ingest runs twice: driven by wrk
// (its row, and the ceilings beside it) and by the bench's Node client (the row measured before wrk).
import * as graphileWorker from "./graphileWorker.ts"
import { startPeer } from "./peerProcess.ts"
import * as pgBoss from "./pgBoss.ts"
import type { PeerName, PeerSettings } from "./peers.ts"
import type { Contender } from "./system.ts"
import * as timewheel from "./timewheel.ts"
import { WRK_SETTINGS } from "./wrk.ts"

export type WorkloadName = "ingest" | "delivery" | "precision" | "batch" | "gated" | "redrive"
export type SystemName = Contender["system"]

export const WORKLOADS: ReadonlyArray<WorkloadName> = ["ingest", "delivery", "precision", "batch", "gated", "redrive"]
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
  batch: [
    timewheelContender,
    peer("graphile-worker", "graphile-worker", graphileWorker.SETTINGS.batch),
    peer("pg-boss", "pg-boss", pgBoss.SETTINGS.batch)
  ],
  gated: [timewheelContender],
  redrive: [timewheelContender]
}

export const contendersFor = (workload: WorkloadName, systems: ReadonlyArray<SystemName>) =>
  BY_WORKLOAD[workload].filter((contender) => systems.includes(contender.system))
