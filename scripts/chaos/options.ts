// `npm run chaos` options: which scenarios, how many triggers, how many nodes, which commit.
import { failWith, readFlags } from "../bench/cliFlags.ts"
import { SCENARIOS, type ScenarioName } from "./scenarios.ts"

export const USAGE = `usage: npm run chaos -- [--only kill9,sigterm,sigterm-fast,pg-restart-fast,pg-restart-immediate,pg-crash-cancel]
                        [--n 1500] [--nodes N] [--commit REV]
  --only    scenarios to run, comma-separated (default: all, in this order)
  --n       triggers per scenario (default 1500): kill9/sigterm a burst of n at one instant plus n/5 after it,
            pg-restart-* n spread over 15 s (20 s), pg-crash-cancel n spread over 2 s
  --nodes   nodes per scenario (default 3 for kill9/sigterm, 2 for pg-restart-* and pg-crash-cancel)
  --commit  build and run this commit (exported with git archive into a temporary directory)
            instead of the working tree`

export interface Options {
  readonly scenarios: ReadonlyArray<ScenarioName>
  readonly n: number
  readonly nodes: number | undefined
  readonly commit: string | undefined
}

const fail = failWith(USAGE)

const bounded = (raw: string, name: string, min: number, max: number): number =>
  /^\d+$/.test(raw) && Number(raw) >= min && Number(raw) <= max ? Number(raw) : fail(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)

export const parseOptions = (args: ReadonlyArray<string>): Options => {
  const { values } = readFlags(args, USAGE, ["only", "n", "nodes", "commit"])
  let scenarios: ReadonlyArray<ScenarioName> = SCENARIOS
  const only = values.get("only")
  if (only !== undefined) {
    const items = only.split(",").map((item) => item.trim()).filter((item) => item !== "")
    for (const item of items) if (!SCENARIOS.includes(item as ScenarioName)) fail(`unknown scenario "${item}" (expected ${SCENARIOS.join(", ")})`)
    if (items.length === 0) fail("--only needs at least one scenario")
    scenarios = SCENARIOS.filter((name) => items.includes(name))
  }
  const nodes = values.get("nodes")
  return {
    scenarios,
    n: bounded(values.get("n") ?? "1500", "--n", 10, 5_000),
    nodes: nodes === undefined ? undefined : bounded(nodes, "--nodes", 2, 8),
    commit: values.get("commit")
  }
}
