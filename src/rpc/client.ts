/**
 * Typed client of the internal RPC surface (schema/rpc.ts), for other internal services:
 *
 *   const client = yield* makeServiceClient({ url: "http://svc:8080/rpc", token })
 *   const state = yield* client.ProfileGetState({ profile_id })
 *
 * Transport failures surface as `RpcClientError`; the server's refusals as the contract's
 * typed errors (`RpcUnauthorized`, `DatabaseUnavailable`, `ServiceUnavailable`).
 */
import { Context, Effect, Layer } from "effect"
import type { Redacted, Scope } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { ServiceRpcs } from "../../schema/rpc.ts"

export type ServiceRpcClient = RpcClient.RpcClient<ServiceRpcs, RpcClientError>

export interface ServiceClientOptions {
  /** The full endpoint, e.g. `http://127.0.0.1:8080/rpc`. */
  readonly url: string
  readonly token: string | Redacted.Redacted<string>
}

const protocol = (options: ServiceClientOptions) =>
  RpcClient.layerProtocolHttp({
    url: options.url,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  }).pipe(Layer.provide([FetchHttpClient.layer, RpcSerialization.layerJson]))

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
