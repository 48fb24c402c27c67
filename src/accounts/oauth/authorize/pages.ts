/**
 * The HTML of `/oauth/authorize`: the consent screen and the error page for what cannot be
 * redirected. No external assets, every interpolated value escaped, never framed, never cached,
 * and no Referer leaves the page (its URL carries the id_token_hint).
 */
import type { ConnectScope } from "../../../../schema/scopes.ts"
import { errorPage, escapeHtml, formPages } from "../../../platform/html.ts"
import { scopesOfConnectScope } from "../../../../schema/scopes.ts"


/** Where the consent form posts (relative, so it works behind `{api_url}` too). */
export const CONSENT_PATH = "/oauth/authorize/consent"

export interface ConsentScreen {
  readonly appName: string
  readonly email: string
  readonly connectScopes: ReadonlyArray<ConnectScope>
  /** The profiles to choose from; empty: approving creates a workspace and profile for the email. */
  readonly profiles: ReadonlyArray<{ readonly id: string; readonly name: string; readonly workspaceName: string }>
  readonly ticket: string
  /** The origin the approval redirects to, allowed as a form target (browsers apply form-action to redirects). */
  readonly redirectOrigin: string
}

const SCOPE_TEXT: Record<ConnectScope, string> = {
  connections: "Connect and manage your channel and ad-platform connections",
  attribution: "Everything attribution offers",
  analytics: "Read aggregated analytics, campaign and conversion reports",
  analytics_pii: "Read analytics, and your customer and visitor lists (personal data)",
  attribution_write: "Manage goals, attribution recomputes, tracking and reports",
  commerce: "Read your store's catalogue and orders",
  chat_app_a: "Send and manage chat messages",
  social_dm: "Send and manage direct messages",
  email: "Send and manage email",
  calendar: "Manage your calendars",
  calendar_read: "Read your calendars"
}

const pages = formPages

/** Response headers of every page (src/platform/html.ts); the consent form may also post to the client's redirect origin. */
export const pageHeaders = (formTarget?: string): Record<string, string> =>
  pages.headers(formTarget === undefined ? [] : [formTarget])

const page = pages.document

export const consentPage = (screen: ConsentScreen): string => {
  const app = escapeHtml(screen.appName)
  const scopes = screen.connectScopes.map((scope) =>
    `<li>${escapeHtml(SCOPE_TEXT[scope])} <span class="muted">(<code>${escapeHtml(scope)}</code>: ${
      scopesOfConnectScope[scope].map(escapeHtml).join(", ")
    })</span></li>`
  ).join("")
  const profiles = screen.profiles.length === 0
    ? `<p>No profile of ${app} is registered for <strong>${escapeHtml(screen.email)}</strong> yet. Approving creates a new ` +
      `workspace and profile for ${app}, with ${escapeHtml(screen.email)} as the workspace owner.</p>`
    : `<fieldset><legend>Profile</legend>${
      screen.profiles.map((profile, index) =>
        `<label><input type="radio" name="profile_id" value="${escapeHtml(profile.id)}"${index === 0 ? " checked" : ""}> ${
          escapeHtml(profile.name)
        } <span class="muted">(workspace ${escapeHtml(profile.workspaceName)})</span></label>`
      ).join("")
    }</fieldset>`
  return page(
    `Allow ${screen.appName}?`,
    `<h1>Allow ${app} access?</h1>
<p>${app} asks, for <strong>${escapeHtml(screen.email)}</strong>, to:</p>
<ul>${scopes}</ul>
<form method="post" action="${CONSENT_PATH}">
<input type="hidden" name="ticket" value="${escapeHtml(screen.ticket)}">
${profiles}
<p><button type="submit" name="decision" value="approve">Allow</button><button type="submit" name="decision" value="deny">Deny</button></p>
</form>
<p class="muted">This request expires in 10 minutes.</p>`
  )
}

export { errorPage }
