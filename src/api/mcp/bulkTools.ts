// The MCP tools of the bulk actions (docs/bulk-actions.md): cancel and replay every trigger
// matching a filter, each with a dry run that answers the count first (preview, then act), and the
// progress of an action; plus the filter's fields, which list_jobs also takes so that a model can
// look at the very set it is about to act on. Handlers are in mcp/handlers.ts (the same decoder and
// commands as POST /actions).
import * as Schema from "effect/Schema"
import { Tool } from "effect/ai"
import { JOB_OUTCOMES, TRIGGER_KINDS, TRIGGER_STATUSES } from "../../domain/trigger.ts"
import { ToolError } from "./results.ts"
import { dependencies, described, optional, readOnly, titled, writes } from "./toolParts.ts"

/** The filter's fields (domain/triggerFilter.ts), as arguments: the names of GET /jobs and POST /actions. */
export const FILTER_ARGUMENTS = {
  status: optional(Schema.Literals(TRIGGER_STATUSES), "Only triggers in this status (active: running generators)."),
  outcome: optional(
    Schema.Literals(JOB_OUTCOMES),
    "Only triggers that ended so: delivered or dead_letter (completed, by the latest attempt), cancelled, skipped."
  ),
  kind: optional(Schema.Literals(TRIGGER_KINDS), "job (one-shot triggers and instances) or generator."),
  tag: optional(Schema.String, "Only triggers carrying this tag."),
  customKey: optional(Schema.String, "Only triggers with this custom key."),
  deadLetter: optional(
    Schema.Boolean,
    "true: only triggers whose latest attempt is a dead letter (nothing more will be tried); false: only the others."
  ),
  scheduledFrom: optional(
    Schema.String,
    "ISO 8601 (no offset: UTC): only triggers scheduled at or after it (a generator by its upcoming run; none: left out)."
  ),
  scheduledTo: optional(Schema.String, "ISO 8601: only triggers scheduled before it.")
}

const Filter = Schema.Struct(FILTER_ARGUMENTS).annotate({
  description: "Which of the project's triggers: every field given must hold (list_jobs takes the same fields, to look at them first)."
})

const ACTION_RESULT =
  "With dryRun true answers {matched} and changes nothing. Otherwise the set is fixed now (the triggers matching at " +
  "this moment) and acted on in the background; answers the action {id, action, filter, status (running, completed " +
  "or failed), matched, processed, cancelled or replayed, untouched: {reason: count}, createdAt, finishedAt}; follow " +
  "it with get_action. Calling again with the same arguments while it runs answers the same action (safe after a " +
  "timeout). No quota."

const dryRun = optional(Schema.Boolean, "true: only count the matching triggers (do this first, and tell the user the count).")

export const bulkActionTools = [
  titled(writes(Tool.make("cancel_by_filter", {
    description:
      "Cancel every cancellable trigger matching the filter, as cancel_trigger would one by one: registered, skipped " +
      "and retrying triggers, and active generators with their upcoming instance; the others are left untouched, " +
      "counted by their status. The filter needs at least one field (BadRequest otherwise). " + ACTION_RESULT,
    parameters: Schema.Struct({ filter: Filter, dryRun }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  }), { destructive: true, idempotent: true, openWorld: false }), "Cancel triggers by filter"),

  titled(writes(Tool.make("replay_by_filter", {
    description:
      "Redrive dead letters: every completed trigger matching the filter whose latest attempt is a dead letter is " +
      "sent again, as replay_job would one by one (a new attempt with triggeredBy retry; its tag policies' limits " +
      "apply). Others are left untouched, counted by reason (notDeadLetter, or their status). An empty filter means " +
      "every dead letter of the project. url and headers change that attempt only, never the trigger. " + ACTION_RESULT,
    parameters: Schema.Struct({
      filter: Filter,
      dryRun,
      url: optional(Schema.String, "Send the replayed attempts to this absolute http(s) URL instead of each trigger's own."),
      headers: optional(
        Schema.Record(Schema.String, Schema.String),
        "Headers to add to the replayed attempts, each replacing a stored header of the same name (content-type replaces the body's type)."
      )
    }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  }), { destructive: false, idempotent: true, openWorld: true }), "Replay dead letters by filter"),

  titled(readOnly(Tool.make("get_action", {
    description:
      "A bulk action's progress by id (from cancel_by_filter or replay_by_filter): {id, action, filter, status, " +
      "matched, processed, cancelled or replayed, untouched, createdAt, finishedAt}. NotFound for an unknown id.",
    parameters: Schema.Struct({ id: described(Schema.String, "The action's id.") }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  })), "Get a bulk action")
] as const
