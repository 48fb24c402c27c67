/**
 * The report scheduler (decision 0086): one background fiber per process (started by
 * `CoreServicesLayer`), safe with several processes on one PostgreSQL. Each poll turns every due
 * slot into one run (unique per report and slot: two workers racing create it once), then
 * claims runs with a short lease, renewed while it works them (decision 0119): generated, and a
 * scheduled run sent to the report's recipients. A run whose worker died is taken over once its
 * lease expires (seconds, then the next poll); one that died while sending is failed
 * `send_outcome_unknown`, never sent a second time.
 */
import { Cause, Context, Duration, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { leaseSecondsOf } from "../../platform/lease.ts"
import { withLinkedJobSpan } from "../../platform/tracing.ts"
import { ReportsRepo } from "./repo.ts"
import { ReportRunLease, Reports } from "./service.ts"

export interface ReportWorkerSettingsShape {
  /** Run the background fiber. Off: nothing runs unless `runOnce` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** Attempts of a run before it is `failed`. */
  readonly maxAttempts: number
}

export const defaultReportWorkerSettings: ReportWorkerSettingsShape = {
  enabled: true,
  // Short enough that a run a dead process held is taken over within about ten seconds of its
  // lease running out (decision 0119); a poll is two indexed statements (due reports, a claim).
  pollInterval: Duration.seconds(2),
  maxAttempts: 3
}

export const ReportWorkerSettings = Context.Reference<ReportWorkerSettingsShape>("svc/ReportWorkerSettings", {
  defaultValue: () => defaultReportWorkerSettings
})

export class ReportWorker extends Context.Service<ReportWorker, {
  /** Enqueues the due slots, then works every claimable run; answers the runs worked. */
  readonly runOnce: Effect.Effect<number, DatabaseUnavailable>
}>()("svc/ReportWorker") {
  static readonly layer = Layer.effect(ReportWorker)(
    Effect.gen(function*() {
      const repo = yield* ReportsRepo
      const reports = yield* Reports
      const settings = yield* ReportWorkerSettings
      // The service renews what it works with the same lease.
      const leaseSeconds = leaseSecondsOf(yield* ReportRunLease)

      const runOnce = Effect.gen(function*() {
        yield* repo.enqueueDue(reports.nextOf)
        let worked = 0
        while (true) {
          const claimed = yield* repo.claim(leaseSeconds, settings.maxAttempts)
          if (Option.isNone(claimed)) return worked
          const run = claimed.value
          // Its own trace, linked to the request that scheduled it (decision 0101).
          yield* reports.work(run).pipe(
            withLinkedJobSpan(`report_runs ${run.trigger}`, run, {
              "messaging.message.id": run.id,
              "svc.profile_id": run.profile_id,
              "svc.report_id": run.report_id
            }),
            Effect.catchTag("LeaseLost", () =>
              Effect.logWarning("report run lease taken over by another holder; stopping", { run_id: run.id, attempt: run.attempts }))
          )
          worked++
        }
      }).pipe(Effect.withSpan("ReportWorker.runOnce"))

      if (settings.enabled) {
        const loop = Effect.gen(function*() {
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            yield* runOnce.pipe(Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.as(Effect.logWarning("report worker: a poll failed; retrying after the poll interval", cause), 0)
            ))
            yield* Effect.sleep(settings.pollInterval)
          }
        })
        yield* Effect.forkScoped(loop)
      }

      return { runOnce }
    })
  ).pipe(Layer.provide([ReportsRepo.layer, Reports.layer]))
}
