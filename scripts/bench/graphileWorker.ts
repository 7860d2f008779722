// graphile-worker as a peer: `addJob` through WorkerUtils for ingest, `addJobs` to load and to batch (with a
// `jobKey` per job in the batch workload's keyed variant), and `run()`
// with a task `hit` making the request. Its settings per workload are the SETTINGS below (LISTEN/NOTIFY
// is always on in graphile-worker: add_job notifies, the pool listens).
import { Logger, makeWorkerUtils, run } from "graphile-worker"
import type { Runner, WorkerUtils } from "graphile-worker"
import type { JobSpec } from "./common.ts"
import { BULK_CHUNK, chunks, keyOf, payloadOf } from "./peers.ts"
import type { Delivery, PeerAdapter, PeerSettings } from "./peers.ts"

export const SETTINGS = {
  /** 32 callers of `addJob`; a pool as large as the number of callers. */
  ingest: { maxPoolSize: 32 },
  /** 4 callers of `addJobs` with 1,000 jobs each (workloads.ts BATCH_CONCURRENCY); a pool as large. */
  batch: { maxPoolSize: 4 },
  /**
   * Batched fetching and completion (docs "performance#batching"); pool concurrency + 2 as its docs
   * recommend (and below which it warns); 100 ms poll to notice the due instant.
   */
  delivery: {
    concurrency: 128,
    maxPoolSize: 130,
    pollInterval: 100,
    localQueue: { size: 1000 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0
  },
  /** As delivery, at the default 2 s poll interval. */
  precision: {
    concurrency: 128,
    maxPoolSize: 130,
    pollInterval: 2000,
    localQueue: { size: 1000 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0
  },
  /** As delivery, at the lowest polling interval (1 ms). */
  precisionLowestPolling: {
    concurrency: 128,
    maxPoolSize: 130,
    pollInterval: 1,
    localQueue: { size: 1000 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0
  }
} as const satisfies Record<string, PeerSettings>

interface WorkerSettings {
  readonly concurrency: number
  readonly maxPoolSize: number
  readonly pollInterval: number
  readonly localQueue: { readonly size: number }
  readonly completeJobBatchDelay: number
  readonly failJobBatchDelay: number
}

/** Warnings and errors only. */
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`graphile-worker ${level}: ${message}\n`)
})

const TASK = "hit"

export const openGraphileWorker = async (databaseUrl: string, settings: PeerSettings): Promise<PeerAdapter> => {
  const poolSize = Number(settings.maxPoolSize ?? 10)
  const utils: WorkerUtils = await makeWorkerUtils({ connectionString: databaseUrl, maxPoolSize: poolSize, logger })
  await utils.migrate()
  let runner: Runner | undefined
  return {
    add: async (job: JobSpec) => {
      await utils.addJob(TASK, payloadOf(job), { runAt: new Date(job.runAtMs) })
    },
    addMany: async (jobs, keyed = false) => {
      for (const chunk of chunks(jobs, BULK_CHUNK)) {
        // jobKey: one job per key; adding a key again replaces the waiting job (not one already running)
        await utils.addJobs(chunk.map((job) => ({
          identifier: TASK, payload: payloadOf(job), runAt: new Date(job.runAtMs), ...(keyed ? { jobKey: keyOf(job) } : {})
        })))
      }
    },
    startWorker: async (deliver) => {
      const worker = settings as unknown as WorkerSettings
      runner = await run({
        connectionString: databaseUrl,
        concurrency: worker.concurrency,
        maxPoolSize: worker.maxPoolSize,
        pollInterval: worker.pollInterval,
        noHandleSignals: true,
        logger,
        crontab: "",
        taskList: { [TASK]: async (payload) => deliver(payload as Delivery) },
        preset: {
          worker: {
            localQueue: { size: worker.localQueue.size },
            completeJobBatchDelay: worker.completeJobBatchDelay,
            failJobBatchDelay: worker.failJobBatchDelay
          }
        }
      })
    },
    close: async () => {
      if (runner !== undefined) await runner.stop()
      await utils.release()
    }
  }
}
