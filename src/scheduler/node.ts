// This process's identity in the cluster: a random id, set as the application_name of its shard-lock
// session so every node can count the live nodes and tell whose claims were left by a dead one.
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

export const NODE_APPLICATION_PREFIX = "timewheel-node:"

export class NodeIdentity extends Context.Service<NodeIdentity, { readonly id: string }>()("timewheel/NodeIdentity") {
  static readonly layer = Layer.sync(NodeIdentity)(() => ({ id: crypto.randomUUID() }))
}
