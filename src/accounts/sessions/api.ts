import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  InsufficientScope,
  Unauthorized,
  ValidationError
} from "../../../schema/errors.ts"
import { CreateMcpToken, CreateSession, McpTokenCreated, SessionCreated } from "../../../schema/sessions.ts"
import { policy } from "../../http/policy.ts"

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
