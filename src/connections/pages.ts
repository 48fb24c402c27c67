/**
 * The browser pages of a connect hand-off: the Continue card of a link with no `return_url`,
 * the refusals (`handoff_expired`, `handoff_used`, unknown link) and the outcome page when
 * there is nowhere to return to. No script, nothing loaded from elsewhere, every value escaped.
 */
import { HttpServerResponse } from "effect/http"
import { escapeHtml, htmlPages } from "../platform/html.ts"

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.35rem}.card{border:1px solid #d5dae0;border-radius:8px;padding:1.2rem}
a.button{display:inline-block;padding:.5rem 1.1rem;margin-top:.8rem;background:#1d4ed8;color:#fff;border-radius:4px;text-decoration:none}
code{font:13px ui-monospace,monospace}.note{color:#5c6670;font-size:.9rem}`

const pages = htmlPages(STYLE)

const page = (title: string, body: string, status: 200 | 400 = 200) =>
  HttpServerResponse.text(pages.document(title, body), { contentType: "text/html; charset=utf-8", headers: pages.headers(), status })

export const redirectTo = (location: string) =>
  HttpServerResponse.redirect(location, {
    status: 302,
    headers: { "cache-control": "no-store", pragma: "no-cache", "referrer-policy": "no-referrer" }
  })

export const continueCard = (provider: string, startUrl: string) =>
  page(
    "Connect your account",
    `<div class="card"><h1>Connect your ${escapeHtml(provider)} account</h1>
<p>You will sign in at the provider and choose what to share. You come back here when it is done.</p>
<a class="button" href="${escapeHtml(startUrl)}">Continue</a></div>`
  )

export const refusedPage = (reason: "handoff_expired" | "handoff_used" | "unknown_handoff") =>
  page(
    "Link not usable",
    `<h1>This link cannot be used</h1>
<p>${
      reason === "handoff_expired"
        ? "It has expired."
        : reason === "handoff_used"
        ? "It was already used."
        : "It is unknown."
    } Ask for a new connect link.</p>
<p class="note">Reason: <code>${reason}</code></p>`,
    400
  )

export const outcomePage = (outcome: { readonly status: string; readonly reason: string | null; readonly handoffId: string }) =>
  page(
    "Connection",
    `<h1>${
      outcome.status === "success"
        ? "Connected"
        : outcome.status === "pending_selection"
        ? "Choose an account"
        : outcome.status === "cancelled"
        ? "Cancelled"
        : "Not connected"
    }</h1>
<p>Status: <code>${escapeHtml(outcome.status)}</code>${
      outcome.reason === null ? "" : `, reason: <code>${escapeHtml(outcome.reason)}</code>`
    }. Hand-off <code>${escapeHtml(outcome.handoffId)}</code>. You can close this page.</p>`,
    outcome.status === "failed" ? 400 : 200
  )
