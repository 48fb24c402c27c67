/**
 * Deno entry point: the same service as node.ts (launch.ts), served by `Deno.serve`.
 * Started by `deno task start` (deno.json); uses the npm-installed node_modules.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Runtime, type Scope } from "effect"
import { Etag, HttpEffect, HttpPlatform, type HttpServerRequest } from "effect/http"
import { ServeError } from "effect/http/HttpServerError"
import { envelopeBody, toEnvelope } from "../../schema/errors.ts"
import { Lifecycle, stoppedBeforeFinishing } from "../platform/lifecycle.ts"
import { newRequestId } from "../platform/request-id.ts"
import { serviceMain } from "./launch.ts"

const main = serviceMain({
  platform: Layer.mergeAll(HttpPlatform.layer, Etag.layerWeak).pipe(Layer.provideMerge(NodeServices.layer)),
  serve: (httpEffect, settings) =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      type Services = Effect.Services<typeof httpEffect>
      type Provided = Exclude<Services, Scope.Scope | HttpServerRequest.HttpServerRequest>
      const context = yield* Effect.context<Provided>()
      const handler = HttpEffect.toWebHandlerWith<Provided, Services>(context)(httpEffect)
      // Resolved at the drain deadline: requests still running answer 503 instead of being cut.
      let reachDeadline: () => void = () => {}
      const deadline = new Promise<void>((resolve) => {
        reachDeadline = resolve
      })
      // A fresh answer per request: a Response body is read once.
      const answerAtDeadline = () =>
        deadline.then(() => {
          const requestId = newRequestId()
          return new Response(JSON.stringify(envelopeBody(toEnvelope(stoppedBeforeFinishing()), requestId, settings.baseUrl)), {
            status: 503,
            headers: { "content-type": "application/json", "retry-after": "1", "x-request-id": requestId }
          })
        })
      const server = yield* Effect.try({
        // Listening starts here, after the application was built (launch.ts): no request waits on start-up.
        try: () =>
          Deno.serve(
            { port: settings.port, hostname: settings.host, onListen: () => {} },
            (request) => Promise.race([handler(request), answerAtDeadline()])
          ),
        catch: (cause) => new ServeError({ cause })
      })
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          yield* lifecycle.beginDrain
          const grace = settings.shutdownGraceMs
          // Deno's shutdown stops accepting, closes idle connections and waits for in-flight requests.
          const shutdown = server.shutdown()
          yield* Effect.promise(() => shutdown).pipe(
            Effect.timeoutOrElse({ duration: grace, orElse: () => Effect.void }),
            Effect.raceFirst(lifecycle.hurryRequested)
          )
          reachDeadline()
          // The 503s just answered still have to be written.
          yield* Effect.promise(() => shutdown).pipe(Effect.timeoutOrElse({ duration: 2_000, orElse: () => Effect.void }))
        })
      )
      return server.addr.port
    }),
  listenSignal: (signal, handler) => {
    Deno.addSignalListener(signal, handler)
    return () => Deno.removeSignalListener(signal, handler)
  }
})

/** Stop signals drain (launch.ts); the exit code follows the result. */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  fiber.addObserver((exit) => teardown(exit, (code) => Deno.exit(code)))
})

runMain(main)
