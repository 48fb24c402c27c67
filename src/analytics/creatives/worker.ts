/**
 * The creative analysis worker (decision 0071): works the durable `creative_analysis_jobs` queue
 * in background fibers started with the core services. A job is claimed with a short lease renewed
 * by a heartbeat while it runs (decision 0119); a runner that dies leaves a lease that expires
 * within seconds and any runner claims the job again, so a queued or
 * running job survives a restart. An attempt that fails is queued again up to `maxAttempts`.
 */
import { Cause, Context, Duration, Effect, Layer, Option } from "effect"
import { defaultLease, leaseSecondsOf, lostLease, whileLeased } from "../../platform/lease.ts"
import { withLinkedJobSpan } from "../../platform/tracing.ts"
import { CreativeAnalysis } from "./service.ts"
import { type ClaimedJob, CreativeAnalysisRepo } from "./repo.ts"

export interface CreativeAnalysisWorkerSettingsShape {
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** How long a claimed job stays ours without a renewal (renewed every third of it while it runs). */
  readonly lease: Duration.Duration
  /** An attempt running longer than this fails (and is retried). */
  readonly timeout: Duration.Duration
  readonly maxAttempts: number
}

export const CreativeAnalysisWorkerSettings = Context.Reference<CreativeAnalysisWorkerSettingsShape>(
  "svc/CreativeAnalysisWorkerSettings",
  { defaultValue: () => ({ enabled: true, pollInterval: Duration.seconds(1), lease: defaultLease, timeout: Duration.minutes(1), maxAttempts: 3 }) }
)

export class CreativeAnalysisWorker extends Context.Service<CreativeAnalysisWorker, {
  /** Claims and runs one job; None when there was none. */
  readonly runNext: Effect.Effect<Option.Option<string>>
}>()("svc/CreativeAnalysisWorker") {
  static readonly layer = Layer.effect(CreativeAnalysisWorker)(
    Effect.gen(function*() {
      const repo = yield* CreativeAnalysisRepo
      const analysis = yield* CreativeAnalysis
      const settings = yield* CreativeAnalysisWorkerSettings
      const leaseSeconds = leaseSecondsOf(settings.lease)

      const run = (job: ClaimedJob) =>
        analysis.analyse(job).pipe(
          whileLeased(job.id, settings.lease, repo.renew(job, leaseSeconds)),
          Effect.timeout(settings.timeout),
          Effect.flatMap((result) => repo.succeed(job, result)),
          Effect.as(job.id),
          Effect.catchCause((cause) => {
            if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
            if (lostLease(cause)) {
              return Effect.as(Effect.logWarning("creative analysis lease taken over by another runner; stopping", { job_id: job.id }), job.id)
            }
            const failure = Cause.findErrorOption(cause)
            const code = Option.isSome(failure) && typeof failure.value === "object" && failure.value !== null && "reason" in failure.value &&
                typeof failure.value.reason === "string"
              ? failure.value.reason
              : "internal_error"
            // A vanished ad cannot succeed on a retry; anything else is tried again.
            const retry = code !== "ad_not_found" && job.attempts < settings.maxAttempts
            return Effect.logWarning("creative analysis attempt failed", { job_id: job.id, code, retry, cause }).pipe(
              Effect.andThen(repo.fail(job, code, retry)),
              Effect.ignore,
              Effect.as(job.id)
            )
          })
        )

      const runNext = Effect.gen(function*() {
        const claimed = yield* repo.claim(settings.maxAttempts, leaseSeconds)
        if (Option.isNone(claimed)) return Option.none<string>()
        const job = claimed.value
        // A span of its own, linked to the request that queued the job (decision 0083).
        return Option.some(yield* run(job).pipe(
          withLinkedJobSpan("creative_analysis_jobs", job, { "messaging.message.id": job.id, "svc.profile_id": job.profile_id })
        ))
      }).pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.interrupt
            : Effect.as(Effect.logWarning("creative analysis worker: a poll failed", cause), Option.none<string>())
        )
      )

      if (settings.enabled) {
        const loop = Effect.gen(function*() {
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            const busy = (yield* Effect.withTracerEnabled(
              Effect.orElseSucceed(repo.anyClaimable(settings.maxAttempts), () => false),
              false
            )) && Option.isSome(yield* runNext)
            yield* busy ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
          }
        })
        yield* Effect.forkScoped(loop)
      }
      return { runNext }
    })
  ).pipe(Layer.provide(CreativeAnalysis.layer), Layer.provide(CreativeAnalysisRepo.layer))
}
