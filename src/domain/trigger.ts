// A trigger as the service keeps it: its stored definition (what /schedule, /declare and /bulk write
// and delivery sends), its statuses and the sets of them the rules speak of, the row delivery works
// on, and the shard a trigger id belongs to.
import type { RetryPolicy } from "./retry.ts"

export type HeaderPairs = ReadonlyArray<readonly [string, string]>

export interface TriggerDefinition {
  readonly url: string
  readonly method: string
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
  readonly contentType: string | null
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly customKey: string | null
  readonly retry: RetryPolicy | null
}

export const TRIGGER_KINDS = ["job", "generator"] as const
export type TriggerKind = (typeof TRIGGER_KINDS)[number]

/** Every stored status: a one-shot's seven and a generator's `active` (docs/reading.md "A trigger"). */
export const TRIGGER_STATUSES = ["registered", "skipped", "queued", "running", "retrying", "completed", "cancelled", "active"] as const
export type TriggerStatus = (typeof TRIGGER_STATUSES)[number]

/**
 * How a finished trigger ended (docs/reading.md "A trigger": a dead letter's status is `completed`
 * too): its latest attempt delivered or dead-lettered, or it was cancelled or skipped. Pending triggers
 * and active generators have none.
 */
export const JOB_OUTCOMES = ["delivered", "dead_letter", "cancelled", "skipped"] as const
export type JobOutcome = (typeof JOB_OUTCOMES)[number]

/** A trigger's latest attempt, as far as its outcome goes. */
export interface LatestAttempt {
  readonly succeeded: boolean
  readonly isDeadLetter: boolean
}

/** The outcome of a trigger in `status` whose latest attempt is `latest` (read only for a completed one). */
export const outcomeOf = (status: string, latest: LatestAttempt | undefined): JobOutcome | null =>
  status === "cancelled" || status === "skipped" ? status
  : status !== "completed" || latest === undefined ? null
  : latest.isDeadLetter ? "dead_letter"
  : latest.succeeded ? "delivered"
  : null

/** Statuses in which a one-shot trigger can still be edited or cancelled ("pending"). */
export const PENDING_STATUSES = ["registered", "skipped", "retrying"] as const satisfies ReadonlyArray<TriggerStatus>
/** A custom key belongs to at most one trigger in these statuses: a pending one-shot or an active generator. */
export const KEY_OWNER_STATUSES = [...PENDING_STATUSES, "active"] as const satisfies ReadonlyArray<TriggerStatus>
/** Statuses the scheduler fires from: at their time, or at the time of their next retry. */
export const DUE_STATUSES = ["registered", "retrying"] as const satisfies ReadonlyArray<TriggerStatus>
/** Claimed by a node (waiting for or in delivery): what crash recovery looks for. */
export const CLAIMED_STATUSES = ["queued", "running"] as const satisfies ReadonlyArray<TriggerStatus>

export const isPendingStatus = (status: string): boolean => (PENDING_STATUSES as ReadonlyArray<string>).includes(status)

/** A trigger handed to delivery: what to send, and what decides what follows the attempt. */
export interface DeliveryRow {
  readonly id: string
  readonly shard: number
  /** Set when the trigger is a generator's instance: its generator needs a next instance. */
  readonly generatorId: string | null
  readonly projectId: string
  readonly url: string
  readonly method: string
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
  readonly contentType: string | null
  readonly tags: ReadonlyArray<string>
  /** 1-based number of the attempt about to be made. */
  readonly attempt: number
  /** The per-trigger retry policy as stored, if any. */
  readonly retry: unknown
  /** The project default retry policy as stored: its JSON text (parsed only for an attempt that failed). */
  readonly projectRetry: unknown
  readonly triggeredBy: string | null
  /** The project's signing secrets now: the current one, then the previous one during a rotation. */
  readonly signingSecrets: ReadonlyArray<string>
  /**
   * Its tags whose policy gates it (concurrency or throughput): it was admitted by their gates and
   * holds a place in each until its outcome is recorded. Empty for an ungated trigger.
   */
  readonly gateTags: ReadonlyArray<string>
  /** Its scheduled time (for the lateness of a first attempt); null when it has none. */
  readonly scheduledAtMs: number | null
  /**
   * Set when the trigger was fired by its shard's mark (store/shardMarks.ts) rather than claimed:
   * it is still registered or retrying in the database, its attempt not yet counted, and its
   * outcome is recorded only while it is as it was fetched (`seenUs`: its updated_at in µs).
   */
  readonly fired: { readonly seenUs: string } | null
  /** The W3C trace context of the call that wrote it (stored when tracing was on), for its attempt's span. */
  readonly traceparent: string | null
  readonly tracestate: string | null
}

/**
 * A claimed trigger: what to send, and when (its due time, at most the claim lead ahead). With
 * `gateTags`, it is not to be sent: it waits (queued) until its gates admit it.
 */
export interface ClaimedRow extends DeliveryRow {
  readonly dueAtMs: number
}

/** Shard of a trigger: from the random tail of its UUIDv7, so shards fill evenly. */
export const shardOf = (id: string, shards: number): number => parseInt(id.slice(-8), 16) % shards
