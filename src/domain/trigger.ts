// The stored definition of a trigger (what /schedule, /declare and /bulk write and delivery sends),
// and the shard a trigger id belongs to.
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

/** Statuses in which a one-shot trigger can still be edited or cancelled ("pending"). */
export const PENDING_STATUSES = ["registered", "skipped", "retrying"] as const

/** Shard of a trigger: from the random tail of its UUIDv7, so shards fill evenly. */
export const shardOf = (id: string, shards: number): number => parseInt(id.slice(-8), 16) % shards
