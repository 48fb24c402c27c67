import { Context } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  AuthorizeErrorPage,
  AuthorizeQuery,
  AuthorizeRedirect,
  AuthorizeUnavailablePage,
  ConsentForbiddenPage,
  ConsentForm,
  ConsentPage,
  formOrJson,
  OAuthInvalidClientResponse,
  OAuthRequestErrorResponse,
  OAuthServerErrorResponse,
  RevokeForm,
  TokenForm,
  TokenSuccess
} from "../../../schema/oauth.ts"
import { type OperationPolicy, policy, PUBLIC } from "../../http/policy.ts"

/**
 * Public to the Authentication middleware (the handlers authenticate the client themselves,
 * so failures answer in the OAuth format), published as taking the app client credential:
 * Basic, or client_id and client_secret in the body (hence the empty alternative).
 */
const appClient = () => {
  const runtime: OperationPolicy = { scopes: [], auth: [], idempotency: "none", grain: "app" }
  const annotations = policy(runtime)
  return Context.add(annotations, OpenApi.Override, {
    ...Context.get(annotations, OpenApi.Override),
    "x-auth": ["app_client"],
    security: [{ appClientBasic: [] }, {}]
  })
}

const errors = [OAuthRequestErrorResponse, OAuthInvalidClientResponse, OAuthServerErrorResponse]

/**
 * `/oauth/*`: outside `/api/v1`, answering OAuth errors (RFC 6749 section 5.2), never the
 * envelope. The authorization endpoint and its consent form answer a browser: redirects and
 * HTML pages (decision 0022).
 */
export const OAuthApi = HttpApiGroup.make("oauth")
  .add(
    HttpApiEndpoint.post("token", "/oauth/token", {
      payload: formOrJson(TokenForm, "OAuthTokenRequest"),
      success: TokenSuccess,
      error: errors
    })
      .annotate(OpenApi.Summary, "Exchange the app's client credential for an API key on a profile it holds a grant on")
      .annotate(
        OpenApi.Description,
        "client_secret_basic or client_secret_post (not both). `grant_type=client_credentials` with `profile_id` and " +
          "an optional `scope` (a subset of the grant's scopes), or `grant_type=authorization_code` with the `code` " +
          "and `redirect_uri` of /oauth/authorize. The answer's `scope` lists what the key holds: customers:read and " +
          "visitors:read are withheld on healthcare-family profiles. PKCE (RFC 7636, decision 0106): a code issued " +
          "with a `code_challenge` needs the `code_verifier` whose BASE64URL(SHA-256) equals it, and a `code_verifier` " +
          "sent for a code issued without one is refused; either failure is 400 `invalid_grant` and spends the code " +
          "(a second attempt is `invalid_grant` too). A malformed `code_verifier` is 400 `invalid_request` and spends " +
          "nothing."
      )
      .annotateMerge(appClient()),
    HttpApiEndpoint.post("revoke", "/oauth/revoke", {
      payload: formOrJson(RevokeForm, "OAuthRevokeRequest"),
      success: HttpApiSchema.Empty(200).annotate({ description: "Revoked, or nothing of this app's to revoke: the same answer (RFC 7009)" }),
      error: errors
    })
      .annotate(OpenApi.Summary, "Revoke an API key minted for this app (RFC 7009); any other token answers 200 too")
      .annotateMerge(appClient()),
    HttpApiEndpoint.get("authorize", "/oauth/authorize", {
      payload: AuthorizeQuery.fields,
      success: [AuthorizeRedirect, ConsentPage],
      error: [AuthorizeErrorPage, AuthorizeUnavailablePage]
    })
      .annotate(OpenApi.Summary, "Partner consent: redirects back with a code, or shows the consent screen (email resolution)")
      .annotate(
        OpenApi.Description,
        "A browser request. An unknown client_id or a redirect_uri that is not exactly one of the app's registered " +
          "redirect_uris answers a 400 page and never redirects; every other failure redirects to redirect_uri with " +
          "`error`, `error_description` and `state`. `profile_resolution: external_ref` resolves the profile from the " +
          "hint's `external_ref` claim and redirects with `code` and `state` at once (`external_ref_required`, " +
          "`unknown_external_ref` otherwise); `email` shows a consent screen for the profiles whose owner email matches " +
          "the hint's `email`, or offers to create one. Codes are single use, 10 minutes, exchanged at /oauth/token. " +
          "PKCE (decision 0106) is optional for partner apps (confidential clients) and recommended: " +
          "`code_challenge` with `code_challenge_method=S256` binds the code to its `code_verifier`; `plain`, any other " +
          "method, a method without a challenge, a challenge without a method, or a challenge that is not 43 BASE64URL " +
          "characters redirects `invalid_request` and issues no code."
      )
      .annotateMerge(policy(PUBLIC)),
    HttpApiEndpoint.post("consent", "/oauth/authorize/consent", {
      payload: ConsentForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: AuthorizeRedirect,
      error: [AuthorizeErrorPage, ConsentForbiddenPage, AuthorizeUnavailablePage]
    })
      .annotate(OpenApi.Summary, "The consent screen's answer: approve (redirect with a code) or deny (access_denied)")
      .annotate(
        OpenApi.Description,
        "Posted by the consent screen with its single-use ticket; the consent cookie (HttpOnly, SameSite=Lax) set by the " +
          "screen must come with it, so a cross-site post is refused (403 page)."
      )
      .annotateMerge(policy(PUBLIC))
  )
  .annotate(OpenApi.Description, "OAuth")
