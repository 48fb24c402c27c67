/**
 * The daily refresh of enabled customer lists (decision 0100): one background fiber per process
 * (started by `CoreServicesLayer`), safe with several processes on one PostgreSQL. Each poll takes
 * the lease of one list last synced over `refreshAfter` ago (SKIP LOCKED: two workers never take
 * the same list) and re-uploads it, so new paying customers join and erased ones leave. The lease
 * is short and renewed while the upload runs (decision 0119): a worker that dies leaves the list to
 * the next claim within seconds, and the dead worker's writes are fenced by the lease's token. A
 * list whose sync fails is held back `retryAfter` before the refresh tries it again.
 */
import { Cause, Context, Duration, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { defaultLease, leaseSecondsOf, whileLeased } from "../../platform/lease.ts"
import { AudiencesRepo } from "./repo.ts"
import { CustomerLists } from "./service.ts"

export interface CustomerListRefreshSettingsShape {
  /** Run the background fiber. Off: nothing runs unless `runOnce` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** A list synced longer ago than this is refreshed. */
  readonly refreshAfter: Duration.Duration
  /** How long a refresh holds the list without a renewal (renewed every third of it while it runs). */
  readonly lease: Duration.Duration
  /** How long a list whose refresh failed waits before the refresh tries it again. */
  readonly retryAfter: Duration.Duration
}

export const defaultCustomerListRefreshSettings: CustomerListRefreshSettingsShape = {
  enabled: true,
  pollInterval: Duration.minutes(1),
  refreshAfter: Duration.hours(24),
  lease: defaultLease,
  retryAfter: Duration.minutes(5)
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
      const leaseSeconds = leaseSecondsOf(settings.lease)
      const retrySeconds = Math.ceil(Duration.toSeconds(settings.retryAfter))

      const runOnce = Effect.gen(function*() {
        let refreshed = 0
        while (true) {
          const due = yield* repo.claimDue(after, leaseSeconds)
          if (Option.isNone(due)) return refreshed
          const lease = due.value
          const ok = yield* lists.resyncHeld(lease).pipe(
            whileLeased(lease.profileId, settings.lease, repo.renewList(lease, leaseSeconds)),
            Effect.as(true),
            Effect.catch((error) =>
              error._tag === "DatabaseUnavailable"
                ? Effect.fail(error)
                : error._tag === "LeaseLost"
                // Another sync took the list over: it is theirs, nothing more is written here.
                ? Effect.as(Effect.logWarning("customer-list refresh lease taken over; stopping", { profile_id: lease.profileId }), false)
                // Held back: a failing list is not retried every poll (fenced: only while still ours).
                : Effect.as(
                  Effect.andThen(
                    Effect.logWarning("customer-list refresh failed; retried later", { profile_id: lease.profileId, error: error._tag }),
                    repo.holdList(lease, retrySeconds)
                  ),
                  false
                )
            )
          )
          if (ok) {
            yield* repo.releaseList(lease)
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
