// A peer (graphile-worker or pg-boss) in its own child process, so its RSS is its own: the parent
// sends `init`, then `ingest` or `load`, then `stop`; the child answers each and reports its VmHWM.
// The worker's task makes the request with undici (keep-alive Agent, 256 connections like timewheel's).
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { childMessage } from "./childMessage.ts"
import { Agent, request } from "undici"
import { peakRssKiB, runCalls, trackChild, waitForExit } from "./common.ts"
import type { CallBatch, JobSpec } from "./common.ts"
import { chunks } from "./peers.ts"
import type { Delivery, PeerAdapter, PeerName, PeerSettings } from "./peers.ts"
import type { StartedSystem } from "./system.ts"

type ToPeer =
  | { readonly type: "init"; readonly peer: PeerName; readonly databaseUrl: string; readonly settings: PeerSettings; readonly worker: boolean }
  | { readonly type: "ingest"; readonly jobs: ReadonlyArray<JobSpec>; readonly concurrency: number; readonly deadlineMs: number }
  | { readonly type: "load"; readonly jobs: ReadonlyArray<JobSpec> }
  | {
    readonly type: "batch"
    readonly jobs: ReadonlyArray<JobSpec>
    readonly batchSize: number
    readonly concurrency: number
    readonly deadlineMs: number
    readonly keyed: boolean
  }
  | { readonly type: "stop" }

type FromPeer =
  | { readonly type: "ready" }
  | { readonly type: "ingested"; readonly batch: CallBatch }
  | { readonly type: "batched"; readonly batch: CallBatch }
  | { readonly type: "loaded" }
  | { readonly type: "stopped"; readonly peakRssKiB: number }
  | { readonly type: "failed"; readonly message: string }

// ---------------------------------------------------------------------------------------------------------
// Child side

const open = async (peer: PeerName, databaseUrl: string, settings: PeerSettings): Promise<PeerAdapter> => {
  if (peer === "graphile-worker") return (await import("./graphileWorker.ts")).openGraphileWorker(databaseUrl, settings)
  return (await import("./pgBoss.ts")).openPgBoss(databaseUrl, settings)
}

const runPeer = () => {
  const send = (message: FromPeer) => process.send!(message)
  const agent = new Agent({ connections: 256, pipelining: 1, keepAliveTimeout: 4_000 })
  const deliver = async (job: Delivery) => {
    const response = await request(job.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: job.body,
      dispatcher: agent
    })
    await response.body.dump()
    if (response.statusCode < 200 || response.statusCode > 299) throw new Error(`sink answered ${response.statusCode}`)
  }
  let adapter: PeerAdapter | undefined
  const handle = async (message: ToPeer) => {
    switch (message.type) {
      case "init":
        adapter = await open(message.peer, message.databaseUrl, message.settings)
        if (message.worker) await adapter.startWorker(deliver)
        return send({ type: "ready" })
      case "ingest": {
        const jobs = message.jobs
        const batch = await runCalls(jobs.length, message.concurrency, message.deadlineMs, (i) => adapter!.add(jobs[i]!))
        return send({ type: "ingested", batch })
      }
      case "load":
        await adapter!.addMany(message.jobs)
        return send({ type: "loaded" })
      case "batch": {
        const batches = chunks(message.jobs, message.batchSize)
        const batch = await runCalls(batches.length, message.concurrency, message.deadlineMs, (i) => adapter!.addMany(batches[i]!, message.keyed))
        return send({ type: "batched", batch })
      }
      case "stop":
        await adapter?.close()
        await agent.close()
        // exit once the answer is written to the channel
        return process.send!({ type: "stopped", peakRssKiB: peakRssKiB("self") } satisfies FromPeer, () => process.exit(0))
    }
  }
  process.on("message", (message: ToPeer) => {
    handle(message).catch((error: unknown) =>
      send({ type: "failed", message: error instanceof Error ? error.stack ?? error.message : String(error) })
    )
  })
  process.on("disconnect", () => process.exit(1)) // the parent is gone
}

// ---------------------------------------------------------------------------------------------------------
// Parent side

const reply = <T extends FromPeer["type"]>(child: ChildProcess, type: T, timeoutMs: number) =>
  childMessage<FromPeer, T>(child, type, timeoutMs, "peer process", (message) => (message.type === "failed" ? message.message : undefined))

/** Starts a peer in a child process; with `worker`, its worker runs and delivers to the sink. */
export const startPeer = async (peer: PeerName, settings: PeerSettings, databaseUrl: string, worker: boolean): Promise<StartedSystem> => {
  const child = trackChild(fork(new URL(import.meta.url).pathname, [], {
    execPath: process.execPath,
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  }))
  const call = <T extends FromPeer["type"]>(message: ToPeer, type: T, timeoutMs: number) => {
    const answer = reply(child, type, timeoutMs)
    child.send(message)
    return answer
  }
  try {
    await call({ type: "init", peer, databaseUrl, settings, worker }, "ready", 60_000)
  } catch (error) {
    child.kill("SIGKILL")
    throw error
  }
  return {
    ingest: async (jobs, concurrency, deadlineMs) =>
      (await call({ type: "ingest", jobs, concurrency, deadlineMs }, "ingested", deadlineMs - Date.now() + 30_000)).batch,
    load: async (jobs, deadlineMs) => {
      await call({ type: "load", jobs }, "loaded", Math.max(1_000, deadlineMs - Date.now()))
    },
    batch: async (jobs, batchSize, concurrency, deadlineMs, keyed) =>
      (await call({ type: "batch", jobs, batchSize, concurrency, deadlineMs, keyed }, "batched", deadlineMs - Date.now() + 30_000)).batch,
    pid: child.pid!,
    stop: async () => {
      try {
        return (await call({ type: "stop" }, "stopped", 30_000)).peakRssKiB
      } catch (error) {
        process.stderr.write(`bench: ${peer} did not stop cleanly: ${String(error)}\n`)
        return Number.NaN
      } finally {
        await waitForExit(child, 5_000)
      }
    }
  }
}

if (import.meta.main) runPeer()
