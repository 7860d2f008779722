// The MCP tools of target policies (docs/protecting-targets.md): list, create, change and delete the
// policies that limit and protect each destination, and list the origins held, queued or open now.
// Handlers are in mcp/handlers.ts (the same decoder and commands as /target-policies and /targets).
import * as Schema from "effect/Schema"
import { Tool } from "effect/ai"
import { ToolError } from "./results.ts"
import { dependencies, described, optional, readOnly, titled, writes } from "./toolParts.ts"

const LIMIT_FIELDS = {
  maxConcurrent: optional(Schema.NullOr(Schema.Int), "At most this many requests to the origin in flight at once, across the cluster (at least 1)."),
  throughput: optional(
    Schema.NullOr(Schema.Record(Schema.String, Schema.Finite)),
    "Windows to rates, e.g. {\"1s\": 10}: at most that many requests to the origin start within any sliding window of that " +
      "length (as a tag policy's throughput; 0 pauses the origin)."
  ),
  circuitBreaker: optional(
    Schema.NullOr(Schema.Struct({
      failures: described(Schema.Int, "Consecutive failed attempts (network error, timeout, 5xx other than 503) that open the circuit, at least 1."),
      cooldownSeconds: described(Schema.Int, "How long an open circuit holds the origin, 1 to 3600 (doubled on each reopening, at most an hour).")
    })),
    "Stop sending while the origin is down: open, nothing is sent to it for the cooldown, then one probe decides."
  )
}

const POLICY_RESULT =
  "Answers the policy: id, origin, maxConcurrent, throughput, circuitBreaker (unset ones null), createdAt, updatedAt, " +
  "queued and inFlight (the origin's triggers held back and being sent now; for * summed over its origins), heldUntil " +
  "(when a 429/503 hold or an open circuit ends, or null) and circuit (closed, open or probing; null for *)."

export const targetPolicyTools = [
  titled(readOnly(Tool.make("list_target_policies", {
    description: `The project's target policies, oldest first: {policies: [...]}, each as create_target_policy answers it.`,
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  })), "List target policies"),

  titled(writes(Tool.make("create_target_policy", {
    description:
      "Limit and protect the project's deliveries to one destination: every trigger whose URL has this origin, tagged or " +
      "not, across the cluster (held back, they wait as queued). origin * applies to each origin without a policy of its " +
      "own, separately (e.g. limit each customer endpoint to 10 at a time and stop sending while it is down: " +
      "{origin: \"*\", maxConcurrent: 10, circuitBreaker: {failures: 5, cooldownSeconds: 30}}). Set at least one of " +
      "maxConcurrent, throughput or circuitBreaker. One policy per origin: Conflict names the existing one (change it " +
      `with update_target_policy). ${POLICY_RESULT}`,
    parameters: Schema.Struct({
      origin: described(
        Schema.String,
        "scheme://host[:port] (e.g. https://api.example.com; stored lowercase, default port left out; no path, query or user info), or *."
      ),
      ...LIMIT_FIELDS
    }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  }), { destructive: false, idempotent: false, openWorld: false }), "Create a target policy"),

  titled(writes(Tool.make("update_target_policy", {
    description:
      "Change a target policy by id: a field present replaces its value, null clears it, a field left out keeps its value " +
      `(the origin never changes). The policy must keep at least one of the three. NotFound for an unknown id. ${POLICY_RESULT}`,
    parameters: Schema.Struct({ id: described(Schema.String, "The policy's id."), ...LIMIT_FIELDS }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  }), { destructive: true, idempotent: true, openWorld: false }), "Change a target policy"),

  titled(writes(Tool.make("delete_target_policy", {
    description: "Delete a target policy by id; triggers it held back are released. NotFound for an unknown id. Answers {deleted: true, id}.",
    parameters: Schema.Struct({ id: described(Schema.String, "The policy's id.") }),
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  }), { destructive: true, idempotent: true, openWorld: false }), "Delete a target policy"),

  titled(readOnly(Tool.make("list_targets", {
    description:
      "The origins under a target policy that now have triggers queued or in flight, a hold, or a circuit not closed, " +
      "alphabetically: {targets: [{origin, policyId, queued, inFlight, heldUntil, circuit (closed, open, probing), " +
      "consecutiveFailures, circuitOpenedAt, circuitReason}]}.",
    success: Schema.Unknown,
    failure: ToolError,
    dependencies
  })), "List held or open targets")
] as const
