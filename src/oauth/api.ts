import { Context } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  formOrJson,
  OAuthInvalidClientResponse,
  OAuthRequestErrorResponse,
  OAuthServerErrorResponse,
  RevokeForm,
  TokenForm,
  TokenSuccess
} from "../../schema/oauth.ts"
import { type OperationPolicy, policy } from "../http/policy.ts"

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

/** `/oauth/*`: outside `/api/v1`, answering OAuth errors (RFC 6749 section 5.2), never the envelope. */
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
          "an optional `scope` (a subset of the grant's scopes). The answer's `scope` lists what the key holds: " +
          "customers:read and visitors:read are withheld on healthcare-family profiles."
      )
      .annotateMerge(appClient()),
    HttpApiEndpoint.post("revoke", "/oauth/revoke", {
      payload: formOrJson(RevokeForm, "OAuthRevokeRequest"),
      success: HttpApiSchema.Empty(200).annotate({ description: "Revoked, or nothing of this app's to revoke: the same answer (RFC 7009)" }),
      error: errors
    })
      .annotate(OpenApi.Summary, "Revoke an API key minted for this app (RFC 7009); any other token answers 200 too")
      .annotateMerge(appClient())
  )
  .annotate(OpenApi.Description, "OAuth")
