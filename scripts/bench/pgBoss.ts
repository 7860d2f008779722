// pg-boss as a peer: `send` for ingest, `insert` to load and to batch (keyed variant: `singletonKey` on a queue
// of policy `short`), and `work()` with a batch handler making the
// requests of each fetched batch concurrently. LISTEN/NOTIFY is on (`useListenNotify`, queue `notify`),
// but pg-boss notifies only for a job already due when inserted, never when a deferred one becomes due;
// so the notify backstop poll is set to the base poll, or deferred jobs would wait up to its 30 s default.
import { PgBoss } from "pg-boss"
import type { Job } from "pg-boss"
import type { JobSpec } from "./common.ts"
import { BULK_CHUNK, chunks, keyOf, payloadOf } from "./peers.ts"
import type { Delivery, PeerAdapter, PeerSettings } from "./peers.ts"

export const SETTINGS = {
  /** 32 callers of `send`; a pool as large as the number of callers. */
  ingest: { max: 32, useListenNotify: true, queue: { notify: true } },
  /** 4 callers of `insert` with 1,000 jobs each (workloads.ts BATCH_CONCURRENCY); a pool as large. */
  batch: { max: 4, useListenNotify: true, queue: { notify: true } },
  /** Batch fetch with burst (docs "workers"), at the minimum 0.5 s poll to notice the due instant. */
  delivery: {
    max: 10,
    useListenNotify: true,
    queue: { notify: true },
    work: { batchSize: 200, localConcurrency: 4, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }
  },
  /** As delivery, at the default 2 s poll interval. */
  precision: {
    max: 10,
    useListenNotify: true,
    queue: { notify: true },
    work: { batchSize: 200, localConcurrency: 4, burstWhenBatchFull: true, pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 }
  }
} as const satisfies Record<string, PeerSettings>

interface BossSettings {
  readonly max?: number
  readonly useListenNotify?: boolean
  readonly queue?: { readonly notify?: boolean }
  readonly work?: {
    readonly batchSize: number
    readonly localConcurrency: number
    readonly burstWhenBatchFull: boolean
    readonly pollingIntervalSeconds: number
    readonly notifyPollingIntervalSeconds: number
  }
}

const QUEUE = "hit"
/**
 * The batch workload's keyed variant: a queue of policy `short`, whose unique index allows one queued
 * job per `singletonKey`; `insert` ends in ON CONFLICT DO NOTHING, so a key already queued is skipped
 * (the queued job is kept as it was). pg-boss's `upsert` edits a queued job instead, but one job per call.
 */
const KEYED_QUEUE = "hit_keyed"

export const openPgBoss = async (databaseUrl: string, raw: PeerSettings): Promise<PeerAdapter> => {
  const settings = raw as BossSettings
  const boss = new PgBoss({
    connectionString: databaseUrl,
    max: settings.max ?? 10,
    useListenNotify: settings.useListenNotify ?? false,
    application_name: "bench-pg-boss"
  })
  boss.on("error", (error) => process.stderr.write(`pg-boss error: ${String(error)}\n`))
  await boss.start()
  await boss.createQueue(QUEUE, { notify: settings.queue?.notify ?? false })
  await boss.createQueue(KEYED_QUEUE, { notify: settings.queue?.notify ?? false, policy: "short" })
  return {
    add: async (job: JobSpec) => {
      const id = await boss.send(QUEUE, payloadOf(job), { startAfter: new Date(job.runAtMs) })
      if (id === null) throw new Error("pg-boss send returned null")
    },
    addMany: async (jobs, keyed = false) => {
      for (const chunk of chunks(jobs, BULK_CHUNK)) {
        await boss.insert(keyed ? KEYED_QUEUE : QUEUE, chunk.map((job) => ({
          data: payloadOf(job), startAfter: new Date(job.runAtMs), ...(keyed ? { singletonKey: keyOf(job) } : {})
        })))
      }
    },
    startWorker: async (deliver) => {
      const work = settings.work
      if (work === undefined) throw new Error("pg-boss settings without work options")
      await boss.work<Delivery>(QUEUE, { ...work }, async (jobs: Array<Job<Delivery>>) => {
        await Promise.all(jobs.map((job) => deliver(job.data)))
      })
    },
    close: async () => {
      await boss.stop({ graceful: true, timeout: 10_000 })
    }
  }
}
