/**
 * The daily refresh of enabled customer lists (decision 0100): one background fiber per process
 * (started by `CoreServicesLayer`), safe with several processes on one PostgreSQL. Each poll takes
 * the lease of one list last synced over `refreshAfter` ago (SKIP LOCKED: two workers never take
 * the same list) and re-uploads it, so new paying customers join and erased ones leave. A list
 * whose sync fails keeps its lease until it expires: the next attempt comes a lease later.
 */
import { Cause, Context, Duration, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AudiencesRepo } from "./repo.ts"
import { CustomerLists } from "./service.ts"

export interface CustomerListRefreshSettingsShape {
  /** Run the background fiber. Off: nothing runs unless `runOnce` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** A list synced longer ago than this is refreshed. */
  readonly refreshAfter: Duration.Duration
  /** How long a refresh holds the list (a dead worker's list is taken over after it). */
  readonly lease: Duration.Duration
}

export const defaultCustomerListRefreshSettings: CustomerListRefreshSettingsShape = {
  enabled: true,
  pollInterval: Duration.minutes(1),
  refreshAfter: Duration.hours(24),
  lease: Duration.minutes(5)
}

export const CustomerListRefreshSettings = Context.Reference<CustomerListRefreshSettingsShape>("svc/CustomerListRefreshSettings", {
  defaultValue: () => defaultCustomerListRefreshSettings
})

export class CustomerListRefresh extends Context.Service<CustomerListRefresh, {
  /** Refreshes every due list; answers how many were refreshed. */
  readonly runOnce: Effect.Effect<number, DatabaseUnavailable>
}>()("svc/CustomerListRefresh") {
  static readonly layer = Layer.effect(CustomerListRefresh)(
    Effect.gen(function*() {
      const repo = yield* AudiencesRepo
      const lists = yield* CustomerLists
      const settings = yield* CustomerListRefreshSettings
      const after = Math.ceil(Duration.toSeconds(settings.refreshAfter))
      const lease = Math.ceil(Duration.toSeconds(settings.lease))

      const runOnce = Effect.gen(function*() {
        let refreshed = 0
        while (true) {
          const due = yield* repo.claimDue(after, lease)
          if (Option.isNone(due)) return refreshed
          const ok = yield* lists.resyncHeld(due.value).pipe(
            Effect.as(true),
            Effect.catch((error) =>
              error._tag === "DatabaseUnavailable"
                ? Effect.fail(error)
                : Effect.as(Effect.logWarning("customer-list refresh failed; retried after the lease", { profile_id: due.value, error: error._tag }), false)
            )
          )
          // Released only on success: a failing list waits out its lease instead of being retried every poll.
          if (ok) {
            yield* repo.releaseList(due.value)
            refreshed++
          }
        }
      }).pipe(Effect.withSpan("CustomerListRefresh.runOnce"))

      if (settings.enabled) {
        const loop = Effect.gen(function*() {
          while (true) {
            yield* Effect.sleep(settings.pollInterval)
            yield* runOnce.pipe(Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.as(Effect.logWarning("customer-list refresh: a poll failed; retrying after the poll interval", cause), 0)
            ))
          }
        })
        yield* Effect.forkScoped(loop)
      }

      return { runOnce }
    })
  ).pipe(Layer.provide([AudiencesRepo.layer, CustomerLists.layer]))
}
