// What `npm start` prints once it listens (docs/operations.md "Starting"): where the dashboard is, and,
// while the database has no project, no live API key or no administrator, the one CLI line that makes
// each. Pure: the state and the listening address are parameters.

export interface SetupState {
  /** The oldest project's name; null when there is none. */
  readonly firstProject: string | null
  readonly hasLiveKey: boolean
  readonly hasAdmin: boolean
}

const CLI = "npm run --silent cli --"
const EXAMPLE_PROJECT = "my-project"

/** The address a person opens: a wildcard listener (0.0.0.0, ::) is reached as localhost; IPv6 in brackets. */
export const browsableHost = (host: string): string =>
  host === "0.0.0.0" || host === "::" || host === "" ? "localhost" : host.includes(":") ? `[${host}]` : host

/** The dashboard's address for a listener on `host`:`port`. */
export const dashboardUrl = (host: string, port: number): string => `https://${browsableHost(host)}:${port}/dashboard/`

/** The lines, in the order a newcomer needs them. */
export const firstSteps = (state: SetupState, dashboard: string): ReadonlyArray<string> => {
  const project = state.firstProject ?? EXAMPLE_PROJECT
  return [
    `dashboard: ${dashboard} (the certificate is self-signed unless TLS_CERT_FILE is set: the browser asks to trust it once)`,
    ...(state.firstProject === null ? [`next: create a project: ${CLI} project create ${EXAMPLE_PROJECT}`] : []),
    ...(state.hasLiveKey ? [] : [`next: create an API key: ${CLI} key create ${project}`]),
    ...(state.hasAdmin ? [] : [`next: create a dashboard administrator: ${CLI} admin create you@example.com`])
  ]
}
