/**
 * Strings that cannot reach the database are refused at the edge: PostgreSQL refuses NUL in
 * text and a lone UTF-16 surrogate cannot be encoded, so either would fail a statement deep in
 * a handler. Here they answer 400 naming the field (`invalid_parameter` for the URL,
 * `validation_error` for a body; the OAuth routes in their own format), before any work.
 */
import { HttpServerResponse } from "effect/http"
import { isStorableText } from "../../schema/common.ts"
import { InvalidParameter, ValidationError } from "../../schema/errors.ts"
import { errorPage, formPages } from "../platform/html.ts"

const PROBLEM = "must not contain NUL characters or unpaired UTF-16 surrogates"


/** The path of the first key or string in a JSON value that is not storable. */
const unstorableIn = (value: unknown, path: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  if (typeof value === "string") return isStorableText(value) ? undefined : path
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = unstorableIn(value[index], [...path, String(index)])
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (!isStorableText(key)) return [...path, "(key)"]
      const found = unstorableIn(item, [...path, key])
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** The query parameter (or the path) of a URL carrying an escaped NUL. */
export const unstorableInUrl = (url: string): string | undefined => {
  // Percent-decoding cannot produce a lone surrogate (bad UTF-8 decodes to U+FFFD), only NUL.
  if (!url.includes("%00")) return undefined
  const queryStart = url.indexOf("?")
  if (queryStart === -1 || url.slice(0, queryStart).includes("%00")) return "path"
  for (const [name, value] of new URLSearchParams(url.slice(queryStart + 1))) {
    if (!isStorableText(name)) return "query"
    if (!isStorableText(value)) return `query.${name}`
  }
  return undefined
}

/** The field of a JSON or form body holding an unstorable string. */
export const unstorableInBody = (text: string): string | undefined => {
  // Raw NUL is not valid in JSON text (the decoder refuses it); escapes are what get through.
  if (text.includes("\\u")) {
    const parsed = parseOrUndefined(text)
    const found = parsed === undefined ? undefined : unstorableIn(parsed, ["body"])
    if (found !== undefined) return found.join(".")
  }
  if (text.includes("%00")) {
    for (const [name, value] of new URLSearchParams(text)) {
      if (!isStorableText(name) || !isStorableText(value)) return `body.${isStorableText(name) ? name : "(key)"}`
    }
  }
  return undefined
}

const parseOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Browser pages of the OAuth flows: they answer an HTML page, not JSON. */
const OAUTH_PAGES = new Set([
  "GET /oauth/authorize",
  "POST /oauth/authorize/consent",
  "GET /oauth/mcp/authorize",
  "POST /oauth/mcp/authorize/sign-in",
  "POST /oauth/mcp/authorize/decision"
])

/**
 * The refusal for `field` (`path`, `query.<name>` or `body.<path>`): an OAuth route answers as
 * OAuth does (RFC 6749 `invalid_request`, or an error page for its browser pages), everything
 * else with the catalogue's error.
 */
export const unstorableRefusal = (
  method: string,
  pathname: string,
  field: string
): { readonly error: InvalidParameter | ValidationError } | { readonly response: HttpServerResponse.HttpServerResponse } => {
  const message = `${field}: ${PROBLEM}`
  // The set-password page of a one-time link is a browser page too (decision 0053).
  if (pathname.startsWith("/oauth/") || pathname === "/account/password") {
    if (OAUTH_PAGES.has(`${method} ${pathname}`) || pathname === "/account/password") {
      return {
        response: HttpServerResponse.html(errorPage("Invalid request", `The request ${message}.`)).pipe(
          HttpServerResponse.setStatus(400),
          HttpServerResponse.setHeaders(formPages.headers())
        )
      }
    }
    // Dynamic client registration has its own error codes (RFC 7591 section 3.2.2).
    const code = pathname === "/oauth/mcp/register" ? "invalid_client_metadata" : "invalid_request"
    return {
      response: HttpServerResponse.jsonUnsafe(
        { error: code, error_description: `The request's ${field} ${PROBLEM}.` },
        { status: 400, headers: { "cache-control": "no-store", pragma: "no-cache" } }
      )
    }
  }
  return field.startsWith("body")
    ? { error: new ValidationError({ message, reason: "unstorable_text" }) }
    : { error: new InvalidParameter({ message, reason: `invalid_parameter:${field.replace(/^query\./, "")}` }) }
}
