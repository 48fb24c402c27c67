import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiKeyBody, ApiKeyCreated, ApiKeyPage, ApiKeyRotated, CreateApiKey, UpdateApiKey } from "../../../schema/api-keys.ts"
import { PageQuery } from "../../../schema/common.ts"
import { InvalidState, ValidationError, workspaceErrors } from "../../../schema/errors.ts"
import { policy } from "../../http/policy.ts"

/**
 * Writes: a signed-in owner or admin, or the app that created the workspace. Never a user
 * token (403 `insufficient_scope` whatever its grant), so `user_token` is absent from their
 * published `x-auth` and `security`. Answers carrying a plaintext key are never stored for
 * idempotent replay.
 */
const manage = (idempotency: "optional" | "none") =>
  policy({ scopes: [], auth: ["session", "app_client"], idempotency, grain: "workspace" })

/** The list is also open to an owner's or admin's user token. */
const read = policy({ scopes: [], auth: ["session", "app_client", "user_token"], idempotency: "none", grain: "workspace" })

const workspace = { workspaceId: Schema.String }
const key = { workspaceId: Schema.String, keyId: Schema.String }

/** Workspace API keys (`/api/v1/workspaces/{workspaceId}/api-keys`). Decision 0019. */
export const ApiKeysApi = HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.get("listApiKeys", "/workspaces/:workspaceId/api-keys", {
      params: workspace,
      query: PageQuery,
      success: ApiKeyPage,
      error: [...workspaceErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "The workspace's API keys, prefixes only (never a secret)")
      .annotateMerge(read),
    HttpApiEndpoint.post("createApiKey", "/workspaces/:workspaceId/api-keys", {
      params: workspace,
      payload: CreateApiKey,
      success: ApiKeyCreated,
      error: [...workspaceErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Create a key for one profile of the workspace; the plaintext key is shown once")
      .annotateMerge(manage("none")),
    HttpApiEndpoint.patch("updateApiKey", "/workspaces/:workspaceId/api-keys/:keyId", {
      params: key,
      payload: UpdateApiKey,
      success: ApiKeyBody,
      error: [...workspaceErrors, ValidationError.wire, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Rename a key, change its scopes or its rate limit (effective within about 10 seconds)")
      .annotateMerge(manage("optional")),
    HttpApiEndpoint.delete("deleteApiKey", "/workspaces/:workspaceId/api-keys/:keyId", {
      params: key,
      success: ApiKeyBody,
      error: workspaceErrors
    })
      .annotate(OpenApi.Summary, "Revoke a key at once (the same as POST .../revoke); the record stays listed as revoked")
      .annotateMerge(manage("none")),
    HttpApiEndpoint.post("revokeApiKey", "/workspaces/:workspaceId/api-keys/:keyId/revoke", {
      params: key,
      success: ApiKeyBody,
      error: workspaceErrors
    })
      .annotate(OpenApi.Summary, "Revoke a key at once; it stops authenticating within about 10 seconds")
      .annotateMerge(manage("none")),
    HttpApiEndpoint.post("rotateApiKey", "/workspaces/:workspaceId/api-keys/:keyId/rotate", {
      params: key,
      success: ApiKeyRotated,
      error: [...workspaceErrors, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Mint a successor (plaintext shown once); the old key stays valid 48 hours, then expires")
      .annotateMerge(manage("none"))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Workspace API keys")
