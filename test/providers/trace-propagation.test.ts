/**
 * Provider calls carry the trace outward (decision 0083): the provider receives a
 * `traceparent` naming the caller's trace and, when the caller sent one, its `tracestate`;
 * each call is observed on `http.client.request.duration`. A plain HTTP server stands in for
 * the provider and records the headers it receives.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Option } from "effect"
import { OutboundHttpLayer } from "../../src/platform/outbound-http.ts"
import { PrometheusMetrics } from "effect/observability"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { CurrentTraceState } from "../../src/platform/tracing.ts"
import { ProviderEndpoints } from "../../src/connections/providers/endpoints.ts"
import { DEFAULT_PROVIDER_HTTP, ProviderHttp } from "../../src/connections/providers/http.ts"

/** A provider answering `{}` to everything, keeping the headers of each request. */
const fakeProvider = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly received: Array<IncomingHttpHeaders>; readonly close: () => void }>((resolve) => {
      const received: Array<IncomingHttpHeaders> = []
      const server = createServer((request, response) => {
        received.push(request.headers)
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resolve({ url: `http://127.0.0.1:${port}`, received, close: () => server.close() })
      })
    })
  ),
  (provider) => Effect.sync(provider.close)
)

const clientFor = (baseUrl: string) =>
  ProviderHttp.layerWith(DEFAULT_PROVIDER_HTTP).pipe(
    Layer.provide(OutboundHttpLayer),
    Layer.provide(Layer.succeed(ProviderEndpoints)({
      offered: () => true,
      endpoint: () => ({ baseUrl, clientId: "client", clientSecret: Redacted.make("secret") }),
      sandboxWorlds: Option.none()
    }))
  )

describe("provider calls and the trace", () => {
  it.live("send traceparent of the caller's trace and its tracestate; none without one", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const request = { provider: "adplatform", operation: "trace.probe", method: "GET", path: "/v1/probe" } as const
      const { traceId } = yield* Effect.gen(function*() {
        const http = yield* ProviderHttp
        yield* http.call(request).pipe(Effect.provideService(CurrentTraceState, "vendor=abc,other=1"))
        yield* http.call(request)
        return yield* Effect.currentSpan
      }).pipe(Effect.withSpan("GET /caller", { kind: "server" }), Effect.provide(clientFor(provider.url)))

      assert.strictEqual(provider.received.length, 2)
      const [withState, without] = provider.received
      assert.match(String(withState?.["traceparent"]), new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      assert.strictEqual(withState?.["tracestate"], "vendor=abc,other=1")
      assert.match(String(without?.["traceparent"]), new RegExp(`^00-${traceId}-`))
      assert.isUndefined(without?.["tracestate"])

      const metrics = yield* PrometheusMetrics.format()
      const line = metrics.split("\n").find((l) =>
        l.startsWith("http_client_request_duration_count{") && l.includes(`svc_provider_operation="trace.probe"`) && l.includes(`svc_outcome="ok"`)
      )
      assert.isDefined(line, metrics.slice(0, 1500))
      assert.strictEqual(Number(line?.split(" ").at(-1)), 2)
    }).pipe(Effect.scoped))
})
