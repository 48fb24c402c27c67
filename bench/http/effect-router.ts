/**
 * Second baseline for bench/http: the Effect platform alone (NodeHttpServer + HttpRouter, no
 * HttpApi, no middleware) answering the same bytes as the service. The gap between it and
 * the bare node:http server is the platform's per-request cost; the gap between it and the
 * service is what the service's own layers add.
 *
 *   node bench/http/effect-router.ts <port> <docsBaseUrl>
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { requestIdFor } from "../../src/http/envelope.ts"
import { healthBody, notFoundBody } from "./bodies.ts"

const port = Number(process.argv[2])
const docsBaseUrl = process.argv[3] ?? "http://localhost"

const respond = (status: number, body: (requestId: string) => unknown) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = requestIdFor(request)
    return HttpServerResponse.jsonUnsafe(body(requestId), { status, headers: { "x-request-id": requestId } })
  })

const App = Layer.mergeAll(
  HttpRouter.add("GET", "/healthz", respond(200, healthBody)),
  HttpRouter.add("*", "*", respond(404, (requestId) => notFoundBody(requestId, docsBaseUrl)))
)

Layer.launch(
  HttpRouter.serve(App, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
  )
).pipe(NodeRuntime.runMain)
