// The MCP tools of POST /mcp (docs/mcp.md): one per public capability, each with the JSON schema of its
// arguments and a description written for a model that has never seen the service, plus the server
// instructions that explain the service once. Schemas check types and enum words (a wrong one is the
// JSON-RPC "invalid params" error, the tool form of the API's empty 400); ranges and formats are left
// to the same validation as the HTTP endpoints, so their messages are the API's. Read-only tools say
// so (effect/ai's default annotations claim destructive). Handlers are in mcp/handlers.ts.
import * as Schema from "effect/Schema"
import { Tool, Toolkit } from "effect/ai"
import { EXECUTION_STATUSES } from "../../commands/logs.ts"
import { RETRY_ONS, RETRY_STRATEGIES } from "../../domain/retry.ts"
import { bulkActionTools, FILTER_ARGUMENTS } from "./bulkTools.ts"
import { targetPolicyTools } from "./targetTools.ts"
import { ToolError } from "./results.ts"
import { dependencies, described, optional, readOnly, titled, writes } from "./toolParts.ts"

export const MAX_CRON_NEXT_COUNT = 100

export const mcpInstructions = (prefix: string) =>
  [
    "timewheel stores HTTP requests and sends them later. A trigger (kind \"job\") is one request sent once, at its",
    "time; a generator (kind \"generator\") sends one on a cron schedule, creating an ordinary trigger (an instance)",
    "for each run. Everything is scoped to the project of the API key of this connection.",
    "Trigger statuses: registered (waiting for its time), skipped (its time had passed when it was scheduled: never",
    "sent), queued (due, or held back by a tag policy), running (being sent), retrying (an attempt failed, another",
    "follows), completed (no more attempts: read its executions for the outcome), cancelled. A generator is active or",
    "cancelled. Each attempt to send is an execution: succeeded (a 2xx response) or failed (httpStatus, or errorKind",
    "when no response came), isDeadLetter when nothing more will be tried.",
    "Times are ISO 8601 UTC with milliseconds. Lists are newest first and paginated: pass nextCursor back as cursor",
    "(null: last page).",
    "A failed call is a tool result with isError true and {\"_tag\",\"message\"}: BadRequest (a value is invalid; the",
    "message says which), NotFound, Gone (can no longer be edited or cancelled), Conflict, QuotaExceeded (the",
    "monthly quota of schedule_trigger calls is used up), ServiceUnavailable (retry in a second).",
    `Headers starting with ${prefix}- configure timewheel itself and are never sent by schedule_trigger.`
  ].join(" ")

// ---------------------------------------------------------------------------------------------
// Shared argument schemas

const SCHEDULED_AT =
  "When to send. Once: `now` or an ISO 8601 date (`2030-01-31T09:00:00Z`; no offset means UTC), optionally " +
  "followed by operations applied left to right, `| add <n><unit>` or `| subtract <n><unit>` with unit s, m, h, d " +
  "or w (`now | add 10m`). Recurring: `cron(<expression>[, <IANA time zone>])` with 5 fields (minute hour " +
  "day-of-month month day-of-week) or 6 (leading seconds), e.g. `cron(0 9 * * MON-FRI, Europe/Paris)`, or an alias " +
  "such as `cron(@daily)`; default zone UTC. Preview a cron value with cron_next."

const BODY =
  "What to send as the body. A JSON value is sent as compact JSON (a string keeps its quotes); " +
  "{\"_tag\":\"text\",\"value\":\"…\"} sends the text as is; {\"_tag\":\"base64\",\"value\":\"…\"} sends the decoded " +
  "bytes. Omit (or null) for no body."

const RETRY_DEFAULTS =
  "Missing fields take: strategy exponential, maxAttempts 3, initialDelaySeconds 30, maxDelaySeconds none, jitter " +
  "false, retryOn 5xx_and_network; {} opts in with all defaults."

const RetryObject = Schema.Struct({
  strategy: optional(Schema.Literals(RETRY_STRATEGIES), "none (one attempt only), fixed (initialDelaySeconds between attempts) or exponential (the delay doubles each time)."),
  maxAttempts: optional(Schema.Int, "Attempts in all, counting the first, 1 to 2147483647."),
  initialDelaySeconds: optional(Schema.Int, "Delay before the second attempt, 0 to 86400."),
  maxDelaySeconds: optional(Schema.Int, "Cap of an exponential delay, 0 to 86400."),
  jitter: optional(Schema.Boolean, "true multiplies each delay by a random 0.5 to 1.5."),
  retryOn: optional(
    Schema.Literals(RETRY_ONS),
    "What is retried: network_only (no response came), 5xx_and_network (also 5xx responses) or non_2xx (any non-2xx response)."
  )
})

const Item = Schema.Struct({
  url: described(Schema.String, "Target URL, query string included."),
  scheduledAt: optional(Schema.String, `Default now. ${SCHEDULED_AT}`),
  customKey: optional(Schema.String, "Your key for this trigger: a later call with the same key updates it instead of adding another."),
  method: optional(Schema.String, "HTTP method, default GET (upper-cased). The body is sent with every method."),
  headers: optional(
    Schema.Record(Schema.String, Schema.String),
    "Headers sent as written (names lower-cased). No Content-Type is added: a body without one arrives as application/octet-stream, so set content-type for JSON."
  ),
  body: optional(Schema.Json, BODY),
  title: optional(Schema.String, "A label (any text). A generator copies it onto its instances."),
  tags: optional(Schema.Array(Schema.String), "Tags of the trigger (no tag twice)."),
  retry: optional(RetryObject, `Retry policy of this trigger (without one, its tag policies' or the project's applies). ${RETRY_DEFAULTS}`)
}).annotate({ description: "A trigger (or, with a cron scheduledAt, a generator) as it should be." })

const OPERATIONS_RESULT =
  "operations: one entry per item in order ({operation: added|skipped|unchanged|updated, customKey, kind, id, " +
  "changedFields on updated}), then one {operation: cancelled, …} per cancelled trigger."

const limit = optional(Schema.Int, "Page size, 1 to 500 (default 50).")
const cursor = optional(Schema.String, "nextCursor of the previous page.")

const TAG_POLICY_FIELDS = {
  maxConcurrent: optional(Schema.NullOr(Schema.Int), "At most this many of the tag's requests in flight at once (at least 1)."),
  requestTimeoutSeconds: optional(
    Schema.NullOr(Schema.Int),
    "Timeout of each delivery of the tag's triggers, 1 to 3600 seconds (the shortest across a trigger's tags wins; default 300)."
  ),
  throughput: optional(
    Schema.NullOr(Schema.Record(Schema.String, Schema.Finite)),
    "Windows to rates, e.g. {\"1s\": 10, \"1h\": 500}: at most that many of the tag's triggers start within any sliding window " +
      "of that length. A window is a whole number followed by s, m, h or d; at most 8 windows. A rate below 1 stretches " +
      "the window ({\"1m\": 0.5}: one per two minutes, at most 30 days); 0 pauses the tag."
  ),
  retryStrategy: optional(
    Schema.NullOr(Schema.Literals(RETRY_STRATEGIES)),
    "Retry policy of the tag's triggers that have none of their own: none, fixed or exponential."
  ),
  retryMaxAttempts: optional(Schema.NullOr(Schema.Int), "Attempts in all, counting the first (at least 1; null: unlimited; default 3)."),
  retryInitialDelaySeconds: optional(
    Schema.NullOr(Schema.Int),
    "First delay (every delay with fixed), 0 to 86400; required with fixed or exponential."
  ),
  retryMaxDelaySeconds: optional(Schema.NullOr(Schema.Int), "Cap of an exponential delay, 0 to 86400 (null: no cap)."),
  retryOn: optional(
    Schema.NullOr(Schema.Literals(RETRY_ONS)),
    "network_only, 5xx_and_network (default) or non_2xx."
  )
}

const TAG_POLICY_RESULT =
  "Answers the policy: id, tag, every field above (unset ones null), createdAt, updatedAt, and the live counts " +
  "queued (the tag's triggers held back now), inFlight (being sent now) and heldUntil (the end of a hold after a 429 or 503 of the target, or null)."

// ---------------------------------------------------------------------------------------------
// Tools

export const mcpToolkit = (prefix: string) =>
  Toolkit.make(
    titled(writes(Tool.make("schedule_trigger", {
      description:
        "Create or edit a trigger: an HTTP request timewheel stores now and sends to `url` later, once (scheduledAt a " +
        "date) or on a cron schedule (scheduledAt `cron(...)`: a generator, whose first run is created at once). Each " +
        "call costs one unit of the project's monthly quota, edits included (QuotaExceeded when used up). With " +
        "customKey, a later call with the same key edits that trigger or generator instead of adding one (scheduling " +
        "the other kind under the key replaces it); with triggerId, edits that trigger (a date) or generator (a cron " +
        "value): NotFound when there is none, Gone when it can no longer be edited. An edit replaces the whole " +
        "definition: send every field again. A one-shot time at or before now is stored as skipped and never sent, " +
        "unless it is `now`-based or runMissed is true. Failed attempts are retried by the trigger's retry policy, " +
        "else its tag policies', else the project's (see get_retry_policy). Answers {triggerId, scheduledAt (the " +
        "time, or a generator's next run), operation (schedule: new, reschedule: edited), kind (job or generator), " +
        "status (registered, skipped: never sent; active for a generator), monthQuotaRemaining, and warning when it was skipped}.",
      parameters: Schema.Struct({
        url: described(Schema.String, "Absolute http:// or https:// URL to send the request to, query string included."),
        scheduledAt: described(Schema.String, SCHEDULED_AT),
        method: optional(Schema.String, "HTTP method, default POST. No body is stored for GET, HEAD and OPTIONS."),
        headers: optional(
          Schema.Record(Schema.String, Schema.String),
          "Headers to send. content-type is stored with the body (a body without one arrives as " +
            `application/octet-stream: set it, e.g. application/json). Host, Content-Length, hop-by-hop headers and ` +
            `headers starting with ${prefix}- are not sent.`
        ),
        body: optional(Schema.Json, BODY),
        tags: optional(
          Schema.Array(Schema.String),
          "Up to 10 tags, each 1 to 50 characters from a-z 0-9 _ -. Tag policies (see create_tag_policy) apply by tag."
        ),
        title: optional(Schema.String, "A label, printable ASCII. Ignored for cron values."),
        customKey: optional(Schema.String, "Your key for this trigger or generator; scheduling again with the same key edits it."),
        triggerId: optional(Schema.String, "Id of the trigger (with a date) or generator (with a cron value) to edit."),
        runMissed: optional(
          Schema.Boolean,
          "true: a one-shot whose time has already passed is sent right away instead of being skipped. Ignored for cron values."
        ),
        retry: optional(RetryObject, `Retry policy of this trigger; without it, its tag policies' or the project's applies. ${RETRY_DEFAULTS}`)
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: false, openWorld: true }), "Schedule a request"),

    titled(writes(Tool.make("cancel_trigger", {
      description:
        "Cancel a trigger, a generator or a single instance of a generator, by triggerId or customKey (exactly one). " +
        "By customKey an active generator is cancelled first, else a pending one-shot trigger. Only registered, " +
        "skipped and retrying triggers can be cancelled (Gone for the others); cancelling a generator stops it and " +
        "cancels its upcoming instance (instances already queued or retrying still run). NotFound when nothing " +
        "matches. No quota. Answers {cancelled: true, triggerId or customKey}.",
      parameters: Schema.Struct({
        triggerId: optional(Schema.String, "Id of the trigger, instance or generator."),
        customKey: optional(Schema.String, "Custom key of the trigger or generator.")
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: true, openWorld: false }), "Cancel a trigger"),

    titled(writes(Tool.make("declare_triggers", {
      description:
        "Make the pending triggers carrying `tag` match `items` (a desired-state sync for one tag): each item is " +
        "matched by customKey among the tag's pending triggers and added, updated in place or left unchanged; the " +
        "tag's pending triggers not in items are cancelled (items [] cancels them all). The tag is added to every " +
        "item. Keyless items are re-created on every call, and `now`-based times count as changed on every call: use " +
        "customKey and absolute times for repeated declarations. Every item is checked before anything is written " +
        "(BadRequest names the item); not atomic after that (call again to finish). No quota. Answers {tag, summary: " +
        `{added, updated, unchanged, skipped, cancelled}, operations}; ${OPERATIONS_RESULT}`,
      parameters: Schema.Struct({
        tag: described(Schema.String, "The tag this call manages."),
        items: described(Schema.Array(Item), "Every trigger that should carry the tag."),
        runMissed: optional(Schema.Boolean, "true: past-dated one-shot items are sent right away instead of being skipped.")
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: true, openWorld: true }), "Declare a tag's triggers"),

    titled(writes(Tool.make("bulk_triggers", {
      description:
        "Create, update and cancel many triggers in one all-or-nothing call. upserts: items matched by customKey " +
        "across the whole project (updated in place when pending, else added; no key: always added). cancels: entries " +
        "naming a trigger id (a string, or {id}), a {customKey}, or a {tag} (every cancellable trigger carrying it, a " +
        "generator's queued and retrying instances included); a target that matches nothing or can no longer be " +
        "cancelled is skipped. No quota. Answers {summary: {added, updated, unchanged, skipped, cancelled}, " +
        `operations}; ${OPERATIONS_RESULT}`,
      parameters: Schema.Struct({
        upserts: optional(Schema.Array(Item), "Triggers to create or update (no customKey twice)."),
        cancels: optional(
          Schema.Array(Schema.Union([
            Schema.String,
            Schema.Struct({ id: Schema.optionalKey(Schema.String), customKey: Schema.optionalKey(Schema.String), tag: Schema.optionalKey(Schema.String) })
          ])),
          "What to cancel: each entry a trigger id, or an object with exactly one of id, customKey or tag."
        )
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: false, openWorld: true }), "Change many triggers at once"),

    titled(readOnly(Tool.make("list_jobs", {
      description:
        "List the project's triggers and generators, newest first, a page at a time: {jobs: [{id, kind, status, " +
        "scheduledAt, method, url, customKey, title, tags, generatorId (set on a generator's instances), attempts, " +
        "createdAt, updatedAt}], nextCursor}. A generator's scheduledAt is its upcoming run (null when none). " +
        "get_job has a trigger's headers, body and retry policy. The filters are those of cancel_by_filter and " +
        "replay_by_filter.",
      parameters: Schema.Struct({ ...FILTER_ARGUMENTS, limit, cursor }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "List triggers"),

    titled(readOnly(Tool.make("get_job", {
      description:
        "One trigger or generator by id, with all it stores: {id, kind, status, scheduledAt, url, method, headers, " +
        "body ({encoding: text or base64, value, size} or null), contentType, title, tags, customKey, retry, " +
        "generatorId, attempts, createdAt, updatedAt}. A body whose value would take over 64 KiB in JSON is left out " +
        "(value null, truncated: true, size in bytes). A generator's cron expression is never shown. NotFound for an " +
        "unknown id.",
      parameters: Schema.Struct({ id: described(Schema.String, "The trigger's or generator's id.") }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "Get a trigger"),

    titled(readOnly(Tool.make("list_executions", {
      description:
        "Delivery attempts across the project's triggers, newest first, a page at a time: {executions: [{id, jobId, " +
        "attempt (1-based), status (succeeded or failed), startedAt, finishedAt, durationMs, httpStatus, errorKind " +
        "and errorCode (when no response came, e.g. dns, connection_refused, timeout), errorMessage, isDeadLetter, " +
        "triggeredBy (retry for a replay), url}], nextCursor}. Give jobId for one trigger's attempts. get_execution " +
        "has the response headers and body.",
      parameters: Schema.Struct({
        jobId: optional(Schema.String, "Only the attempts of this trigger."),
        customKey: optional(Schema.String, "Only the attempts of triggers with this custom key."),
        executionStatus: optional(Schema.Literals(EXECUTION_STATUSES), "succeeded or failed."),
        httpStatus: optional(Schema.Int, "Only attempts answered with this HTTP status (100 to 599)."),
        deadLetterOnly: optional(Schema.Boolean, "true: only the attempts after which nothing more was tried (each with errorKind and errorCode)."),
        limit,
        cursor
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "List delivery attempts"),

    titled(readOnly(Tool.make("get_execution", {
      description:
        "One delivery attempt by id, with the target's response (responseHeaders, responseBody: the first 64 KiB as " +
        "UTF-8), the timeouts that applied and the error details. NotFound for an unknown id.",
      parameters: Schema.Struct({ id: described(Schema.String, "The execution's id.") }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "Get a delivery attempt"),

    titled(writes(Tool.make("replay_job", {
      description:
        "Send a completed trigger again: queues a fresh attempt with its stored method, URL, headers and body, " +
        "recorded with triggeredBy retry (its tag policies' limits still apply). Gone unless the trigger is " +
        "completed; NotFound for an unknown id. No quota. Answers {jobId, status: queued}.",
      parameters: Schema.Struct({ id: described(Schema.String, "The completed trigger's id.") }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: false, idempotent: false, openWorld: true }), "Replay a trigger"),

    titled(readOnly(Tool.make("list_tag_policies", {
      description:
        "The project's tag policies, oldest first: {policies: [{id, tag, maxConcurrent, requestTimeoutSeconds, " +
        "throughput, retryStrategy, retryMaxAttempts, retryInitialDelaySeconds, retryMaxDelaySeconds, retryOn, " +
        "createdAt, updatedAt, queued, inFlight}]}; queued and inFlight count the tag's triggers held back and being " +
        "sent now.",
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "List tag policies"),

    titled(writes(Tool.make("create_tag_policy", {
      description:
        "Create the policy of a tag: it governs every trigger of the project carrying the tag, across the cluster " +
        "(triggers held back by its limits wait as queued). Set at least one of throughput, maxConcurrent, " +
        "requestTimeoutSeconds or retryStrategy. One policy per tag: Conflict names the existing one (change it with " +
        `update_tag_policy). ${TAG_POLICY_RESULT}`,
      parameters: Schema.Struct({
        tag: described(Schema.String, "1 to 50 characters from a-z 0-9 _ -."),
        ...TAG_POLICY_FIELDS
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: false, idempotent: false, openWorld: false }), "Create a tag policy"),

    titled(writes(Tool.make("update_tag_policy", {
      description:
        "Change a tag policy by id: a field present replaces its value, null clears it, a field left out keeps its " +
        "value; tag may change too. The policy is validated as it would be after the change. NotFound for an " +
        `unknown id. ${TAG_POLICY_RESULT}`,
      parameters: Schema.Struct({
        id: described(Schema.String, "The policy's id."),
        tag: optional(Schema.String, "1 to 50 characters from a-z 0-9 _ -."),
        ...TAG_POLICY_FIELDS
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: true, openWorld: false }), "Change a tag policy"),

    titled(writes(Tool.make("delete_tag_policy", {
      description:
        "Delete a tag policy by id; triggers it held back are released. NotFound for an unknown id. Answers {deleted: true, id}.",
      parameters: Schema.Struct({ id: described(Schema.String, "The policy's id.") }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: true, openWorld: false }), "Delete a tag policy"),

    titled(readOnly(Tool.make("get_retry_policy", {
      description:
        "The project's default retry policy, used by triggers with no retry policy of their own whose tags have no " +
        "retry strategy: {retryStrategy, retryMaxAttempts, retryInitialDelaySeconds, retryMaxDelaySeconds, " +
        "retryJitter, retryOn}. Every project starts with exponential, 3, 30, null, false, network_only.",
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    })), "Get the project retry policy"),

    titled(writes(Tool.make("update_retry_policy", {
      description: "Patch the project's default retry policy: fields present replace their value, the others keep it. Answers the whole policy.",
      parameters: Schema.Struct({
        retryStrategy: optional(Schema.Literals(RETRY_STRATEGIES), "none, fixed or exponential."),
        retryMaxAttempts: optional(Schema.Int, "Attempts in all, counting the first, 1 to 2147483647."),
        retryInitialDelaySeconds: optional(Schema.Int, "First delay (every delay with fixed), 0 to 86400."),
        retryMaxDelaySeconds: optional(Schema.NullOr(Schema.Int), "Cap of an exponential delay, 0 to 86400; null: no cap."),
        retryJitter: optional(Schema.Boolean, "true multiplies each delay by a random 0.5 to 1.5."),
        retryOn: optional(Schema.Literals(RETRY_ONS), "network_only, 5xx_and_network or non_2xx.")
      }),
      success: Schema.Unknown,
      failure: ToolError,
      dependencies
    }), { destructive: true, idempotent: true, openWorld: false }), "Change the project retry policy"),

    titled(readOnly(Tool.make("cron_next", {
      description:
        "Preview when a cron value fires: the next times (ISO 8601 UTC) after `from`. Nothing is stored and no quota " +
        "is used; a bad value gets the BadRequest schedule_trigger would answer. Answers {expression, timeZone, " +
        "times} (fewer times when the schedule ends).",
      parameters: Schema.Struct({
        value: described(
          Schema.String,
          "`cron(<expression>[, <IANA time zone>])`: 5 fields (minute hour day-of-month month day-of-week) or 6 with " +
            "leading seconds; * ? lists ranges steps, JAN-DEC and SUN-SAT names, L (last day; 5L last Friday), 1#2 " +
            "(second Monday), H (a value derived from the generator's id); aliases @yearly @monthly @weekly @daily " +
            "@hourly @weekdays @weekends @minutely @secondly. Zone default UTC."
        ),
        from: optional(Schema.String, "Times after this one: `now` (default) or an ISO 8601 date, optionally with `| add …` operations."),
        count: optional(Schema.Int, `How many times, 1 to ${MAX_CRON_NEXT_COUNT} (default 5).`),
        generatorId: optional(
          Schema.String,
          "With H in the expression: the generator's id, to see the times that generator uses (otherwise a fixed stand-in id picks H's values)."
        )
      }),
      success: Schema.Unknown,
      failure: ToolError
    })), "Preview cron times"),

    ...bulkActionTools,
    ...targetPolicyTools
  )

export type McpTools = ReturnType<typeof mcpToolkit>
