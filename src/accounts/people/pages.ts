/**
 * The set-password page of a one-time link (decision 0053). No script, no external asset; every
 * interpolated value is escaped. No framing, no referrer (the token is in the address), no store.
 */
import { HttpServerResponse } from "effect/http"
import { FORM_TOKEN_FIELD, type FormGrant, withFormCookie } from "../same-origin.ts"
import { escapeHtml, htmlPages } from "../../platform/html.ts"
import { PASSWORD_PAGE_PATH } from "./service.ts"

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.35rem}label{display:block;margin:.8rem 0 .2rem}input[type=password]{width:100%;padding:.45rem;box-sizing:border-box}
button{padding:.5rem 1.1rem;margin-top:1rem;font-size:1rem;cursor:pointer}code{font:13px ui-monospace,monospace}
.error{color:#a4161a;background:#fdecea;padding:.6rem;border-radius:4px}.note{color:#5c6670;font-size:.9rem}`

const pages = htmlPages(STYLE)

const page = (title: string, body: string, status: 200 | 400 | 403 = 200) =>
  HttpServerResponse.text(pages.document(title, body), { contentType: "text/html; charset=utf-8", headers: pages.headers(), status })

/** The form, with its form token; the cookie the token matches is set with it when new (decision 0107). */
export const passwordFormPage = (input: {
  readonly token: string
  readonly email: string
  readonly purpose: "invite" | "reset"
  readonly error: string | null
  readonly grant: FormGrant
}) =>
  withFormCookie(page(
    input.purpose === "invite" ? "Choose your password" : "Choose a new password",
    `<h1>${input.purpose === "invite" ? "Choose your password" : "Choose a new password"}</h1>
<p>For <strong>${escapeHtml(input.email)}</strong>.</p>
${input.error === null ? "" : `<p class="error">${escapeHtml(input.error)}</p>`}
<form method="post" action="${PASSWORD_PAGE_PATH}">
<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(input.grant.token)}">
<input type="hidden" name="token" value="${escapeHtml(input.token)}">
<label for="password">Password (at least 8 characters)</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="1024" required>
<label for="password_confirmation">The same again</label>
<input id="password_confirmation" name="password_confirmation" type="password" autocomplete="new-password" required>
<button type="submit">Set password</button>
</form>
<p class="note">This link works once. Setting a password signs you out of every other session.</p>`,
    input.error === null ? 200 : 400
  ), input.grant)

export const passwordSetPage = (email: string, baseUrl: string) =>
  page(
    "Password set",
    `<h1>Password set</h1>
<p>You can now sign in as <strong>${escapeHtml(email)}</strong>.</p>
<p><a href="/?email=${encodeURIComponent(email)}">Sign in to the console</a></p>
<p class="note">An agent's consent screen asks for the same password, and a client of the API opens a session with
<code>POST ${escapeHtml(baseUrl)}/api/v1/sessions</code> and <code>{"email","password"}</code>.</p>`
  )

export const unusableLinkPage = () =>
  page(
    "Link not usable",
    `<h1>This link cannot be used</h1>
<p>It is unknown, expired or already used. Ask your operator for a new one
(<code>npm run cli -- people reset-password --email ...</code>).</p>`,
    400
  )

/** A form post another site made, or one without the page's form token: nothing was changed (decision 0107). */
export const foreignFormPage = (reason: "cross_site" | "form_token") =>
  page(
    "Form refused",
    `<h1>This form was refused</h1>
<p>${
      reason === "cross_site"
        ? "It was posted from another site. Nothing was changed."
        : "It was not opened here, or has expired. Nothing was changed."
    } Open the link itself again.</p>`,
    403
  )
