/**
 * Typed client of the internal RPC surface (schema/rpc.ts), for other internal services:
 *
 *   const rpc = yield* makeServiceClient({ url: "http://svc:8080", credential, transport: "websocket", serialization: "msgpack" })
 *   const overview = yield* rpc.AnalyticsOverview({ profile_id, query: { start: "2026-03-01", end: "2026-03-31" } })
 *
 * The credential (an operator-minted `svc_rpc_...` secret, decision 0081) travels in every
 * request's RPC headers as `authorization: Bearer <secret>` (the client half of `RpcAuth`), the
 * same on HTTP and WebSocket. Transport failures surface as `RpcClientError`; the server's
 * refusals as the HTTP catalogue's tagged errors (`Unauthorized`, `InsufficientScope`, ...).
 */
import { Context, Effect, Layer, Redacted } from "effect"
import type { Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { Headers } from "effect/http"
import { RpcClient, RpcMiddleware, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { Socket } from "effect/socket"
import { RpcAuth, ServiceRpcs } from "../../schema/rpc.ts"
import { layerMsgPack } from "./msgpack.ts"

export type ServiceRpcClient = RpcClient.RpcClient<ServiceRpcs, RpcClientError>

/** The transports the client offers. */
export const TRANSPORTS = ["http", "websocket"] as const
/** The serialisations the client offers. */
export const SERIALIZATIONS = ["json", "msgpack", "binary"] as const

export interface ServiceClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080` (a trailing `/rpc` is accepted too). */
  readonly url: string
  /** An internal-service credential (`svc_rpc_...`), or the deprecated SVC_RPC_TOKEN for the cluster calls. */
  readonly credential: string | Redacted.Redacted<string>
  /** `http` (default): one request per call (a stream's answer streams back in it); `websocket`: one connection for every call. */
  readonly transport?: typeof TRANSPORTS[number]
  /**
   * `json` (default; NDJSON over HTTP, so streams deliver as they go), `msgpack` (MessagePack) or
   * `binary` (Effect's SchemaBinary); decisions 0082, 0113. Every one carries streams on both transports.
   */
  readonly serialization?: typeof SERIALIZATIONS[number]
}

/** The endpoint of a transport and serialisation (src/rpc/server.ts serves all six). */
export const endpointOf = (options: ServiceClientOptions): string => {
  const base = options.url.replace(/\/+$/, "").replace(/\/rpc$/, "")
  const ws = options.transport === "websocket"
  const suffix = options.serialization === "binary" ? "/binary" : options.serialization === "msgpack" ? "/msgpack" : ""
  const path = `${ws ? "/rpc/ws" : "/rpc"}${suffix}`
  return `${ws ? base.replace(/^http/, "ws") : base}${path}`
}

const protocol = (options: ServiceClientOptions) => {
  const websocket = options.transport === "websocket"
  // JSON over HTTP is sent as NDJSON: framed, so a stream's items arrive as they leave; plain JSON
  // would answer only when the call ends (POST /rpc picks by Content-Type; decision 0113).
  const serialization = options.serialization === "binary"
    ? RpcSerialization.layerSchemaBinary()
    : options.serialization === "msgpack" ? layerMsgPack : websocket ? RpcSerialization.layerJson : RpcSerialization.layerNdjson
  if (websocket) {
    return RpcClient.layerProtocolSocket().pipe(
      Layer.provide(Socket.layerWebSocket(endpointOf(options))),
      Layer.provide([Socket.layerWebSocketConstructorGlobal, serialization])
    )
  }
  return RpcClient.layerProtocolHttp({ url: endpointOf(options) }).pipe(Layer.provide([FetchHttpClient.layer, serialization]))
}

/** The client half of `RpcAuth`: the credential in the RPC headers of every request. */
export const credentialHeader = (credential: string | Redacted.Redacted<string>) => {
  const authorization = `Bearer ${Redacted.isRedacted(credential) ? Redacted.value(credential) : credential}`
  return RpcMiddleware.layerClient(RpcAuth, ({ next, request }) =>
    next({ ...request, headers: Headers.set(request.headers, "authorization", authorization) }))
}

/** A client whose connection resources live as long as the surrounding scope. */
export const makeServiceClient = (options: ServiceClientOptions): Effect.Effect<ServiceRpcClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Layer.merge(protocol(options), credentialHeader(options.credential)))
    return yield* RpcClient.make(ServiceRpcs).pipe(Effect.provideContext(context))
  })

/** The same client as a service, for layer-based wiring. */
export class ServiceClient extends Context.Service<ServiceClient, ServiceRpcClient>()("svc/ServiceClient") {
  static readonly layer = (options: ServiceClientOptions) => Layer.effect(ServiceClient)(makeServiceClient(options))
}
