// Sign-in: e-mail and password posted to /session; the API's refusal (wrong password, throttled)
// is shown as it is. The session cookie is HttpOnly: this page never sees it.
import { useState } from "preact/hooks"
import { api } from "../api.ts"
import { html, messageOf, Notice } from "../ui.ts"

export const SignInPage = ({ ended, onSignedIn }: { ended: boolean; onSignedIn: (next: string) => Promise<void> }) => {
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.target as HTMLFormElement)
    setBusy(true)
    try {
      await api("POST", "/session", { email: form.get("email"), password: form.get("password") })
      setError(undefined)
      await onSignedIn(new URLSearchParams(location.search).get("next") ?? "/dashboard")
    } catch (e) {
      setError(messageOf(e))
    } finally {
      setBusy(false)
    }
  }
  return html`<div class="sign-in">
    <form class="card" onSubmit=${submit}>
      <div class="brand large">timewheel</div>
      <h1>Sign in</h1>
      ${error === undefined ? null : html`<${Notice} kind="error">${error}</${Notice}>`}
      ${error === undefined && ended ? html`<${Notice} kind="info">Your session has ended: sign in again.</${Notice}>` : null}
      <label>E-mail<input name="email" type="email" autocomplete="username" required autofocus /></label>
      <label>Password<input name="password" type="password" autocomplete="current-password" required /></label>
      <button class="primary" type="submit" disabled=${busy}>${busy ? "Signing in…" : "Sign in"}</button>
      <p class="muted small">Administrators are created at a terminal with <code>npm run --silent cli -- admin create you@example.com</code>.</p>
    </form>
  </div>`
}
