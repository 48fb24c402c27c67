/**
 * The agent surface (`POST /mcp`, decision 0103): Model Context Protocol messages over the
 * Streamable HTTP transport, as JSON-RPC 2.0 envelopes. The handler reads the raw body itself
 * (a malformed one answers JSON-RPC `-32700`, never the envelope's `validation_error`); these
 * schemas describe the wire for the published document.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** Protocol revisions this server speaks, newest first (the first is offered when a client asks for another). */
export const MCP_PROTOCOL_VERSIONS = ["2025-06-18", "2025-03-26"] as const
export type McpProtocolVersion = typeof MCP_PROTOCOL_VERSIONS[number]

export const JsonRpcId = Schema.Union([Schema.String, Schema.Int]).annotate({
  description: "The request id, echoed in its answer; absent on a notification"
})

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export const JsonRpcRequest = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.optionalKey(JsonRpcId),
  method: Schema.String.annotate({
    description: "initialize, notifications/initialized, ping, tools/list or tools/call"
  }),
  params: Schema.optionalKey(JsonObject)
}).annotate({ identifier: "JsonRpcRequest" })

/** One message, or (protocol revision 2025-03-26 only) a batch of them. */
export const JsonRpcMessage = Schema.Union([JsonRpcRequest, Schema.Array(JsonRpcRequest)]).annotate({
  identifier: "JsonRpcMessage"
})

export const JsonRpcErrorObject = Schema.Struct({
  code: Schema.Int.annotate({ description: "-32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid params" }),
  message: Schema.String,
  data: Schema.optionalKey(Schema.Unknown)
}).annotate({ identifier: "JsonRpcError" })

export const JsonRpcResponse = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.NullOr(JsonRpcId),
  result: Schema.optionalKey(JsonObject),
  error: Schema.optionalKey(JsonRpcErrorObject)
}).annotate({ identifier: "JsonRpcResponse" })

/** The answer of a request with ids: one response, or a batch's responses. */
export const JsonRpcAnswer = Schema.Union([JsonRpcResponse, Schema.Array(JsonRpcResponse)]).annotate({
  identifier: "JsonRpcAnswer"
})

/** A body of notifications only: accepted, no body. */
export const JsonRpcAccepted = HttpApiSchema.Accepted

/**
 * A transport-level refusal in JSON-RPC form: malformed JSON (400, -32700), not a JSON-RPC
 * message (400, -32600), a missing or unknown `Mcp-Session-Id` (400 / 404), an unsupported
 * `MCP-Protocol-Version` (400), a body that is not `application/json` (415). The raw handler
 * writes these answers itself; the schemas document them.
 */
const transportFailure = (status: number) =>
  JsonRpcResponse.pipe(HttpApiSchema.status(status)).annotate({ identifier: `JsonRpcTransportError_${status}` })

export const McpBadRequestResponse = transportFailure(400)
export const McpUnknownSessionResponse = transportFailure(404)
export const McpMethodNotAllowedResponse = transportFailure(405)
export const McpUnsupportedMediaResponse = transportFailure(415)

/** RFC 9728 protected-resource metadata of the agent surface: where its tokens come from. */
export const ProtectedResourceMetadata = Schema.Struct({
  resource: Schema.String,
  authorization_servers: Schema.Array(Schema.String),
  scopes_supported: Schema.Array(Schema.String),
  bearer_methods_supported: Schema.Array(Schema.String),
  resource_name: Schema.String
}).annotate({ identifier: "ProtectedResourceMetadata" })
