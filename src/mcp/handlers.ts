/**
 * `POST /mcp` and its neighbours (decision 0103). Raw handlers: the body is read here so a
 * malformed one answers JSON-RPC, and the token is checked here so a 401 carries
 * `WWW-Authenticate` with the protected-resource metadata (the `/api/v1` middleware does neither).
 * The per-minute allowance is the token's own bucket, shared with its `/api/v1` calls.
 */
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { RateLimiter } from "effect/persistence/RateLimiter"
import { InsufficientScope, Unauthorized } from "../../schema/errors.ts"
import { CredentialPrefix } from "../kernel/credentials/tokens.ts"
import { CredentialStore } from "../kernel/principal.ts"
import { AppConfig } from "../platform/config.ts"
import { consumeBucket } from "../platform/rate-limit.ts"
import { mediaTypeOf } from "../platform/request-info.ts"
import { McpServer, RpcCode } from "./service.ts"
import { publicGroupApi } from "../http/group-api.ts"
import { McpApi } from "./api.ts"

const METER_WINDOW = Duration.minutes(1)

const bearerOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
  return match?.[1]
}

/** `Accept` names server-sent events and not JSON: the answer goes out as one SSE event. */
const wantsEventStream = (accept: string | undefined) => {
  if (accept === undefined) return false
  const types = accept.split(",").map((part) => part.split(";")[0]?.trim().toLowerCase() ?? "")
  return types.includes("text/event-stream") &&
    !types.some((type) => type === "application/json" || type === "application/*" || type === "*/*")
}

const notAllowed = (message: string) =>
  Effect.succeed(HttpServerResponse.jsonUnsafe(
    { jsonrpc: "2.0", id: null, error: { code: RpcCode.invalidRequest, message } },
    { status: 405, headers: { allow: "POST" } }
  ))

export const McpHandlers = HttpApiBuilder.group(publicGroupApi(McpApi), "mcp", (handlers) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig
    const store = yield* CredentialStore
    const limiter = yield* RateLimiter
    const server = yield* McpServer
    const metadataUrl = `${settings.baseUrl}/.well-known/oauth-protected-resource`
    const challenge = `Bearer resource_metadata="${metadataUrl}"`

    /** 401 with the challenge that sends an MCP client to the agent OAuth surface. */
    const unauthorized = (message: string) =>
      Effect.flatMap(
        HttpEffect.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeader(response, "www-authenticate", challenge))
        ),
        () => Effect.fail(new Unauthorized({ message }))
      )

    const principalOf = Effect.fn("Mcp.principalOf")(function*(request: HttpServerRequest.HttpServerRequest) {
      const token = bearerOf(request)
      if (token === undefined) return yield* unauthorized("Authentication required: send Authorization: Bearer <MCP user token>.")
      const found = yield* store.bearer(Redacted.make(token))
      if (Option.isNone(found)) return yield* unauthorized("Missing, invalid, expired or revoked credential.")
      const principal = found.value
      if (principal.kind !== "user_token") {
        return yield* new InsufficientScope({
          message: `The agent surface accepts MCP user tokens (${CredentialPrefix.userToken}...), not ${principal.kind.replace("_", " ")} credentials.`,
          reason: "credential_kind_not_accepted"
        })
      }
      return principal
    })

    return handlers
      .handleRaw("call", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* principalOf(request)
          const type = mediaTypeOf(request.headers["content-type"])
          if (type !== "application/json") {
            return HttpServerResponse.jsonUnsafe(
              { jsonrpc: "2.0", id: null, error: { code: RpcCode.invalidRequest, message: "Send JSON-RPC as application/json." } },
              { status: 415 }
            )
          }
          const body = yield* Effect.orDie(request.text)
          const meter = (units: number) =>
            Effect.flatMap(
              consumeBucket(limiter, {
                key: `user_token:${principal.tokenId}`,
                limit: principal.rateLimitUnitsPerMinute,
                window: METER_WINDOW,
                tokens: units,
                exceeded: { message: `Rate limit of ${principal.rateLimitUnitsPerMinute} requests per minute exceeded.` }
              }),
              (taken) =>
                Option.isNone(taken) ? Effect.void : HttpEffect.appendPreResponseHandler((_request, response) =>
                  Effect.succeed(HttpServerResponse.setHeaders(response, {
                    "x-ratelimit-limit": String(taken.value.limit),
                    "x-ratelimit-remaining": String(Math.max(0, taken.value.remaining)),
                    "x-ratelimit-reset": String(Math.ceil(Duration.toSeconds(taken.value.resetAfter)))
                  }))
                )
            ).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request))
          const answer = yield* server.handle(principal, {
            body,
            sessionId: request.headers["mcp-session-id"],
            protocolVersion: request.headers["mcp-protocol-version"]
          }, meter)
          const headers: Record<string, string> = answer.sessionId === undefined ? {} : { "mcp-session-id": answer.sessionId }
          if (answer.body === undefined) return HttpServerResponse.empty({ status: answer.status, headers })
          if (answer.status === 200 && wantsEventStream(request.headers["accept"])) {
            return HttpServerResponse.text(`event: message\ndata: ${JSON.stringify(answer.body)}\n\n`, {
              status: 200,
              contentType: "text/event-stream",
              headers: { ...headers, "cache-control": "no-cache" }
            })
          }
          return HttpServerResponse.jsonUnsafe(answer.body, { status: answer.status, headers })
        }))
      .handleRaw("openStream", () => notAllowed("This server offers no server-initiated stream: POST JSON-RPC to /mcp."))
      .handleRaw("endSession", () => notAllowed("Sessions hold no server state and are not ended by DELETE: drop the id."))
      .handle("protectedResource", () =>
        Effect.succeed({
          resource: `${settings.baseUrl}/mcp`,
          authorization_servers: [settings.baseUrl],
          scopes_supported: ["mcp:read", "mcp:read_pii", "mcp:write"],
          bearer_methods_supported: ["header"],
          resource_name: "Attribution Service agent surface (MCP)"
        }))
  })).pipe(Layer.provide(McpServer.layer))
