// The JSON bodies the read endpoints answer (docs/reading.md "A trigger", "An execution"; the dashboard's
// Dead letters and API keys pages), as types only. The service builds them (views.ts,
// commands/deadLetters.ts, commands/apiKeys.ts) and the dashboard (web/) imports them with `import type`,
// so it reads what the API sends and nothing of src/ reaches its bundle. web/tsconfig.json checks every
// file the dashboard imports with the browser's types: this file and what it imports name nothing of
// Node (no Buffer, no node: modules).
import type { RetryPolicy } from "./retry.ts"
import type { JobOutcome } from "./trigger.ts"

export interface BodyView {
  readonly encoding: "text" | "base64"
  /** The whole body; null when a list leaves it out (`truncated`). */
  readonly value: string | null
  /** Bytes stored. */
  readonly size: number
  readonly truncated?: true
}

/** A trigger's own retry policy: as /schedule, /declare or /bulk stored it (docs/retries.md). */
export type RetryView = RetryPolicy

export interface TriggerView {
  readonly id: string
  readonly kind: "job" | "generator"
  readonly status: string
  /** How it ended: null while pending (and for an active generator). */
  readonly outcome: JobOutcome | null
  readonly scheduledAt: string | null
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: BodyView | null
  readonly contentType: string | null
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly customKey: string | null
  readonly retry: RetryView | null
  readonly generatorId: string | null
  readonly attempts: number
  readonly createdAt: string
  readonly updatedAt: string
}

export interface ExecutionView {
  readonly id: string
  readonly jobId: string
  readonly attempt: number
  readonly status: "succeeded" | "failed"
  readonly startedAt: string
  readonly finishedAt: string
  readonly durationMs: number
  readonly httpStatus: number | null
  readonly responseHeaders: Record<string, string> | null
  readonly responseBody: string | null
  readonly errorKind?: string | null
  readonly errorCode?: string | null
  readonly errorMessage?: string | null
  readonly isDeadLetter: boolean
  readonly connectTimeoutSeconds: number
  readonly timeoutSeconds: number
  readonly triggeredBy: string | null
  readonly url: string
}

export interface DeadLetterView {
  readonly id: string
  readonly kind: string
  readonly generatorId: string | null
  readonly status: string
  readonly method: string
  readonly url: string
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly customKey: string | null
  readonly attempts: number
  /** The dead-letter attempt: the trigger's latest. */
  readonly lastAttempt: {
    readonly id: string
    readonly attempt: number
    readonly finishedAt: string
    readonly httpStatus: number | null
    readonly errorKind: string | null
    readonly errorCode: string | null
    readonly errorMessage: string | null
    /** The first characters of the response body, if one arrived. */
    readonly responseExcerpt: string | null
    /** Where it went (a replay's override URL when it had one). */
    readonly url: string
    readonly triggeredBy: string | null
  }
}

/** A key view of the dashboard: never the key itself, only its hint. */
export interface ApiKeyView {
  readonly id: string
  readonly hint: string
  readonly label: string | null
  readonly createdAt: string
  readonly lastUsedAt: string | null
  readonly revokedAt: string | null
}
