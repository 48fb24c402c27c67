import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  AuthorizationServerMetadata,
  AuthorizeErrorPage,
  AuthorizeQuery,
  ClientRegisteredSuccess,
  ClientRegistrationRequest,
  CrossSitePage,
  DecisionErrorPage,
  DecisionForm,
  HtmlPage,
  McpRateLimitedResponse,
  McpRegistrationErrorResponse,
  McpTokenForm,
  McpTokenSuccess,
  RedirectToClient,
  SignInErrorPage,
  SignInForm,
  SignInThrottledPage
} from "../../../schema/mcp-oauth.ts"
import {
  formOrJson,
  OAuthInvalidClientResponse,
  OAuthRequestErrorResponse,
  OAuthServerErrorResponse
} from "../../../schema/oauth.ts"
import { policy } from "../../http/policy.ts"

/** Public: no credential; the consent screen authenticates the person itself (svc_session cookie or sign-in). */
const publicOperation = () => policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })

/**
 * `/oauth/mcp/*` and `/.well-known/oauth-authorization-server` (decision 0023): outside
 * `/api/v1` and outside the API middleware, answering OAuth-format errors (or HTML pages for
 * the person), never the envelope.
 */
export const McpOAuthApi = HttpApiGroup.make("mcpOAuth")
  .add(
    HttpApiEndpoint.get("metadata", "/.well-known/oauth-authorization-server", { success: AuthorizationServerMetadata })
      .annotate(OpenApi.Summary, "Authorization server metadata (RFC 8414) of the agent OAuth surface")
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.post("register", "/oauth/mcp/register", {
      payload: ClientRegistrationRequest,
      success: ClientRegisteredSuccess,
      error: [McpRegistrationErrorResponse, McpRateLimitedResponse, OAuthServerErrorResponse]
    })
      .annotate(OpenApi.Summary, "Register an agent as a public OAuth client (RFC 7591 dynamic client registration)")
      .annotate(
        OpenApi.Description,
        "Public clients only (`token_endpoint_auth_method` `none`, PKCE). Redirect URIs: https, or http on a " +
          "loopback host. Limited per client address and overall per hour (decision 0023)."
      )
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.get("authorize", "/oauth/mcp/authorize", {
      payload: AuthorizeQuery.fields,
      success: [HtmlPage, RedirectToClient],
      error: [AuthorizeErrorPage, OAuthServerErrorResponse]
    })
      .annotate(OpenApi.Summary, "Authorization request with PKCE (S256): sign-in if needed, then the consent screen")
      .annotate(
        OpenApi.Description,
        "An unknown client or unregistered redirect_uri shows an error page and never redirects. Other errors " +
          "redirect to redirect_uri with `error` (invalid_request, unsupported_response_type, invalid_scope)."
      )
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.post("signIn", "/oauth/mcp/authorize/sign-in", {
      payload: SignInForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: [HtmlPage, RedirectToClient],
      error: [SignInErrorPage, CrossSitePage, SignInThrottledPage, OAuthServerErrorResponse]
    })
      .annotate(OpenApi.Summary, "The consent screen's sign-in form: sets the svc_session cookie and shows the consent screen")
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.post("decide", "/oauth/mcp/authorize/decision", {
      payload: DecisionForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      // Never a page of its own: a redirect, or an error page.
      success: RedirectToClient,
      error: [DecisionErrorPage, CrossSitePage, OAuthServerErrorResponse]
    })
      .annotate(OpenApi.Summary, "Approve or deny: redirects with a code (approve) or error=access_denied (deny)")
      .annotate(
        OpenApi.Description,
        "Needs the svc_session cookie of the session the consent screen was shown to and that screen's single-use " +
          "consent ticket (10 minutes)."
      )
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.post("token", "/oauth/mcp/token", {
      payload: formOrJson(McpTokenForm, "McpTokenRequest"),
      success: McpTokenSuccess,
      error: [OAuthRequestErrorResponse, OAuthInvalidClientResponse, OAuthServerErrorResponse]
    })
      .annotate(OpenApi.Summary, "Exchange an authorization code and its PKCE verifier for an MCP user token")
      .annotate(
        OpenApi.Description,
        "Public client: client_id in the body, no secret. The token (`svc_user_...`) carries the consented MCP " +
          "grants, expires after 90 days, and is never refreshed. A code used twice revokes the token it issued. " +
          "PKCE (RFC 7636, decision 0106), as at /oauth/token: a missing `code_verifier`, or one whose " +
          "BASE64URL(SHA-256) is not the code's `code_challenge`, is 400 `invalid_grant` and spends the code (a second " +
          "attempt is `invalid_grant` too). A malformed `code_verifier` is 400 `invalid_request` and spends nothing."
      )
      .annotateMerge(publicOperation())
  )
  .annotate(OpenApi.Description, "Agent OAuth (MCP): registration, PKCE authorization with consent, user tokens")
