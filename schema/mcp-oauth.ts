/**
 * The agent OAuth surface (`/oauth/mcp/*`, `/.well-known/oauth-authorization-server`),
 * decision 0023: authorization server metadata (RFC 8414), dynamic client registration
 * (RFC 7591), the PKCE authorization request with its consent screen, and the code exchange
 * that yields an MCP user token. Errors are OAuth-format JSON (RFC 6749 section 5.2 and
 * RFC 7591 section 3.2.2), never the error envelope; token errors reuse schema/oauth.ts.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { openObject } from "./common.ts"
import { McpGrants } from "./scopes.ts"

const described = (description: string) => Schema.String.annotate({ description })

/** RFC 8414 authorization server metadata. */
export const AuthorizationServerMetadata = Schema.Struct({
  issuer: described("The service's base URL"),
  authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  registration_endpoint: Schema.String,
  response_types_supported: Schema.Array(Schema.Literal("code")),
  grant_types_supported: Schema.Array(Schema.Literal("authorization_code")),
  code_challenge_methods_supported: Schema.Array(Schema.Literal("S256")),
  token_endpoint_auth_methods_supported: Schema.Array(Schema.Literal("none")),
  scopes_supported: Schema.Array(Schema.Literals(McpGrants))
}).annotate({ identifier: "OAuthAuthorizationServerMetadata" })
export type AuthorizationServerMetadata = typeof AuthorizationServerMetadata.Type

/**
 * RFC 7591 client metadata the service reads; other members are ignored (section 2). The
 * request forms below are open too: unrecognized parameters are ignored (RFC 6749 section 3.1;
 * decision 0048).
 */
export const ClientRegistrationRequest = openObject(Schema.Struct({
  redirect_uris: Schema.Array(
    described("https, or http on a loopback host (127.0.0.1, [::1], localhost; RFC 8252); no fragment")
  ),
  client_name: Schema.optionalKey(described("Shown on the consent screen, marked as unverified; at most 100 characters")),
  token_endpoint_auth_method: Schema.optionalKey(Schema.Literal("none").annotate({ description: "Public clients only" })),
  grant_types: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description: "Must contain `authorization_code`; `refresh_token` is accepted and dropped (not served)"
    })
  ),
  response_types: Schema.optionalKey(Schema.Array(Schema.Literal("code"))),
  scope: Schema.optionalKey(described("Space-separated MCP grants the client may ask for; default all three"))
})).annotate({ identifier: "McpClientRegistrationRequest" })

/** 201: the registered client (RFC 7591 section 3.2.1). */
export const ClientRegistered = Schema.Struct({
  client_id: Schema.String,
  client_id_issued_at: Schema.Int.annotate({ description: "Seconds since the epoch" }),
  client_name: Schema.optionalKey(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  token_endpoint_auth_method: Schema.Literal("none"),
  grant_types: Schema.Array(Schema.Literal("authorization_code")),
  response_types: Schema.Array(Schema.Literal("code")),
  scope: Schema.String
}).annotate({ identifier: "McpClientRegistered" })
export type ClientRegistered = typeof ClientRegistered.Type

const NoStoreHeaders = { "cache-control": Schema.Literal("no-store"), pragma: Schema.Literal("no-cache") }
const noStore = { "cache-control": "no-store", pragma: "no-cache" } as const

export const ClientRegisteredSuccess = HttpApiSchema.WithHeaders(ClientRegistered.pipe(HttpApiSchema.status(201)), NoStoreHeaders)

export const RegistrationErrorCode = Schema.Literals(["invalid_redirect_uri", "invalid_client_metadata"])

/** A 400 RFC 7591 registration error. */
export class McpRegistrationError extends Schema.TaggedError<McpRegistrationError>()("McpRegistrationError", {
  error: RegistrationErrorCode,
  error_description: Schema.String
}) {}

export const McpRegistrationErrorResponse = McpRegistrationError.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: Schema.Struct({ error: RegistrationErrorCode, error_description: Schema.String }).pipe(HttpApiSchema.status(400))
      .annotate({ identifier: "OAuthRegistrationError_400" }),
    headers: NoStoreHeaders
  }, {
    decode: ({ body }) => new McpRegistrationError(body),
    encode: (error) => ({ body: { error: error.error, error_description: error.error_description }, headers: noStore })
  })
).annotate({ description: "RFC 7591 registration error: invalid_redirect_uri or invalid_client_metadata." })

/** 429: too many registrations (or sign-in attempts) from this address, or overall. */
export class McpRateLimited extends Schema.TaggedError<McpRateLimited>()("McpRateLimited", {
  error_description: Schema.String,
  retry_after_seconds: Schema.Int
}) {}

export const McpRateLimitedResponse = McpRateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders({
    body: Schema.Struct({
      error: Schema.Literal("rate_limit_exceeded"),
      error_description: Schema.String,
      retry_after_seconds: Schema.Int
    }).pipe(HttpApiSchema.status(429)).annotate({ identifier: "OAuthRateLimited_429" }),
    headers: { "retry-after": Schema.String }
  }, {
    decode: ({ body }) =>
      new McpRateLimited({ error_description: body.error_description, retry_after_seconds: body.retry_after_seconds }),
    encode: (error) => ({
      body: {
        error: "rate_limit_exceeded" as const,
        error_description: error.error_description,
        retry_after_seconds: error.retry_after_seconds
      },
      headers: { "retry-after": String(error.retry_after_seconds) }
    })
  })
).annotate({ description: "Too many registrations; Retry-After says when to try again." })

/** The authorization request (query string of `GET /oauth/mcp/authorize`). */
export const AuthorizeQuery = Schema.Struct({
  response_type: described("`code`"),
  client_id: described("From registration"),
  redirect_uri: described("Exactly one of the client's registered redirect URIs"),
  state: Schema.optionalKey(described("Echoed on the redirect")),
  scope: Schema.optionalKey(described("Space-separated MCP grants; default `mcp:read`")),
  code_challenge: described("BASE64URL(SHA-256(code_verifier)), 43 characters"),
  code_challenge_method: described("`S256` (plain is refused)")
}).annotate({ identifier: "McpAuthorizeRequest" })

/** The sign-in form of the consent screen; it carries the authorization request along. */
export const SignInForm = openObject(Schema.Struct({
  email: Schema.String,
  password: Schema.String,
  form_token: described("The form token of the sign-in page, matching its `__Host-svc_form` cookie (decision 0107)"),
  ...AuthorizeQuery.fields
})).annotate({ identifier: "McpSignInForm" })

/** The consent screen's answer. */
export const DecisionForm = openObject(Schema.Struct({
  ticket: described("The single-use consent ticket of the page"),
  decision: Schema.Literals(["approve", "deny"])
})).annotate({ identifier: "McpConsentDecision" })

/** An HTML page: the sign-in form or the consent screen. */
export const HtmlPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "HTML page: the sign-in form (again, with the reason, after a refused sign-in) or the consent screen"
})

const errorPage = (status: 400 | 403 | 429, description: string) =>
  Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(status)).annotate({
    description
  })

/** Error pages: what cannot be redirected to the client is told to the person, never redirected. */
export const AuthorizeErrorPage = errorPage(
  400,
  "Error page, never a redirect: unknown client_id or a redirect_uri the client did not register"
)
export const SignInErrorPage = errorPage(
  400,
  "Error page, never a redirect: not posted as a form, or the authorization request it carries names an unknown " +
    "client_id or an unregistered redirect_uri"
)
export const DecisionErrorPage = errorPage(
  400,
  "Error page, never a redirect: not posted as a form or not answered (approve or deny with the page's ticket), the " +
    "session is signed out, or the consent screen expired, was already answered or was shown to another sign-in"
)
export const CrossSitePage = errorPage(
  403,
  "Error page: the form was posted from another site (`Sec-Fetch-Site` other than same-origin, or a foreign `Origin`), " +
    "or the sign-in form without its page's form token and cookie (decision 0107)"
)
export const SignInThrottledPage = errorPage(
  429,
  "The sign-in form again, saying when to retry (`Retry-After`): too many failed sign-ins for this email from this " +
    "address, or from this address (decision 0107)"
)

/** 302 to the client's redirect_uri with `code` and `state`, or `error` and `state`. */
export const RedirectToClient = HttpApiSchema.Empty(302).annotate({
  description: "Redirect to redirect_uri with code and state (approved) or error, error_description and state"
})

/** `POST /oauth/mcp/token`: `grant_type=authorization_code` with PKCE, public client. */
export const McpTokenForm = openObject(Schema.Struct({
  grant_type: described("`authorization_code`"),
  code: Schema.String,
  redirect_uri: described("The redirect_uri of the authorization request"),
  client_id: Schema.String,
  code_verifier: described("43 to 128 characters of [A-Za-z0-9-._~] (RFC 7636)")
})).annotate({ identifier: "McpTokenRequest" })

export const McpTokenResponse = Schema.Struct({
  access_token: described("The MCP user token (`svc_user_...`), shown once"),
  token_type: Schema.Literal("Bearer"),
  scope: described("Space-separated MCP grants the token carries"),
  expires_in: Schema.Int.annotate({ description: "Seconds until the token expires" })
}).annotate({ identifier: "McpTokenResponse" })
export type McpTokenResponse = typeof McpTokenResponse.Type

export const McpTokenSuccess = HttpApiSchema.WithHeaders(McpTokenResponse, NoStoreHeaders)
