// The one shape the workloads drive: a started system (timewheel's service, or a peer's child process)
// that takes timed calls, loads jobs by its fastest path, and reports the peak RSS of the process doing
// the work when stopped.
import type { CallBatch, JobSpec } from "./common.ts"

export interface StartedSystem {
  /** Schedules each job with one call (HTTPS `/schedule`, `addJob`, `send`), `concurrency` callers, timed. */
  readonly ingest: (jobs: ReadonlyArray<JobSpec>, concurrency: number, deadlineMs: number) => Promise<CallBatch>
  /** Schedules the jobs as fast as the system allows (untimed); rejects if any could not be scheduled. */
  readonly load: (jobs: ReadonlyArray<JobSpec>, deadlineMs: number) => Promise<void>
  /** Stops the system; resolves the peak RSS (VmHWM, KiB) of the process that did the work. */
  readonly stop: () => Promise<number>
}

/** A system variant of one workload: its column label, the settings shown, and how to start it. */
export interface Contender {
  readonly system: "timewheel" | "graphile-worker" | "pg-boss"
  readonly label: string
  readonly settings: Readonly<Record<string, unknown>>
  /** `worker` true: the system must deliver (delivery, precision); false: ingest only. */
  readonly start: (databaseUrl: string, worker: boolean) => Promise<StartedSystem>
}
