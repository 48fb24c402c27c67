/**
 * The one check that a sign-in (or another credential form) was posted by this service's own
 * pages, not by another site (login CSRF). Decision 0107.
 *
 * Two layers for HTML forms, one for the JSON API:
 * - Where the browser says the request comes from: `Sec-Fetch-Site` first (`cross-site` and
 *   `same-site` refused; `same-origin`, and `none` for a person's own navigation, pass); without
 *   it, `Origin` must be the service's own (the base URL's origin). `Origin: null` is no answer
 *   either way: our pages send no referrer, and a browser then serializes a form post's origin
 *   as `null` (Fetch, "append a request Origin header"), as a sandboxed attacker frame does too.
 * - HTML forms also carry a form token that must match a pre-session cookie (double submit).
 *   The cookie is `__Host-` prefixed, `Secure`, `HttpOnly`, `SameSite=Strict`: another site can
 *   neither read it, nor send it, nor plant one from a sibling subdomain.
 *
 * The JSON sign-in serves non-browser clients too: a request naming neither header (curl, SDKs)
 * passes; one naming another site (or an opaque origin) is refused.
 */
import { Option } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomBase62, secretDigest } from "../kernel/credentials/tokens.ts"
import { digestsEqual } from "../platform/secrets.ts"

/** Where a request says it comes from. */
export type RequestSite =
  /** `Sec-Fetch-Site: same-origin` or `none`, or `Origin` equal to the service's own. */
  | "same-origin"
  /** `Sec-Fetch-Site` naming another site (or a value this check does not know), or a foreign `Origin`. */
  | "cross-site"
  /** `Origin: null` without `Sec-Fetch-Site`: our own no-referrer pages and sandboxed frames alike. */
  | "opaque"
  /** Neither header: a non-browser client, or a browser too old to send either. */
  | "unstated"

export const requestSiteOf = (request: HttpServerRequest.HttpServerRequest, ownOrigin: string): RequestSite => {
  const fetchSite = request.headers["sec-fetch-site"]
  if (fetchSite !== undefined && fetchSite !== "") {
    return fetchSite === "same-origin" || fetchSite === "none" ? "same-origin" : "cross-site"
  }
  const origin = request.headers["origin"]
  if (origin === undefined || origin === "") return "unstated"
  if (origin === "null") return "opaque"
  return origin === ownOrigin ? "same-origin" : "cross-site"
}

/** The origin of the service's base URL, as a browser serializes it in `Origin`. */
export const ownOriginOf = (baseUrl: string): string => new URL(baseUrl).origin

/** A JSON sign-in from another site (or an opaque origin); neither header is a non-browser client and passes. */
export const isForeignApiCall = (request: HttpServerRequest.HttpServerRequest, ownOrigin: string): boolean => {
  const site = requestSiteOf(request, ownOrigin)
  return site === "cross-site" || site === "opaque"
}

/** The pre-session cookie of the form token; `__Host-` needs Secure, Path=/ and no Domain. */
export const FORM_COOKIE = "__Host-svc_form"
/** The form field that carries the form token. */
export const FORM_TOKEN_FIELD = "form_token"
const FORM_COOKIE_HOURS = 24
const FORM_KEY = /^[0-9A-Za-z]{43}$/

/** The form token of a cookie value: a digest, so a page never carries the cookie itself. */
const formTokenOf = (key: string) => secretDigest(`svc-form-token:${key}`)

export interface FormGrant {
  /** The cookie value (kept, or new). */
  readonly key: string
  /** What the form carries in `form_token`. */
  readonly token: string
  /** Whether the cookie is new (and so must be set). */
  readonly fresh: boolean
}

const keyOf = (request: HttpServerRequest.HttpServerRequest) =>
  Option.filter(Option.fromNullishOr(request.cookies[FORM_COOKIE]), (value) => FORM_KEY.test(value))

/** The request's well-formed form cookie, else a new one: several open tabs share one. */
export const formGrantFor = (request: HttpServerRequest.HttpServerRequest): FormGrant =>
  Option.match(keyOf(request), {
    onSome: (key) => ({ key, token: formTokenOf(key), fresh: false }),
    onNone: () => {
      const key = randomBase62(43)
      return { key, token: formTokenOf(key), fresh: true }
    }
  })

/** Sets the form cookie on a page that renders a guarded form, when it is new. */
export const withFormCookie = (response: HttpServerResponse.HttpServerResponse, grant: FormGrant) =>
  !grant.fresh ? response : HttpServerResponse.setCookieUnsafe(response, FORM_COOKIE, grant.key, {
    httpOnly: true,
    secure: true,
    sameSite: "strict",
    path: "/",
    maxAge: `${FORM_COOKIE_HOURS} hours`
  })

/** Why a form post is refused. */
export type FormRefusal = "cross_site" | "form_token"

/**
 * The check of every HTML form that signs a person in or sets a credential: the browser's
 * own statement of the site first, then the form token against the cookie. The grant answers
 * the form again (a refused password shows it anew with the same token).
 */
export const checkFormPost = (
  request: HttpServerRequest.HttpServerRequest,
  ownOrigin: string,
  postedToken: string | undefined
): { readonly _tag: "Refused"; readonly reason: FormRefusal } | { readonly _tag: "Allowed"; readonly grant: FormGrant } => {
  if (requestSiteOf(request, ownOrigin) === "cross-site") return { _tag: "Refused", reason: "cross_site" }
  const key = keyOf(request)
  if (Option.isNone(key) || postedToken === undefined || !digestsEqual(formTokenOf(key.value), postedToken)) {
    return { _tag: "Refused", reason: "form_token" }
  }
  return { _tag: "Allowed", grant: { key: key.value, token: formTokenOf(key.value), fresh: false } }
}
