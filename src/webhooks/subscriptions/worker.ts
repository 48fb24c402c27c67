/**
 * Bounds paused subscriptions' backlogs (issue 34 item 6, decision 0120): every minute, on every
 * runner (the drop takes its rows with SKIP LOCKED, so runners share the work), deliveries a
 * paused subscription has held past `PAUSED_BACKLOG_MAX_AGE` end `failed`.
 */
import { Effect, Layer, Schedule } from "effect"
import { WebhookSubscriptions } from "./service.ts"

const INTERVAL = "1 minute"

export const PausedBacklogLayer = Layer.effectDiscard(Effect.gen(function*() {
  const subscriptions = yield* WebhookSubscriptions
  const round = subscriptions.dropPausedBacklog.pipe(
    // An outage skips a round; the next one drops what this one would have.
    Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(0)),
    Effect.withTracerEnabled(false)
  )
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(INTERVAL)))
})).pipe(Layer.provide(WebhookSubscriptions.layer))
