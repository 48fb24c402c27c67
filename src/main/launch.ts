/**
 * The launch pipe, the one way the service starts: settings → configuration → telemetry and
 * logs → lifecycle → core services → HTTP application → server. The Node and Deno entry points
 * (`serviceMain`), the test harness (test/support/app.ts) and the telemetry test all go through
 * `launch`, each with its own server.
 *
 * `serviceMain` is what both entry points run: read the settings, catch stop signals from the
 * first moment, build the core services and the application, and only then listen (decision
 * 0049). A stop signal during start-up unwinds what was built; one while serving drains.
 * Either way the process exits 0; a failure to start exits 1.
 */
import { Effect, Layer, Option, type Scope } from "effect"
import { HttpRouter, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import type { ServeError } from "effect/http/HttpServerError"
import { AppConfig, type AppSettings, sandboxWarning } from "../platform/config.ts"
import { DataDirLock, DataDirLocked } from "../platform/data-dir-lock.ts"
import { Lifecycle, watchStopSignals } from "../platform/lifecycle.ts"
import { LoggingLayer } from "../platform/logging.ts"
import { settingsOrExit } from "../platform/startup.ts"
import { TelemetryLayer } from "../platform/telemetry.ts"
import { AppRoutes } from "./app.ts"
import { CoreServicesLayer } from "./core.ts"

/** Traces and structured logs as the settings ask. */
export const ObservabilityLayer = Layer.merge(TelemetryLayer, LoggingLayer)

export interface LaunchOptions<A, ROut, E, RIn> {
  readonly settings: AppSettings
  /** The application to serve: `AppRoutes`, or it with a test's routes or middleware. */
  readonly app: A
  /** Serves `app` on top of the core services. */
  readonly server: (app: A) => Layer.Layer<ROut, E, RIn>
  /** Default: `ObservabilityLayer`; a test passes its own exporter, logger or log level. */
  readonly observability?: Layer.Layer<never, never, AppConfig>
  /** Default: a fresh one; the entry points pass the one their stop signals already reach. */
  readonly lifecycle?: Layer.Layer<Lifecycle>
}

/** The running service as one layer: its output keeps the configuration, lifecycle and core services. */
export const launch = <A, ROut, E, RIn>(options: LaunchOptions<A, ROut, E, RIn>) =>
  options.server(options.app).pipe(
    Layer.provideMerge(CoreServicesLayer),
    Layer.provideMerge(options.lifecycle ?? Lifecycle.layer),
    Layer.provide(options.observability ?? ObservabilityLayer),
    Layer.provideMerge(AppConfig.layerWith(options.settings))
  )

type AppServices = Exclude<Layer.Services<typeof AppRoutes>, HttpRouter.HttpRouter>

/** Serves the built application until the scope closes; answers the port it listens on. */
export type ServeWith<P> = (
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest | Scope.Scope | AppServices | P>,
  settings: AppSettings
) => Effect.Effect<number, ServeError, Scope.Scope | Lifecycle | AppServices | P>

export interface ServiceOptions<P> {
  /** Platform services the application needs per request (HttpPlatform, Etag, FileSystem...). */
  readonly platform: Layer.Layer<P>
  readonly serve: ServeWith<P>
  /** Installs a handler for a stop signal; returns its removal. */
  readonly listenSignal: (signal: "SIGTERM" | "SIGINT", handler: () => void) => () => void
}

/** The entry points' server: the application is built first, then `serve` listens (decision 0049). */
const listenAfterBuild = <P>(options: ServiceOptions<P>, settings: AppSettings) => (app: typeof AppRoutes) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const httpEffect = yield* HttpRouter.toHttpEffect(app)
    const port = yield* options.serve(httpEffect, settings)
    // The CLI finds the serving process of an embedded database here (decision 0052).
    yield* (yield* DataDirLock).announce(port, settings.host)
    yield* Effect.logInfo(`Listening on http://${settings.host}:${port}`)
  })).pipe(Layer.provide(options.platform))

export const serviceMain = <P>(options: ServiceOptions<P>) =>
  Effect.gen(function*() {
    const settings = yield* settingsOrExit
    yield* running(options, settings).pipe(
      // Another process holds the embedded database: one line and exit 1, as for bad settings.
      Effect.catchIf((error): error is DataDirLocked => error instanceof DataDirLocked, (error) =>
        Effect.sync(() => {
          process.stderr.write(`cannot start: ${error.message}\n`)
          process.exit(1)
        })),
      Effect.provide(Lifecycle.layer),
      // For the lines written outside the pipe; the pipe's own is this one (memoised by reference, built once).
      Effect.provide(ObservabilityLayer),
      Effect.provide(AppConfig.layerWith(settings))
    )
  })

const running = <P>(options: ServiceOptions<P>, settings: AppSettings) =>
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    yield* watchStopSignals(options.listenSignal)
    // Simulated providers on a production-shaped start were asked for: said once, before serving.
    const warning = sandboxWarning(settings)
    if (Option.isSome(warning)) yield* Effect.logWarning(warning.value)
    const serving = Layer.launch(launch({
      settings,
      app: AppRoutes,
      server: listenAfterBuild(options, settings),
      lifecycle: Layer.succeed(Lifecycle)(lifecycle)
    }))
    // A stop interrupts `serving`: its finalizers drain the server, then stop the workers and
    // close the database, in the reverse order they started.
    yield* Effect.raceFirst(
      serving,
      Effect.tap(lifecycle.stopRequested, () => Effect.logInfo("stop requested: draining"))
    )
    yield* Effect.logInfo("stopped")
  }).pipe(Effect.scoped)
