// The service's errors as docs/errors.md names them, with no HTTP in them: every use case fails
// with one of these, whatever called it (HTTP API, CLI, MCP tools, dashboard). `api/errors.ts` maps
// a tag to a status and a body; the CLI prints the message. Plain classes with a `_tag`, so the
// pure domain needs no library; Effect's `catchTag` works on them as on any tagged value.
//
// Every error may carry a `hint` (docs/errors.md "Error hints"): one line naming what was wrong, sent
// as the `Timewheel-Error` header of the 4xx answer while the body stays exactly as documented.
// Without one the message is the hint; MalformedRequest, whose body is empty, must be given one.

abstract class SpecError<Tag extends string> extends Error {
  abstract readonly _tag: Tag
  /** What was wrong, for the `Timewheel-Error` header; the message when undefined. */
  readonly hint: string | undefined
  constructor(message: string, hint?: string) {
    super(message)
    this.hint = hint
  }
}

/** 400: a header, field or value is invalid. */
export class BadRequest extends SpecError<"BadRequest"> {
  readonly _tag = "BadRequest" as const
}
/** 401: the key does not exist, or no credentials. */
export class Unauthorized extends SpecError<"Unauthorized"> {
  readonly _tag = "Unauthorized" as const
}
/** 402: the monthly quota is used up (only /schedule). */
export class QuotaExceeded extends SpecError<"QuotaExceeded"> {
  readonly _tag = "QuotaExceeded" as const
}
/** 404: the trigger (or tag policy, project, key…) does not exist. */
export class NotFound extends SpecError<"NotFound"> {
  readonly _tag = "NotFound" as const
}
/** 410: the trigger exists but can no longer be edited or cancelled. */
export class Gone extends SpecError<"Gone"> {
  readonly _tag = "Gone" as const
}
/** 409: the thing to create exists already (a project name, an admin e-mail). */
export class Conflict extends SpecError<"Conflict"> {
  readonly _tag = "Conflict" as const
}
/** 403: a dashboard session's mutation from another origin (the `Origin` check). */
export class Forbidden extends SpecError<"Forbidden"> {
  readonly _tag = "Forbidden" as const
}
/** 429: too many failed dashboard sign-ins for an account or an address; retry after that many seconds. */
export class TooManyRequests extends SpecError<"TooManyRequests"> {
  readonly _tag = "TooManyRequests" as const
  readonly retryAfterSeconds: number
  constructor(message: string, retryAfterSeconds: number) {
    super(message)
    this.retryAfterSeconds = retryAfterSeconds
  }
}
/**
 * 503: something the service needs cannot be reached right now (docs/errors.md: the database);
 * the caller may retry shortly.
 */
export class ServiceUnavailable extends SpecError<"ServiceUnavailable"> {
  readonly _tag = "ServiceUnavailable" as const
}
/**
 * The API's `400` with an empty body: a required header missing (/schedule, /cancel), or a JSON
 * body of the wrong shape (/declare, /bulk, /tag-policies). The hint is all the caller learns, so it
 * is required: `missing header ttr-url`, `items[2].url is required (a string)`.
 */
export class MalformedRequest extends SpecError<"MalformedRequest"> {
  readonly _tag = "MalformedRequest" as const
  constructor(hint: string) {
    super("Malformed request", hint)
  }
}

export type SpecFailure =
  | BadRequest
  | Unauthorized
  | QuotaExceeded
  | NotFound
  | Gone
  | Conflict
  | Forbidden
  | TooManyRequests
  | ServiceUnavailable
  | MalformedRequest

const TAGS: ReadonlySet<string> = new Set([
  "BadRequest", "Unauthorized", "QuotaExceeded", "NotFound", "Gone", "Conflict", "Forbidden", "TooManyRequests", "ServiceUnavailable",
  "MalformedRequest"
])

export const isSpecFailure = (error: unknown): error is SpecFailure =>
  error instanceof Error && "_tag" in error && TAGS.has((error as { _tag: string })._tag)
