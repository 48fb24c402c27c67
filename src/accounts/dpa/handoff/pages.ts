/**
 * The DPA hand-off page (decision 0098): the DPA the signed-in owner or admin accepts for one
 * profile. No script, no external asset; every interpolated value is escaped. No framing, no
 * referrer (the token is in the address), no store.
 */
import { HttpServerResponse } from "effect/http"
import type { ProfileAgreements } from "../../../../schema/dpa.ts"
import { escapeHtml, htmlPages } from "../../../platform/html.ts"
import { HANDOFF_PAGE_PATH } from "./service.ts"

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.35rem}button{padding:.5rem 1.1rem;margin-top:1rem;font-size:1rem;cursor:pointer}
code{font:13px ui-monospace,monospace}.terms{border:1px solid #d0d5db;padding:.2rem 1rem;border-radius:4px}
.error{color:#a4161a;background:#fdecea;padding:.6rem;border-radius:4px}.note{color:#5c6670;font-size:.9rem}`

const pages = htmlPages(STYLE)

const page = (title: string, body: string, status: 200 | 400 = 200) =>
  HttpServerResponse.text(pages.document(title, body), { contentType: "text/html; charset=utf-8", headers: pages.headers(), status })

/** The DPA's essentials as the page shows them; the version names the full text. */
const terms = (version: string) =>
  `<div class="terms">
<p><strong>Data Processing Agreement</strong>, version <code>${escapeHtml(version)}</code>.</p>
<p>The service processes the profile's conversion data on your instructions only, to export it to the ad
platforms you configure; it scrubs and hashes identities as the profile's privacy mode requires, keeps the
data confidential, uses sub-processors only under equivalent terms, helps you answer data-subject requests,
reports a personal-data breach without undue delay, and deletes or returns the data when the service ends.</p>
</div>`

export const handoffFormPage = (input: {
  readonly token: string
  readonly expiresAt: string
  readonly agreements: ProfileAgreements
  readonly error: string | null
}) =>
  page(
    "Accept the Data Processing Agreement",
    `<h1>Accept the Data Processing Agreement</h1>
<p>For profile <code>${escapeHtml(input.agreements.profile_id)}</code> (privacy mode
<code>${escapeHtml(input.agreements.privacy_mode)}</code>). Its DPA is now
<strong>${escapeHtml(input.agreements.dpa_status)}</strong>.</p>
${input.error === null ? "" : `<p class="error">${escapeHtml(input.error)}</p>`}
${terms(input.agreements.current_dpa_version)}
<form method="post" action="${HANDOFF_PAGE_PATH}">
<input type="hidden" name="token" value="${escapeHtml(input.token)}">
<input type="hidden" name="version" value="${escapeHtml(input.agreements.current_dpa_version)}">
<button type="submit">Accept the DPA for this profile</button>
</form>
<p class="note">Only an owner or admin of the profile's workspace can accept. This link works once and
expires at ${escapeHtml(input.expiresAt)}.</p>`,
    input.error === null ? 200 : 400
  )

export const handoffAcceptedPage = (agreements: ProfileAgreements) =>
  page(
    "DPA accepted",
    `<h1>DPA accepted</h1>
<p>Profile <code>${escapeHtml(agreements.profile_id)}</code> now reads <strong>${escapeHtml(agreements.dpa_status)}</strong>
(version <code>${escapeHtml(agreements.dpa_version ?? "")}</code>). Exports held for lack of it start.</p>`
  )

export const handoffUnusablePage = (reason: string) =>
  page(
    "Link not usable",
    `<h1>This link cannot be used</h1>
<p>${escapeHtml(reason)}</p>`,
    400
  )
