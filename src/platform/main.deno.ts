/**
 * Deno entry point: the same layers as main.node.ts, served by `Deno.serve`.
 * Started by `deno task start` (deno.json); uses the npm-installed node_modules.
 */
import { NodeServices } from "@effect/platform-node"
import { Duration, Effect, Exit, Layer, Result, Runtime, type Scope } from "effect"
import { Etag, HttpEffect, HttpPlatform, HttpRouter, HttpServer, type HttpServerRequest } from "effect/http"
import { ServeError } from "effect/http/HttpServerError"
import * as NetAddress from "effect/net/NetAddress"
import { HttpApp } from "../http/app.ts"
import { AppConfig } from "./config.ts"
import { LoggingLive } from "./logging.ts"
import { CoreLive } from "./services.ts"
import { settingsOrExit } from "./startup.ts"
import { TelemetryLive } from "./telemetry.ts"

type WebHandler = (request: Request) => Promise<Response>

const notServing: WebHandler = () => Promise.resolve(new Response(null, { status: 503 }))

/** An `HttpServer` backed by `Deno.serve`; the router's handler is swapped in by `serve`. */
const DenoHttpServerLive = (options: { readonly port: number; readonly hostname: string }) =>
  Layer.effect(HttpServer.HttpServer)(Effect.gen(function*() {
    let current: WebHandler = notServing
    const server = yield* Effect.acquireRelease(
      Effect.try({
        try: () => Deno.serve({ port: options.port, hostname: options.hostname, onListen: () => {} }, (request) => current(request)),
        catch: (cause) => new ServeError({ cause })
      }),
      // Graceful: in-flight requests finish, bounded like the Node server's shutdown.
      (server) => Effect.promise(() => server.shutdown()).pipe(Effect.timeoutOrElse({ duration: Duration.seconds(20), orElse: () => Effect.void }))
    )
    const address = NetAddress.inetAddressFromIpString(server.addr.hostname, server.addr.port)
    if (Result.isFailure(address)) return yield* new ServeError({ cause: address.failure })
    return HttpServer.make({
      address: address.success,
      serve: (httpEffect, middleware) =>
        Effect.gen(function*() {
          const context = yield* Effect.context<never>()
          current = HttpEffect.toWebHandlerWith<never, HttpServerRequest.HttpServerRequest | Scope.Scope>(context)(
            httpEffect,
            middleware
          )
          yield* Effect.addFinalizer(() => Effect.sync(() => { current = notServing }))
        })
    })
  })).pipe(
    Layer.provideMerge(Layer.mergeAll(HttpPlatform.layer, Etag.layerWeak)),
    Layer.provideMerge(NodeServices.layer)
  )

const main = Effect.gen(function*() {
  const settings = yield* settingsOrExit
  const server = HttpRouter.serve(HttpApp, { disableLogger: true }).pipe(
    Layer.provide(CoreLive),
    Layer.provide(DenoHttpServerLive({ port: settings.port, hostname: settings.host })),
    Layer.provide([TelemetryLive, LoggingLive]),
    Layer.provide(AppConfig.layerWith(settings))
  )
  return yield* Layer.launch(server)
})

/** Like NodeRuntime.runMain: SIGINT/SIGTERM interrupt the main fiber, whose exit sets the exit code. */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  let receivedSignal = false
  const onSignal = () => {
    receivedSignal = true
    fiber.interruptUnsafe(fiber.id)
  }
  Deno.addSignalListener("SIGINT", onSignal)
  Deno.addSignalListener("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    Deno.removeSignalListener("SIGINT", onSignal)
    Deno.removeSignalListener("SIGTERM", onSignal)
    teardown(exit, (code) => {
      if (receivedSignal || code !== 0 || Exit.isFailure(exit)) Deno.exit(code)
    })
  })
})

runMain(main)
