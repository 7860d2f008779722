// Kicks for tag gates: triggers came to wait at these gates, or left a place free in them. Each
// kick goes to the actor of the gate's shard (through Wakeups: in this process, or notified).
import type { GateKick } from "../cluster/wakeups.ts"
import { gateShardOf } from "../domain/gates/gate.ts"

/** One kick per gate of each trigger (a trigger's project and its gated tags), without repeats. */
export const gateKicks = (
  triggers: ReadonlyArray<{ readonly projectId: string; readonly gateTags: ReadonlyArray<string> }>,
  shards: number
): Array<GateKick> => {
  const kicks = new Map<string, GateKick>()
  for (const { projectId, gateTags } of triggers) {
    for (const tag of gateTags) {
      const key = `${projectId}/${tag}`
      if (!kicks.has(key)) kicks.set(key, { shard: gateShardOf(projectId, tag, shards), gate: { projectId, tag } })
    }
  }
  return [...kicks.values()]
}
