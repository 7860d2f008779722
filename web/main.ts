// The dashboard (docs/dashboard.md): signs in, picks a project, and shows its pages. Every read and action
// goes through the service's endpoints with the session cookie (api.ts); no page keeps any secret.
// On a phone the sidebar is a one-line bar whose pages unfold under a menu button (style.css).
import "uplot/dist/uPlot.min.css"
import "./style.css"
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { api, setProject, whenSignedOut } from "./api.ts"
import { AlertsPage } from "./pages/alerts.ts"
import { DeadLettersPage } from "./pages/deadLetters.ts"
import { KeysPage } from "./pages/keys.ts"
import { OverviewPage } from "./pages/overview.ts"
import { RetryPolicyPage } from "./pages/retryPolicy.ts"
import { SignInPage } from "./pages/signIn.ts"
import { TagPoliciesPage } from "./pages/tagPolicies.ts"
import { TargetsPage } from "./pages/targets.ts"
import { TriggerPage } from "./pages/trigger.ts"
import { TriggersPage } from "./pages/triggers.ts"
import { linkHandler, navigate, useLocation } from "./router.ts"
import { Empty, html, Notice } from "./ui.ts"

interface Me {
  readonly email: string
  readonly expiresAt: string
}
interface Project {
  readonly id: string
  readonly name: string
}

const SECTIONS = [
  ["overview", "Overview"],
  ["triggers", "Triggers"],
  ["dead-letters", "Dead letters"],
  ["tag-policies", "Tag policies"],
  ["targets", "Targets"],
  ["retry-policy", "Retry policy"],
  ["keys", "API keys"],
  ["alerts", "Alerts"]
] as const

const PROJECT_PATH = /^\/dashboard\/p\/([0-9a-f-]{36})\/([a-z-]+)(?:\/([0-9a-f-]{36}))?\/?$/

const Page = ({ section, id, projectId }: { section: string; id: string | undefined; projectId: string }) => {
  switch (section) {
    case "overview":
      return html`<${OverviewPage} key=${projectId} projectId=${projectId} />`
    case "triggers":
      return id === undefined ? html`<${TriggersPage} key=${projectId} projectId=${projectId} />` : html`<${TriggerPage} key=${id} id=${id} projectId=${projectId} />`
    case "dead-letters":
      return html`<${DeadLettersPage} key=${projectId} projectId=${projectId} />`
    case "tag-policies":
      return html`<${TagPoliciesPage} key=${projectId} />`
    case "targets":
      return html`<${TargetsPage} key=${projectId} />`
    case "retry-policy":
      return html`<${RetryPolicyPage} key=${projectId} />`
    case "keys":
      return html`<${KeysPage} key=${projectId} />`
    case "alerts":
      return html`<${AlertsPage} key=${projectId} />`
    default:
      return html`<${Empty}>No such page.</${Empty}>`
  }
}

const Shell = ({ me, projects, onSignOut }: { me: Me; projects: ReadonlyArray<Project>; onSignOut: () => void }) => {
  const { path } = useLocation()
  const match = PROJECT_PATH.exec(path)
  const projectId = match?.[1]
  const project = projects.find((p) => p.id === projectId)
  useEffect(() => {
    if (project === undefined && projects.length > 0) navigate(`/dashboard/p/${projects[0]!.id}/overview`, true)
  }, [path, projects.length])
  setProject(project?.id ?? null)
  const section = match?.[2] ?? "overview"
  /** On a phone the pages' menu is folded under one button (the top bar stays one line). */
  const [menuOpen, setMenuOpen] = useState(false)
  useEffect(() => setMenuOpen(false), [path])
  const current = SECTIONS.find(([slug]) => slug === section)?.[1] ?? "Menu"
  return html`<div class="shell">
    <aside class=${`sidebar${menuOpen ? " menu-open" : ""}`}>
      <div class="brand">timewheel</div>
      <label class="project-picker">
        <span>Project</span>
        <select aria-label="Project" onChange=${(e: Event) => navigate(`/dashboard/p/${(e.target as HTMLSelectElement).value}/${section}`)}>
          ${projects.map((p) => html`<option value=${p.id} selected=${p.id === projectId}>${p.name}</option>`)}
        </select>
      </label>
      <button class="menu-toggle" aria-expanded=${menuOpen} aria-controls="pages-menu" onClick=${() => setMenuOpen(!menuOpen)}>
        <span aria-hidden="true">☰</span> ${current}</button>
      <nav id="pages-menu">
        ${SECTIONS.map(([slug, label]) => html`<a href=${`/dashboard/p/${projectId}/${slug}`} onClick=${linkHandler}
          class=${slug === section ? "active" : ""}>${label}</a>`)}
        <a href="/docs" class="external" title="Every endpoint, with its headers, bodies and answers">API reference</a>
      </nav>
      <div class="who">
        <span title=${`Session ends at the latest ${me.expiresAt}`}>${me.email}</span>
        <button class="link" onClick=${onSignOut}>Sign out</button>
      </div>
    </aside>
    <main class="content">
      ${projects.length === 0
        ? html`<${Empty}>No project yet: create one with <code>npm run --silent cli -- project create my-project</code>.</${Empty}>`
        : project === undefined ? null : html`<${Page} section=${section} id=${match?.[3]} projectId=${project.id} />`}
    </main>
  </div>`
}

/** Set while this browser is signed in: a page loaded without a session then knows it ended. */
const SIGNED_IN = "timewheel.signedIn"

const App = () => {
  const [me, setMe] = useState<Me | null | undefined>(undefined)
  const [projects, setProjects] = useState<ReadonlyArray<Project>>([])
  const [error, setError] = useState<string | undefined>(undefined)
  /** The session ended under the person's feet (expired, signed out elsewhere): say so at sign-in. */
  const [ended, setEnded] = useState(false)
  const { path } = useLocation()

  const load = async () => {
    try {
      const who = await api<Me>("GET", "/session")
      const list = await api<{ projects: Array<Project> }>("GET", "/projects")
      setProjects(list.projects)
      setMe(who)
      localStorage.setItem(SIGNED_IN, "1")
    } catch (e) {
      if ((e as { status?: number }).status === 401) {
        setEnded(localStorage.getItem(SIGNED_IN) !== null)
        localStorage.removeItem(SIGNED_IN)
        setMe(null)
      } else setError(e instanceof Error ? e.message : String(e))
    }
  }
  useEffect(() => {
    whenSignedOut(() => {
      localStorage.removeItem(SIGNED_IN)
      setEnded(true)
      setMe(null)
    })
    void load()
  }, [])
  useEffect(() => {
    if (me === null && path !== "/dashboard/sign-in") navigate(`/dashboard/sign-in?next=${encodeURIComponent(path + location.search)}`, true)
  }, [me, path])

  if (error !== undefined) return html`<div class="center"><${Notice} kind="error">${error}</${Notice}></div>`
  if (me === undefined) return html`<div class="center muted">Loading…</div>`
  if (me === null || path === "/dashboard/sign-in") {
    return html`<${SignInPage} ended=${ended} onSignedIn=${async (next: string) => {
      setEnded(false)
      await load()
      // the API reference is a page of its own (GET /docs), the rest are this app's
      if (next === "/docs") location.assign(next)
      else navigate(next.startsWith("/dashboard/p/") ? next : "/dashboard", true)
    }} />`
  }
  const signOut = async () => {
    await api("DELETE", "/session").catch(() => undefined)
    localStorage.removeItem(SIGNED_IN)
    setMe(null)
  }
  return html`<${Shell} me=${me} projects=${projects} onSignOut=${signOut} />`
}

render(html`<${App} />`, document.getElementById("app")!)
