/**
 * The HTML of the consent flow (decision 0023): sign-in form, consent screen, error page.
 * No external assets; every interpolated value goes through `escapeHtml`. Every page and
 * redirect carries no-store, no framing, no referrer, and a CSP that allows only the inline
 * style (by hash) and forms posting to this service (plus, on the consent screen, the
 * client's redirect origin, since the form's answer is a redirect there).
 */
import { HttpServerResponse } from "effect/http"
import type { McpGrant } from "../../../schema/scopes.ts"
import { scopesOfMcpGrant } from "../../../schema/scopes.ts"
import { FORM_TOKEN_FIELD } from "../same-origin.ts"
import { escapeHtml, htmlPages } from "../../platform/html.ts"


const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.35rem}code{font:13px ui-monospace,monospace;background:#f1f3f5;padding:.1rem .3rem;border-radius:3px}
label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password]{width:100%;padding:.45rem;box-sizing:border-box}
button{padding:.5rem 1.1rem;margin:1rem .5rem 0 0;font-size:1rem;cursor:pointer}
.error{color:#a4161a;background:#fdecea;padding:.6rem;border-radius:4px}.note{color:#5c6670;font-size:.9rem}
li{margin:.4rem 0}`

const pages = htmlPages(STYLE)

const document = pages.document

/** An HTML page (200; handlers give error pages their status, see handlers.ts). */
const htmlResponse = (html: string, formTargets: ReadonlyArray<string> = []) =>
  HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8", headers: pages.headers(formTargets) })

/** A redirect to the client, with the same no-store and no-referrer headers. */
export const redirectResponse = (location: string) =>
  HttpServerResponse.redirect(location, {
    status: 302,
    headers: { "cache-control": "no-store", pragma: "no-cache", "referrer-policy": "no-referrer" }
  })

/** What each grant lets the application do, in words a person can judge. */
const GRANT_TEXT: Record<McpGrant, string> = {
  "mcp:read": "Read your analytics: performance, campaigns, ad sets and ads, conversions and revenue, and live visitor counts.",
  "mcp:read_pii": "Read customer lists and each customer's journey. This is personal data about your customers.",
  "mcp:write":
    "Make changes: export destinations and rules, goals, attribution recomputes, tracking settings, reports, new workspaces and profiles, and apply campaign recommendations (pause, resume, budget changes)."
}

const clientLabel = (clientName: string | null, clientId: string) =>
  clientName === null
    ? `An unnamed application (<code>${escapeHtml(clientId)}</code>)`
    : `<strong>${escapeHtml(clientName)}</strong>`

export const hostOf = (redirectUri: string): string => {
  const url = new URL(redirectUri)
  return url.host
}

/** The error page for requests that must not be redirected, or a consent answer that cannot be used. */
export const errorPage = (message: string) =>
  htmlResponse(document(
    "Authorization error",
    `<h1>This authorization request cannot continue</h1>
<p class="error">${escapeHtml(message)}</p>
<p class="note">Return to the application and start the connection again.</p>`
  ))

export interface SignInPage {
  /** The authorization request's parameters, carried through the form unchanged. */
  readonly request: ReadonlyMap<string, string>
  readonly clientName: string | null
  readonly clientId: string
  readonly redirectUri: string
  readonly email: string
  readonly error: string | null
  /** The form token matching the page's `__Host-svc_form` cookie (decision 0107). */
  readonly formToken: string
}

const CARRIED = ["response_type", "client_id", "redirect_uri", "state", "scope", "code_challenge", "code_challenge_method"]

export const signInPage = (page: SignInPage) => {
  const hidden = CARRIED.flatMap((name) => {
    const value = page.request.get(name)
    return value === undefined ? [] : [`<input type="hidden" name="${name}" value="${escapeHtml(value)}">`]
  }).join("\n")
  return htmlResponse(
    document(
    "Sign in",
    `<h1>Sign in to connect an application</h1>
<p>${clientLabel(page.clientName, page.clientId)} wants access to your account. Sign in to review what it asks for.</p>
${page.error === null ? "" : `<p class="error" role="alert">${escapeHtml(page.error)}</p>`}
<form method="post" action="/oauth/mcp/authorize/sign-in">
<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(page.formToken)}">
${hidden}
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${escapeHtml(page.email)}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<p class="note">Nothing is sent back to <code>${escapeHtml(hostOf(page.redirectUri))}</code> until you approve.</p>`
    ),
    [new URL(page.redirectUri).origin]
  )
}

export interface ConsentPage {
  readonly clientName: string | null
  readonly clientId: string
  readonly redirectUri: string
  readonly grants: ReadonlyArray<McpGrant>
  readonly email: string
  readonly ticket: string
  readonly tokenDays: number
}

export const consentPage = (page: ConsentPage) => {
  const grants = page.grants.map((grant) =>
    `<li><code>${escapeHtml(grant)}</code>: ${escapeHtml(GRANT_TEXT[grant])} <span class="note">(${
      escapeHtml(scopesOfMcpGrant[grant].join(", "))
    })</span></li>`
  ).join("\n")
  return htmlResponse(
    document(
      "Authorize application",
      `<h1>Connect ${page.clientName === null ? "an application" : escapeHtml(page.clientName)}?</h1>
<p>${clientLabel(page.clientName, page.clientId)} asks for access to your account (<strong>${
        escapeHtml(page.email)
      }</strong>). The name is chosen by the application and is not verified.</p>
<p>If you approve, you are sent back to <strong><code>${escapeHtml(hostOf(page.redirectUri))}</code></strong>.</p>
<p>It asks to:</p>
<ul>
${grants}
</ul>
<p class="note">Only within the workspaces and profiles you can reach yourself. The access expires after ${page.tokenDays} days.</p>
<form method="post" action="/oauth/mcp/authorize/decision">
<input type="hidden" name="ticket" value="${escapeHtml(page.ticket)}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`
    ),
    [new URL(page.redirectUri).origin]
  )
}
