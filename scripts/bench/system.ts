// The one shape the workloads drive: a started system (timewheel's service, or a peer's child process)
// that takes timed calls, loads jobs by its fastest path, and reports the peak RSS of the process doing
// the work when stopped.
import type { CallBatch, JobSpec } from "./common.ts"

/** /declare of n keyed items on one tag: the first call (all added), the same call again (all unchanged). */
export interface DeclareFigures {
  readonly items: number
  readonly firstMs: number
  readonly againMs: number
  /** Longest wait of a claim-like update of a row the call changed, while /declare or /bulk changed 10,000 rows. */
  readonly declareLockWaitMs: number
  readonly bulkLockWaitMs: number
  /** /bulk of the same items, all changed (updated in place), in one call. */
  readonly bulkUpdateMs: number
  readonly declareUpdateMs: number
}

export interface StartedSystem {
  /** Schedules each job with one call (HTTPS `/schedule`, `addJob`, `send`), `concurrency` callers, timed. */
  readonly ingest: (jobs: ReadonlyArray<JobSpec>, concurrency: number, deadlineMs: number) => Promise<CallBatch>
  /** Schedules the jobs as fast as the system allows (untimed); rejects if any could not be scheduled. */
  readonly load: (jobs: ReadonlyArray<JobSpec>, deadlineMs: number) => Promise<void>
  /**
   * Schedules the jobs `batchSize` per call with the system's batch API (`/bulk` upserts, `addJobs`,
   * `insert`), `concurrency` callers, each call timed; `keyed`: each job with its key (peers.ts
   * `keyOf`: timewheel's custom key, graphile-worker's `jobKey`, pg-boss's `singletonKey`).
   */
  readonly batch: (jobs: ReadonlyArray<JobSpec>, batchSize: number, concurrency: number, deadlineMs: number, keyed: boolean) => Promise<CallBatch>
  /** timewheel only: the /declare measurements of the batch workload (workloads.ts DeclareFigures). */
  readonly declare?: (jobs: ReadonlyArray<JobSpec>, deadlineMs: number) => Promise<DeclareFigures>
  /** timewheel only: creates a tag policy of the project (`POST /tag-policies` with this body); rejects unless 201. */
  readonly tagPolicy?: (policy: Readonly<Record<string, unknown>>) => Promise<void>
  /**
   * timewheel only: creates a target policy (`POST /target-policies` with this body), resolving its
   * id, and deletes one by id. Reject unless 201 / 204.
   */
  readonly targetPolicy?: (policy: Readonly<Record<string, unknown>>) => Promise<string>
  readonly deleteTargetPolicy?: (id: string) => Promise<void>
  /** timewheel only: schedules one job with one call (the nodes of a cluster in turn), for a background load. */
  readonly scheduleOne?: (job: JobSpec) => Promise<void>
  /** timewheel only: where its HTTPS API answers, for a client of another kind (wrk) to call it. */
  readonly endpoint?: { readonly origin: string; readonly apiKey: string; readonly headerPrefix: string }
  /** The process that does the work (timewheel's service, a peer's worker), for its CPU time. */
  readonly pid: number
  /** Stops the system; resolves the peak RSS (VmHWM, KiB) of the process that did the work. */
  readonly stop: () => Promise<number>
}

/** A system variant of one workload: its column label, the settings shown, and how to start it. */
export interface Contender {
  readonly system: "timewheel" | "graphile-worker" | "pg-boss"
  readonly label: string
  readonly settings: Readonly<Record<string, unknown>>
  /** Who makes the ingest workload's calls: the bench's Node client (default) or wrk (timewheel's HTTPS API only). */
  readonly client?: "wrk"
  /** timewheel: service processes sharing the database (default 1). */
  readonly nodes?: number
  /** `worker` true: the system must deliver (delivery, precision); false: ingest only. */
  readonly start: (databaseUrl: string, worker: boolean) => Promise<StartedSystem>
}
