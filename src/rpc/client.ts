/**
 * Typed client of the internal RPC surface (schema/rpc.ts), for other internal services:
 *
 *   const rpc = yield* makeServiceClient({ url: "http://svc:8080", credential, transport: "websocket", serialization: "binary" })
 *   const overview = yield* rpc.AnalyticsOverview({ profile_id, query: { start: "2026-03-01", end: "2026-03-31" } })
 *
 * The credential (an operator-minted `svc_rpc_...` secret, decision 0081) travels as
 * `authorization: Bearer` on the HTTP request or on the WebSocket upgrade; the server hands it
 * to every call's RPC headers. Transport failures surface as `RpcClientError`; the server's
 * refusals as the HTTP catalogue's tagged errors (`Unauthorized`, `InsufficientScope`, ...).
 */
import { Context, Effect, Layer, Redacted } from "effect"
import type { Scope } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { Socket } from "effect/socket"
import { ServiceRpcs } from "../../schema/rpc.ts"

export type ServiceRpcClient = RpcClient.RpcClient<ServiceRpcs, RpcClientError>

export interface ServiceClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080` (a trailing `/rpc` is accepted too). */
  readonly url: string
  /** An internal-service credential (`svc_rpc_...`), or the deprecated SVC_RPC_TOKEN for the cluster calls. */
  readonly credential: string | Redacted.Redacted<string>
  /** `http` (default): one request per call; `websocket`: one connection for every call, and streams. */
  readonly transport?: "http" | "websocket"
  /** `json` (default) or `binary` (Effect's SchemaBinary, the compact encoding; decision 0082). */
  readonly serialization?: "json" | "binary"
}

/** The endpoint of a transport and serialisation (src/rpc/server.ts serves all four). */
export const endpointOf = (options: ServiceClientOptions): string => {
  const base = options.url.replace(/\/+$/, "").replace(/\/rpc$/, "")
  const ws = options.transport === "websocket"
  const path = `${ws ? "/rpc/ws" : "/rpc"}${options.serialization === "binary" ? "/binary" : ""}`
  return `${ws ? base.replace(/^http/, "ws") : base}${path}`
}

const protocol = (options: ServiceClientOptions) => {
  const serialization = options.serialization === "binary" ? RpcSerialization.layerSchemaBinary() : RpcSerialization.layerJson
  const secret = Redacted.isRedacted(options.credential) ? Redacted.value(options.credential) : options.credential
  if (options.transport === "websocket") {
    return RpcClient.layerProtocolSocket({ retryTransientErrors: true }).pipe(
      Layer.provide(Socket.layerWebSocket(endpointOf(options), { headers: { authorization: `Bearer ${secret}` } })),
      Layer.provide([Socket.layerWebSocketConstructorGlobal, serialization])
    )
  }
  return RpcClient.layerProtocolHttp({
    url: endpointOf(options),
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(secret))
  }).pipe(Layer.provide([FetchHttpClient.layer, serialization]))
}

/** A client whose connection resources live as long as the surrounding scope. */
export const makeServiceClient = (options: ServiceClientOptions): Effect.Effect<ServiceRpcClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(protocol(options))
    return yield* RpcClient.make(ServiceRpcs).pipe(Effect.provideContext(context))
  })

/** The same client as a service, for layer-based wiring. */
export class ServiceClient extends Context.Service<ServiceClient, ServiceRpcClient>()("svc/ServiceClient") {
  static readonly layer = (options: ServiceClientOptions) => Layer.effect(ServiceClient)(makeServiceClient(options))
}
