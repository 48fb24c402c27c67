/**
 * The process's serving state, shared by the HTTP server (which drains on a stop signal) and
 * readiness (which answers 503 from the moment draining begins, so a load balancer stops
 * sending before the port closes).
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { ServiceUnavailable } from "../../schema/errors.ts"

/** What a request still running when the service stops answers (503, `Retry-After: 1`): retry it elsewhere. */
export const stoppedBeforeFinishing = () =>
  new ServiceUnavailable({
    message: "The service stopped before this request finished. Retry the same request.",
    reason: "shutting_down",
    retry_after_seconds: 1
  })

export interface LifecycleShape {
  /** True from the first stop signal on. Read on every readiness probe, so a plain read. */
  readonly isDraining: () => boolean
  /** Marks the process as draining (idempotent). */
  readonly beginDrain: Effect.Effect<void>
  /** Completes when a stop is asked for (the first SIGTERM or SIGINT). */
  readonly stopRequested: Effect.Effect<void>
  readonly requestStop: Effect.Effect<void>
  /** Completes when the grace period should end now (a second signal while draining). */
  readonly hurryRequested: Effect.Effect<void>
  readonly requestHurry: Effect.Effect<void>
}

export class Lifecycle extends Context.Service<Lifecycle, LifecycleShape>()("svc/Lifecycle") {
  static readonly layer = Layer.effect(Lifecycle)(Effect.gen(function*() {
    let draining = false
    const stop = yield* Deferred.make<void>()
    const hurry = yield* Deferred.make<void>()
    return {
      isDraining: () => draining,
      beginDrain: Effect.sync(() => {
        draining = true
      }),
      stopRequested: Deferred.await(stop),
      requestStop: Effect.asVoid(Deferred.succeed(stop, undefined)),
      hurryRequested: Deferred.await(hurry),
      requestHurry: Effect.asVoid(Deferred.succeed(hurry, undefined))
    }
  }))
}

/**
 * Turns stop signals into lifecycle requests: the first SIGTERM or SIGINT asks for a graceful
 * stop, the next one shortens the grace period to now. `listen` installs a handler for one
 * signal and returns its removal (process.on on Node, Deno.addSignalListener on Deno).
 */
export const watchStopSignals = (
  listen: (signal: "SIGTERM" | "SIGINT", handler: () => void) => () => void
) =>
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    const context = yield* Effect.context<never>()
    let received = 0
    const onSignal = () => {
      received += 1
      Effect.runForkWith(context)(received === 1 ? lifecycle.requestStop : lifecycle.requestHurry)
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => [listen("SIGTERM", onSignal), listen("SIGINT", onSignal)]),
      (removals) => Effect.sync(() => removals.forEach((remove) => remove()))
    )
  })
