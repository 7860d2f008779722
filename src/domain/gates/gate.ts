// The limits of a gate (docs/tag-policies.md "Fields", "Throughput windows and rates"): what
// a policy's maxConcurrent and throughput windows allow, read the same way by every node. A gate is
// a tag's (its tag policy) or an origin's (its target policy: docs/protecting-targets.md).
// Where a gate's budget lives and how a node spends it: gateLease.ts (shares leased from PostgreSQL)
// and gateBook.ts (a node's permits and window tokens in memory).

import { effectiveWindowMs, isValidRate, windowLabelMs } from "./throughput.ts"
import type { Throughput } from "./throughput.ts"

/** At most `limit` starts in any half-open window (t − windowMs, t]. */
export interface GateWindow {
  readonly label: string
  readonly windowMs: number
  readonly limit: number
}

export interface GateLimits {
  /** A rate of 0 pauses the tag: nothing starts until the policy changes. */
  readonly paused: boolean
  readonly windows: ReadonlyArray<GateWindow>
}

/** Everything a policy limits: concurrency (null: unlimited) and its throughput windows. */
export interface GatePolicyLimits extends GateLimits {
  readonly maxConcurrent: number | null
}

/**
 * The windows a throughput enforces: a rate r ≥ 1 admits floor(r) per window as written (2.5 per
 * `1s` admits 2); 0 < r < 1 admits 1 per window stretched by 1/r (`{"1m": 0.5}` = 1 per 120 s);
 * r = 0 pauses the tag. A window decoding never lets through (malformed label, negative or
 * non-finite rate) also pauses it: a broken policy holds triggers back rather than flood a target.
 */
export const effectiveWindows = (throughput: Throughput | null): GateLimits => {
  const windows: Array<GateWindow> = []
  let paused = false
  for (const [label, rate] of Object.entries(throughput ?? {})) {
    const lengthMs = windowLabelMs(label)
    if (lengthMs === undefined || !isValidRate(rate) || rate === 0) {
      paused = true
      continue
    }
    windows.push({ label, windowMs: effectiveWindowMs(lengthMs, rate), limit: Math.max(1, Math.floor(rate)) })
  }
  return { paused, windows }
}

/** The limits of a policy. */
export const policyLimits = (policy: { readonly maxConcurrent: number | null; readonly throughput: Throughput | null }): GatePolicyLimits => ({
  ...effectiveWindows(policy.throughput),
  maxConcurrent: policy.maxConcurrent
})

/** Whether the limits need a budget at all (a policy of timeouts or retries only holds nothing back but holds). */
export const limitsSomething = (limits: GatePolicyLimits): boolean => limits.maxConcurrent !== null || limits.windows.length > 0

/**
 * Whether a gate's name is an origin (docs/protecting-targets.md): a gate is named by its tag, or by
 * the origin whose target policy it keeps — `https://api.example.com`, with `://`, which no tag has.
 */
export const isOriginGate = (name: string): boolean => name.includes("://")

/**
 * The shard whose owner is told first when triggers come to wait at a gate: a stable hash (FNV-1a)
 * of project and tag, so every node agrees and the gates of a busy project spread over the cluster.
 */
export const gateShardOf = (projectId: string, tag: string, shards: number): number => {
  let hash = 0x811c9dc5
  const key = `${projectId}/${tag}`
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % shards
}
