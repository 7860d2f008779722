// What the benchmark needs from a peer job queue (graphile-worker, pg-boss), implemented by
// graphileWorker.ts and pgBoss.ts and driven inside a child process by peerProcess.ts.
import type { JobSpec } from "./common.ts"

/** The request a peer's task makes when it runs a job: POST `body` to `url`. */
export interface Delivery {
  readonly url: string
  readonly body: string
}

export interface PeerAdapter {
  /** One library call scheduling one job (`addJob`, `send`): what the ingest workload times. */
  readonly add: (job: JobSpec) => Promise<void>
  /**
   * The library's bulk path (`addJobs`, `insert`), used to load the delivery and precision jobs and
   * timed in the batch workload; `keyed`: each job carries its key (`keyOf`) for the library's
   * deduplicating add (graphile-worker `jobKey`, pg-boss `singletonKey` on a `short` queue).
   */
  readonly addMany: (jobs: ReadonlyArray<JobSpec>, keyed?: boolean) => Promise<void>
  /** Starts this process's worker, whose task calls `deliver` for each job. */
  readonly startWorker: (deliver: (job: Delivery) => Promise<void>) => Promise<void>
  /** Stops the worker (if any) and closes the pools. */
  readonly close: () => Promise<void>
}

/** Settings of one peer variant: JSON-serialisable, printed in the report and BENCHMARKS.md. */
export type PeerSettings = Readonly<Record<string, unknown>>

export type PeerName = "graphile-worker" | "pg-boss"

/** The key of a job in the batch workload's keyed variant, the same on every system (timewheel's custom key). */
export const keyOf = (job: JobSpec): string => `job-${job.id}`

/** Job payload stored by the peers. */
export const payloadOf = (job: JobSpec): Delivery => ({ url: job.url, body: job.body })

/** Loads in chunks so one statement never carries the whole workload. */
export const BULK_CHUNK = 1000

export const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
