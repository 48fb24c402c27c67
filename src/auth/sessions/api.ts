import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  InsufficientScope,
  Unauthorized,
  ValidationError
} from "../../../schema/errors.ts"
import { CreateMcpToken, CreateSession, McpTokenCreated, SessionCreated } from "../../../schema/sessions.ts"
import { Principal } from "../principal.ts"
import { policy } from "../../http/policy.ts"

/**
 * Unsafe methods (POST, PUT, PATCH, DELETE) authenticated by the session cookie must carry
 * `X-CSRF-Token` matching the session's token, else 403 `insufficient_scope` with reason
 * `csrf`. Bearer and Basic credentials carry no ambient authority and are not checked.
 * Decision 0021.
 */
export class Csrf extends HttpApiMiddleware.Service<Csrf, { requires: Principal }>()("svc/Csrf", {
  error: [InsufficientScope.wire, Unauthorized.wire, DatabaseUnavailable.wire]
}) {}

/** Console sign-in and sign-out, and the person's own MCP user tokens. Decision 0021. */
export const SessionsApi = HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("createSession", "/sessions", {
      payload: CreateSession,
      success: SessionCreated,
      error: [Unauthorized.wire, InsufficientScope.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Sign in with email and password; sets the svc_session cookie and returns the CSRF token")
      .annotateMerge(policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })),
    HttpApiEndpoint.delete("deleteCurrentSession", "/sessions/current", {
      success: HttpApiSchema.NoContent,
      error: [Unauthorized.wire, InsufficientScope.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Sign out: revokes this session and clears the cookie")
      .annotateMerge(policy({ scopes: [], auth: ["session"], idempotency: "none", grain: "none" })),
    HttpApiEndpoint.post("createMcpToken", "/me/mcp-tokens", {
      payload: CreateMcpToken,
      success: McpTokenCreated,
      error: [Unauthorized.wire, InsufficientScope.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Mint an MCP user token for the signed-in person; the plaintext is shown once")
      .annotateMerge(policy({ scopes: [], auth: ["session"], idempotency: "none", grain: "none" }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Console sessions and the person's MCP user tokens")
