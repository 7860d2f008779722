// The next message of one type from a forked helper process (the bench's sink, bare HTTPS server and
// peer processes, the chaos harness's target): rejected when the process exits first, when it
// reports a failure (`failure` names one), or after `timeoutMs`.
import type { ChildProcess } from "node:child_process"

export const childMessage = <M extends { readonly type: string }, T extends M["type"]>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
  /** Who the process is, for the errors ("the sink"). */
  who: string,
  failure: (message: M) => string | undefined = () => undefined
): Promise<Extract<M, { type: T }>> =>
  new Promise((resolve, reject) => {
    const onMessage = (message: M) => {
      const failed = failure(message)
      if (message.type !== type && failed === undefined) return
      cleanup()
      if (message.type === type) resolve(message as Extract<M, { type: T }>)
      else reject(new Error(`${who} failed: ${failed}`))
    }
    const onExit = (code: number | null) => {
      cleanup()
      reject(new Error(`${who} exited (${code}) while waiting for "${type}"`))
    }
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`${who} did not answer "${type}" within ${timeoutMs} ms`))
    }, timeoutMs)
    const cleanup = () => {
      clearTimeout(timer)
      child.off("message", onMessage)
      child.off("exit", onExit)
    }
    child.on("message", onMessage)
    child.once("exit", onExit)
  })
