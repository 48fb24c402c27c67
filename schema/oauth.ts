/**
 * The OAuth surface (`/oauth/token`, `/oauth/revoke`, `/oauth/authorize`): request forms, the
 * token response and the OAuth error format of RFC 6749 section 5.2, which the token and
 * revoke endpoints answer instead of the error envelope (the envelope renderer passes a JSON
 * error in this format untouched). The authorization endpoint answers browsers: redirects
 * carrying a code or an error (section 4.1.2), and small HTML pages.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { openObject } from "./common.ts"

/**
 * `grant_type=client_credentials` mints an API key for one profile the app holds a live grant
 * on; `grant_type=authorization_code` exchanges a code from `/oauth/authorize` (decision 0022).
 * Like every request form of `/oauth/*`, open: unrecognized parameters are ignored (RFC 6749
 * section 3.1; decision 0048).
 */
export const TokenForm = openObject(Schema.Struct({
  grant_type: Schema.String.annotate({ description: "`client_credentials` or `authorization_code`" }),
  profile_id: Schema.optionalKey(Schema.String.annotate({ description: "client_credentials: the profile the key is for" })),
  scope: Schema.optionalKey(
    Schema.String.annotate({
      description: "client_credentials: space-separated API scopes narrowing the key to a subset of the grant's"
    })
  ),
  code: Schema.optionalKey(Schema.String.annotate({ description: "authorization_code: the code from /oauth/authorize" })),
  redirect_uri: Schema.optionalKey(
    Schema.String.annotate({ description: "authorization_code: exactly the redirect_uri the code was issued for" })
  ),
  code_verifier: Schema.optionalKey(
    Schema.String.annotate({
      description: "authorization_code: the PKCE verifier (43 to 128 characters of [A-Za-z0-9-._~], RFC 7636) when the " +
        "code was issued with a code_challenge; refused for a code issued without one"
    })
  ),
  client_id: Schema.optionalKey(Schema.String.annotate({ description: "client_secret_post only" })),
  client_secret: Schema.optionalKey(Schema.String.annotate({ description: "client_secret_post only" }))
})).annotate({ identifier: "OAuthTokenRequest" })
export type TokenForm = typeof TokenForm.Type

/** RFC 7009 revocation request. */
export const RevokeForm = openObject(Schema.Struct({
  token: Schema.String.annotate({ description: "An API key minted for this app" }),
  token_type_hint: Schema.optionalKey(Schema.String.annotate({ description: "Accepted and ignored" })),
  client_id: Schema.optionalKey(Schema.String.annotate({ description: "client_secret_post only" })),
  client_secret: Schema.optionalKey(Schema.String.annotate({ description: "client_secret_post only" }))
})).annotate({ identifier: "OAuthRevokeRequest" })
export type RevokeForm = typeof RevokeForm.Type

/** The form, or the same fields as a JSON object. */
export const formOrJson = <S extends Schema.Top>(schema: S, identifier: string) =>
  [schema.pipe(HttpApiSchema.asFormUrlEncoded()), schema.annotate({ identifier: `${identifier}Json` })] as const

export const TokenResponse = Schema.Struct({
  access_token: Schema.String.annotate({ description: "The API key (`svc_live_...`), shown once" }),
  token_type: Schema.Literal("Bearer"),
  scope: Schema.String.annotate({ description: "Space-separated scopes the key holds" }),
  profile_id: Schema.String
}).annotate({ identifier: "OAuthTokenResponse" })
export type TokenResponse = typeof TokenResponse.Type

/** Token responses are never cached (RFC 6749 section 5.1); the errors carry the same headers. */
const NoStoreHeaders = { "cache-control": Schema.Literal("no-store"), pragma: Schema.Literal("no-cache") }
export const noStore = { "cache-control": "no-store", pragma: "no-cache" } as const

export const TokenSuccess = HttpApiSchema.WithHeaders(TokenResponse, NoStoreHeaders)

/** The `WWW-Authenticate` challenge of every 401 `invalid_client`. */
export const BASIC_CHALLENGE = "Basic realm=\"svc\""

export const OAuthRequestErrorCode = Schema.Literals([
  "invalid_request",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope"
])

/** A 400 OAuth error: malformed request, unusable grant, unsupported grant type or scope. */
export class OAuthRequestError extends Schema.TaggedError<OAuthRequestError>()("OAuthRequestError", {
  error: OAuthRequestErrorCode,
  error_description: Schema.String
}) {}

/** 401 `invalid_client`: no, several, unknown or wrong client credentials. */
export class OAuthInvalidClient extends Schema.TaggedError<OAuthInvalidClient>()("OAuthInvalidClient", {
  error_description: Schema.String
}) {}

/** 500 `server_error` (decision 0003): the database could not be read or written; nothing was minted. */
export class OAuthServerError extends Schema.TaggedError<OAuthServerError>()("OAuthServerError", {
  error_description: Schema.String
}) {}

export type OAuthError = OAuthRequestError | OAuthInvalidClient | OAuthServerError

const errorBody = <C extends Schema.Top>(code: C, status: number, identifier: string) =>
  Schema.Struct({ error: code, error_description: Schema.String }).pipe(HttpApiSchema.status(status)).annotate({
    identifier
  })

/** What the endpoints declare: the class in code, the RFC 6749 body and headers on the wire. */
export const OAuthRequestErrorResponse = OAuthRequestError.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: errorBody(OAuthRequestErrorCode, 400, "OAuthError_400"),
    headers: NoStoreHeaders
  }, {
    decode: ({ body }) => new OAuthRequestError(body),
    encode: (error) => ({ body: { error: error.error, error_description: error.error_description }, headers: noStore })
  })
).annotate({ description: "OAuth error (RFC 6749 section 5.2): invalid_request, invalid_grant, invalid_scope or unsupported_grant_type." })

export const OAuthInvalidClientResponse = OAuthInvalidClient.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: errorBody(Schema.Literal("invalid_client"), 401, "OAuthError_401"),
    headers: { ...NoStoreHeaders, "www-authenticate": Schema.Literal(BASIC_CHALLENGE) }
  }, {
    decode: ({ body }) => new OAuthInvalidClient({ error_description: body.error_description }),
    encode: (error) => ({
      body: { error: "invalid_client" as const, error_description: error.error_description },
      headers: { ...noStore, "www-authenticate": BASIC_CHALLENGE } as const
    })
  })
).annotate({ description: "invalid_client: no, several, unknown or wrong client credentials." })

export const OAuthServerErrorResponse = OAuthServerError.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: errorBody(Schema.Literal("server_error"), 500, "OAuthError_500"),
    headers: NoStoreHeaders
  }, {
    decode: ({ body }) => new OAuthServerError({ error_description: body.error_description }),
    encode: (error) => ({
      body: { error: "server_error" as const, error_description: error.error_description },
      headers: noStore
    })
  })
).annotate({ description: "server_error: the database could not be read or written; nothing was minted. Retry." })

/** `GET /oauth/authorize` (decision 0022): read from the query string by the handler. */
export const AuthorizeQuery = Schema.Struct({
  response_type: Schema.String.annotate({ description: "`code`" }),
  client_id: Schema.String.annotate({ description: "The app's client id" }),
  redirect_uri: Schema.String.annotate({ description: "Exactly one of the app's registered redirect_uris" }),
  state: Schema.optionalKey(Schema.String.annotate({ description: "Opaque; replayed on every redirect" })),
  scope: Schema.optionalKey(
    Schema.String.annotate({
      description: "A connect scope, or several separated by spaces (default `connections`). `attribution` is never requested."
    })
  ),
  id_token_hint: Schema.String.annotate({
    description: "HS256 JWT signed with the app's jwt secret: iss = client_id, sub, exp, email; external_ref in that mode"
  }),
  code_challenge: Schema.optionalKey(
    Schema.String.annotate({
      description: "PKCE (optional for partner apps, recommended): BASE64URL(SHA-256(code_verifier)), 43 characters"
    })
  ),
  code_challenge_method: Schema.optionalKey(
    Schema.String.annotate({ description: "`S256`, required with code_challenge; `plain` is refused" })
  )
}).annotate({ identifier: "OAuthAuthorizeRequest" })

/** `POST /oauth/authorize/consent`: the consent screen's form. */
export const ConsentForm = openObject(Schema.Struct({
  ticket: Schema.String.annotate({ description: "The consent ticket the screen carries (single use, 10 minutes)" }),
  decision: Schema.Literals(["approve", "deny"]),
  profile_id: Schema.optionalKey(Schema.String.annotate({ description: "The profile chosen, when the screen offered some" }))
})).annotate({ identifier: "OAuthConsentForm" })

/** The answer to the client: a redirect to its redirect_uri with `code` and `state`, or `error`. */
export const AuthorizeRedirect = HttpApiSchema.Empty(302).annotate({
  description: "Redirect to redirect_uri carrying `code` and `state`, or `error`, `error_description` and `state` " +
    "(RFC 6749 section 4.1.2)"
})

/** An HTML page: the consent screen (200) or an error the request's redirect_uri cannot carry (400, 403). */
const htmlPage = (status: number, description: string) =>
  Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(status)).annotate({
    description
  })

export const ConsentPage = htmlPage(200, "The consent screen (email resolution): approve or deny, choosing a profile")
export const AuthorizeErrorPage = htmlPage(
  400,
  "Unknown client_id or unregistered redirect_uri (never redirected), or a consent ticket that is unknown, used or expired"
)
export const ConsentForbiddenPage = htmlPage(403, "The consent form was posted without the consent cookie set by its screen")
export const AuthorizeUnavailablePage = htmlPage(500, "The service could not answer (database unreachable); try again")

/** RFC 6749 section 4.1.2.1 error codes this endpoint redirects with. */
export const AuthorizeErrorCode = Schema.Literals([
  "invalid_request",
  "unauthorized_client",
  "access_denied",
  "unsupported_response_type",
  "invalid_scope",
  "server_error"
])
export type AuthorizeErrorCode = typeof AuthorizeErrorCode.Type

/** An authorization failure reported to the client by redirect (its redirect_uri is known good). */
export class AuthorizeRedirectError extends Schema.TaggedError<AuthorizeRedirectError>()("AuthorizeRedirectError", {
  error: AuthorizeErrorCode,
  error_description: Schema.String
}) {}

/** An authorization failure answered to the browser as a page, never redirected (RFC 6749 section 4.1.2.1). */
export class AuthorizePageError extends Schema.TaggedError<AuthorizePageError>()("AuthorizePageError", {
  status: Schema.Literals([400, 403, 500]),
  title: Schema.String,
  message: Schema.String
}) {}
