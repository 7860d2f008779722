// `npm run chaos [-- --only kill9,sigterm] [--n 1500] [--nodes 3] [--commit REV]`: a bounded,
// loopback-only fault harness. It builds the service once, starts a private PostgreSQL cluster of its
// own (never the machine's server), a recording target, and for each scenario a fresh database and
// fresh nodes; injects the fault (kill -9, SIGTERM, PostgreSQL stopped and started again); prints one
// Markdown table with details and writes bench-results/chaos-<timestamp>.json (node logs beside it).
// Every child process is killed on exit, Ctrl-C included; each scenario is bounded (2 min), the run
// too (10 min).
import * as fs from "node:fs"
import * as path from "node:path"
import { sleep } from "../bench/common.ts"
import { installExitHandlers, say, startWatchdog, tempDir } from "./lifecycle.ts"
import { prepareService } from "./nodes.ts"
import { parseOptions } from "./options.ts"
import { type PrivateCluster, startPrivateCluster } from "./postgres.ts"
import { details, footer, machineOf, resultsDir, runStamp, table, writeJson } from "./report.ts"
import { DEFINITIONS, SCENARIO_BOUND_MS, type ScenarioResult } from "./scenarios.ts"
import { startTarget, type Target } from "./target.ts"
import { createWorld, type RunContext, type World } from "./world.ts"

/** The whole run, build included: at the bound the results so far are written and the run ends (exit 2). */
const RUN_BOUND_MS = 10 * 60_000

const runScenario = async (context: RunContext, name: ScenarioResult["scenario"], n: number, nodesOption: number | undefined): Promise<ScenarioResult> => {
  const definition = DEFINITIONS[name]
  const nodes = nodesOption ?? definition.defaultNodes
  const deadlineMs = Date.now() + SCENARIO_BOUND_MS
  const base = { scenario: name, description: definition.description, nodes, targetDelayMs: definition.targetDelayMs, n }
  let world: World | undefined
  try {
    world = await createWorld(context, name, nodes, definition.targetDelayMs, definition.triggers(n))
    const current = world
    // the scenario's own waits end by its deadline; this bound is the last resort
    const bound = sleep(deadlineMs - Date.now() + 5_000).then(() => {
      throw new Error(`scenario exceeded its bound of ${SCENARIO_BOUND_MS / 1000} s`)
    })
    const measured = await Promise.race([definition.run(current, n, deadlineMs - 10_000), bound])
    return { ...base, ...measured, timeline: current.timeline(), logs: current.logs() }
  } catch (error) {
    const message = error instanceof Error ? error.stack ?? error.message : String(error)
    return { ...base, timeline: world?.timeline() ?? [], logs: world?.logs() ?? {}, error: message }
  } finally {
    await world?.teardown().catch((error: unknown) => say(`  teardown failed: ${String(error)}`))
  }
}

const main = async () => {
  const options = parseOptions(process.argv.slice(2))
  const startedAt = new Date()
  const logDir = path.join(resultsDir(), `chaos-${runStamp(startedAt)}`)
  fs.mkdirSync(logDir, { recursive: true })
  let cluster: PrivateCluster | undefined
  let target: Target | undefined
  const results: Array<ScenarioResult> = []
  let machine = machineOf("?", "?")
  const save = (complete: boolean) => writeJson(startedAt, { ...options }, machine, results, complete)
  installExitHandlers(async () => {
    save(false)
    await cluster?.destroy()
  })
  const stopWatchdog = startWatchdog(RUN_BOUND_MS, async () => {
    say(`chaos: partial results in ${save(false)}`)
    await cluster?.destroy()
  })
  try {
    say("chaos: building the service …")
    const service = await prepareService(options.commit)
    say(`chaos: timewheel at ${service.commit} (${service.dir})`)
    cluster = await startPrivateCluster(tempDir("cluster"), path.join(logDir, "postgres.log"))
    machine = machineOf(cluster.version, service.commit)
    target = await startTarget()
    say(`chaos: private PostgreSQL ${cluster.version} on 127.0.0.1:${cluster.port}; target on 127.0.0.1:${target.port}; logs in ${logDir}`)
    const context: RunContext = { cluster, service, target, logDir }
    for (const name of options.scenarios) {
      say(`${name} …`)
      const result = await runScenario(context, name, options.n, options.nodes)
      results.push(result)
      if (result.error !== undefined) say(`  failed: ${result.error}`)
      else {
        const c = result.counts!
        say(`  sent ${c.sent}, delivered ${c.delivered}, lost ${c.lost}, duplicated ${c.duplicated}`)
      }
      save(false)
    }
    const file = save(true)
    process.stdout.write(`${table(results)}\n\n${details(results)}\n\n${footer(machine)}\n\nJSON: ${file}\nNode and PostgreSQL logs: ${logDir}\n`)
  } finally {
    stopWatchdog()
    await target?.stop()
    await cluster?.destroy()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`chaos: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    process.exit(1)
  }
)
