// This process's identity in the cluster: a random id. The shard-lock session carries it (see
// store/nodePresence.ts), so every node can count the live nodes and tell whose claims were left by
// a dead one; delivery marks the triggers it holds with it.
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

export class NodeIdentity extends Context.Service<NodeIdentity, { readonly id: string }>()("timewheel/NodeIdentity") {
  static readonly layer = Layer.sync(NodeIdentity)(() => ({ id: crypto.randomUUID() }))
}
