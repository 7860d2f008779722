// Command-line flags of the scripts (npm run bench, bench:scale, chaos): `--name value` or
// `--name=value` for the named flags, bare `--name` for switches, `--help`/`-h` prints the usage;
// anything else stops the script with a message and the usage (exit code 1).
export const failWith = (usage: string) => (message: string): never => {
  process.stderr.write(`${message}\n${usage}\n`)
  process.exit(1)
}

export interface Flags {
  readonly values: ReadonlyMap<string, string>
  readonly switches: ReadonlySet<string>
}

export const readFlags = (
  args: ReadonlyArray<string>,
  usage: string,
  valued: ReadonlyArray<string>,
  switches: ReadonlyArray<string> = []
): Flags => {
  const fail = failWith(usage)
  const values = new Map<string, string>()
  const seen = new Set<string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(`${usage}\n`)
      process.exit(0)
    }
    if (!arg.startsWith("--")) fail(`unexpected argument "${arg}"`)
    const eq = arg.indexOf("=")
    const key = eq > 0 ? arg.slice(2, eq) : arg.slice(2)
    if (switches.includes(key) && eq < 0) {
      seen.add(key)
      continue
    }
    if (!valued.includes(key)) fail(`unknown option --${key}`)
    values.set(key, eq > 0 ? arg.slice(eq + 1) : (args[++i] ?? fail(`--${key} needs a value`)))
  }
  return { values, switches: seen }
}
