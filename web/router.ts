// The pages' addresses, all under /dashboard (the service answers index.html for each): history
// navigation without reloads, and a subscribe hook for the app to re-render on a change. A page's
// filters live in the query string (setQuery), so a reload, the back button or a shared link keeps them.
import { useEffect, useState } from "preact/hooks"

const listeners = new Set<() => void>()

export const navigate = (to: string, replace = false) => {
  if (to === location.pathname + location.search) return
  if (replace) history.replaceState(null, "", to)
  else history.pushState(null, "", to)
  for (const listener of listeners) listener()
}

addEventListener("popstate", () => {
  for (const listener of listeners) listener()
})

/** Goes to the current page with this query (empty values left out): a new history entry. */
export const setQuery = (values: Readonly<Record<string, string>>) => {
  const search = new URLSearchParams(Object.entries(values).filter(([, value]) => value !== "")).toString()
  navigate(location.pathname + (search === "" ? "" : `?${search}`))
}

/** The current path and query, re-rendering on navigation. */
export const useLocation = () => {
  const [, setTick] = useState(0)
  useEffect(() => {
    const listener = () => setTick((n) => n + 1)
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }, [])
  return { path: location.pathname, query: new URLSearchParams(location.search) }
}

/** A link that navigates in place (a modified click still opens a new tab). */
export const linkHandler = (event: MouseEvent) => {
  const anchor = (event.currentTarget as HTMLAnchorElement)
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return
  event.preventDefault()
  navigate(anchor.getAttribute("href")!)
}
