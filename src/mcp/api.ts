import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { DatabaseUnavailable, InsufficientScope, RateLimitExceeded, Unauthorized, ValidationError } from "../../schema/errors.ts"
import {
  JsonRpcAccepted,
  JsonRpcAnswer,
  JsonRpcMessage,
  McpBadRequestResponse,
  McpMethodNotAllowedResponse,
  McpUnknownSessionResponse,
  McpUnsupportedMediaResponse,
  ProtectedResourceMetadata
} from "../../schema/mcp.ts"
import { policy } from "../http/policy.ts"

/** `POST /mcp` takes an MCP user token only (decision 0103); the handler checks it itself. */
const userTokenOperation = policy({ scopes: [], auth: ["user_token"], idempotency: "none", grain: "none" })
const publicOperation = policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })

const TOOLS =
  "Tools: list_workspaces, list_profiles, analytics_overview, analytics_timeseries, list_campaigns, list_conversions, " +
  "conversion_journey, list_recommendations, conversion_sync_wiring, list_export_deliveries (reads), " +
  "upsert_goal_definition, dismiss_recommendation (writes: need the mcp:write grant and the workspace's " +
  "mcp_writeback_enabled). Each needs the scope of its HTTP operation; a call without it answers a tool result with " +
  "`isError: true` and the envelope `insufficient_scope`. `tools/list` names only the tools the token's grant lets it " +
  "call (the same scope rule as `tools/call`); a profile where the person's membership allows less still refuses."

/**
 * The agent surface (decision 0103): Model Context Protocol over the Streamable HTTP transport.
 * Outside `/api/v1` and its middleware: the handler reads the raw body (JSON-RPC errors, not the
 * envelope's `validation_error`) and authenticates itself (a 401 names the protected-resource metadata).
 */
export const McpApi = HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.post("call", "/mcp", {
      payload: JsonRpcMessage,
      success: [JsonRpcAnswer, JsonRpcAccepted],
      error: [
        McpBadRequestResponse,
        // The edge's refusal of text PostgreSQL cannot store (NUL, lone surrogates), before any handler.
        ValidationError.wire,
        Unauthorized.wire,
        InsufficientScope.wire,
        McpUnknownSessionResponse,
        McpUnsupportedMediaResponse,
        RateLimitExceeded.wire,
        DatabaseUnavailable.wire
      ]
    })
      .annotate(OpenApi.Summary, "MCP (Streamable HTTP): one JSON-RPC message per request: initialize, ping, tools/list, tools/call")
      .annotate(
        OpenApi.Description,
        "Protocol revisions 2025-06-18 and 2025-03-26 (batches only under 2025-03-26). `initialize` answers an " +
          "`Mcp-Session-Id` header, required on every later request (missing: 400; not issued to this token: 404, " +
          "initialize again). `MCP-Protocol-Version`, when sent, must be a revision this server speaks (400 otherwise). " +
          "Notifications and client responses alone answer 202 with no body. Answers are `application/json`; a client " +
          "whose `Accept` names only `text/event-stream` gets the same answer as one server-sent event. Malformed JSON is " +
          "400 with JSON-RPC `-32700`; an unknown method `-32601`; an unknown tool `-32602`; bad tool arguments a tool " +
          "result with `isError: true` and `validation_error`. Each request costs the token's per-minute units (a tool " +
          "call what its HTTP operation costs). A missing or invalid token is 401 with `WWW-Authenticate: Bearer " +
          "resource_metadata=...`; an API key is 403 `insufficient_scope`.\n\n" + TOOLS
      )
      .annotateMerge(userTokenOperation),
    HttpApiEndpoint.get("openStream", "/mcp", {
      success: HttpApiSchema.NoContent,
      error: McpMethodNotAllowedResponse
    })
      .annotate(OpenApi.Summary, "No server-initiated stream: 405 (POST /mcp answers every request in its own response)")
      .annotate(
        OpenApi.Description,
        "The transport lets a server decline the GET stream: this one sends no server-initiated messages (no " +
          "subscriptions, no list-changed notifications), so it answers 405 with `Allow: POST`."
      )
      .annotateMerge(publicOperation),
    HttpApiEndpoint.delete("endSession", "/mcp", {
      success: HttpApiSchema.NoContent,
      error: McpMethodNotAllowedResponse
    })
      .annotate(OpenApi.Summary, "Sessions are not ended by the client: 405 (a session id holds no server state)")
      .annotate(
        OpenApi.Description,
        "Session ids are stateless (decision 0103): there is nothing to end. A client drops its id; revoking the token " +
          "ends every session of it."
      )
      .annotateMerge(publicOperation),
    HttpApiEndpoint.get("protectedResource", "/.well-known/oauth-protected-resource", { success: ProtectedResourceMetadata })
      .annotate(OpenApi.Summary, "Protected-resource metadata (RFC 9728) of the agent surface: where its tokens come from")
      .annotate(
        OpenApi.Description,
        "`resource` is `{mcp_url}/mcp`; `authorization_servers` names the agent OAuth surface, whose metadata is " +
          "/.well-known/oauth-authorization-server. Public."
      )
      .annotateMerge(publicOperation)
  )
  .annotate(OpenApi.Description, "Agent surface (MCP): JSON-RPC tools over the same services and scopes as /api/v1")
