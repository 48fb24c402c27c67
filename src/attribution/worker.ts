/**
 * The attribution worker: durable crediting and replays, one set of background fibers per
 * process (started by `CoreServicesLayer`, so the server, the tests and `npm start` run it), safe with
 * several runners on one PostgreSQL. Decision 0030.
 *
 * - Crediting: conversions in `credit_queue` (decision 0152) are locked in batches (`FOR UPDATE SKIP
 *   LOCKED`: runners never wait on each other), credited under every model and marked, each
 *   batch in one transaction.
 * - Replays: `work_jobs` of kind `attribution_replay` are claimed with a lease (`lease_until`),
 *   renewed after every batch and every third of the lease (decision 0119). A runner that dies
 *   leaves the job `running` with a lease that expires within seconds; any runner then claims it
 *   again (`attempts` + 1). `attempts` is the fencing token: a runner whose lease was taken over
 *   stops at its next write. A failed attempt is retried with backoff, and the job is `failed` after `maxAttempts`.
 */
import { Cause, Context, Duration, Effect, Layer, Option, Result } from "effect"
import { isSqlError } from "effect/sql/SqlError"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { CreditEngine } from "./engine.ts"
import { type ClaimedJob, ReplayQueue } from "./jobs/repo.ts"
import type { PathStats } from "./models/index.ts"
import type { QueuedConversion } from "./queued-conversion.ts"
import { AttributionRepo, type ReplayPart } from "./repo.ts"
import { defaultLease, LeaseLost, leaseSecondsOf, lostLease, whileLeased } from "../platform/lease.ts"
import { RunnerLiveness } from "../platform/liveness.ts"
import { withLinkedJobSpan } from "../platform/tracing.ts"

export interface AttributionWorkerSettingsShape {
  /** Run the background fibers. Off: nothing runs unless `drainOnce` is called (tests that step by hand). */
  readonly enabled: boolean
  /** Pause between polls while there is nothing to do. */
  readonly pollInterval: Duration.Duration
  /** Conversions credited per transaction. */
  readonly creditBatchSize: number
  /**
   * Conversions recomputed per replay transaction (the lease is renewed after each), and about
   * the size of a replay's customer partition (decision 0131).
   */
  readonly replayBatchSize: number
  /** Partitions of one replay worked at once, each on its own connection (decisions 0035, 0131). */
  readonly replayBatchConcurrency: number
  /** How long a claimed replay stays ours without a renewal (renewed every third of it while it runs). */
  readonly lease: Duration.Duration
  /** Attempts of a replay before it is `failed`. */
  readonly maxAttempts: number
  /** Replays one process runs at once. */
  readonly replayConcurrency: number
  /** An attempt running longer than this is failed (and retried). */
  readonly replayTimeout: Duration.Duration
  /** How long `svc_model` statistics computed for a profile are reused by crediting. */
  readonly statsTtl: Duration.Duration
}

export const defaultWorkerSettings: AttributionWorkerSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  creditBatchSize: 100,
  replayBatchSize: 2000,
  replayBatchConcurrency: 2,
  lease: defaultLease,
  maxAttempts: 5,
  replayConcurrency: 2,
  replayTimeout: Duration.minutes(30),
  statsTtl: Duration.minutes(10)
}

/** The worker's settings; provide another value (e.g. a 200 ms poll in tests) over `CoreServicesLayer`. */
export const AttributionWorkerSettings = Context.Reference<AttributionWorkerSettingsShape>("svc/AttributionWorkerSettings", {
  defaultValue: () => defaultWorkerSettings
})

export type ReplayOutcome =
  | { readonly jobId: string; readonly profileId: string; readonly state: "succeeded"; readonly progress: number }
  | { readonly jobId: string; readonly profileId: string; readonly state: "retrying" | "failed" | "lease_lost" }

export interface DrainResult {
  /** Conversions credited off the ingest path. */
  readonly credited: number
  /** Replays this call ran to an end (succeeded, failed or lost). */
  readonly replays: ReadonlyArray<ReplayOutcome>
}

/** Seconds before a failed attempt is retried: 2, 4, 8, ... at most 300. */
const backoffSeconds = (attempts: number) => Math.min(300, 2 ** Math.max(1, attempts))

/** What a job's `error` says: a short code, never an SQL message (the cause is logged with the job id). */
const errorCodeOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (Cause.isTimeoutError(error)) return "timeout"
    if (typeof error === "object" && error !== null && "_tag" in error) {
      if (error._tag === "DatabaseUnavailable" || error._tag === "SqlError") return "database_error"
    }
  }
  // A statement the database rejected reaches here as a defect (the repositories' boundary).
  const defect = Cause.findDefect(cause)
  if (Result.isSuccess(defect) && isSqlError(defect.success)) return "database_error"
  return "internal_error"
}

export class AttributionWorker extends Context.Service<AttributionWorker, {
  /** Credits one batch of new conversions; answers how many. */
  readonly creditPending: Effect.Effect<number, DatabaseUnavailable>
  /** Claims and runs one replay, if one can be claimed now. */
  readonly runNextReplay: Effect.Effect<Option.Option<ReplayOutcome>, DatabaseUnavailable>
  /** Credits every waiting conversion and runs every claimable replay, then returns (for tests and the CLI). */
  readonly drainOnce: Effect.Effect<DrainResult, DatabaseUnavailable>
}>()("svc/AttributionWorker") {
  static readonly layer = Layer.effect(AttributionWorker)(
    Effect.gen(function*() {
      const repo = yield* AttributionRepo
      const queue = yield* ReplayQueue
      const liveness = yield* RunnerLiveness
      const engine = yield* CreditEngine
      const settings = yield* AttributionWorkerSettings
      const leaseSeconds = leaseSecondsOf(settings.lease)

      // svc_model statistics per profile, reused by crediting for `statsTtl` (a replay refreshes them).
      const statsCache = new Map<string, { readonly stats: PathStats; readonly at: number }>()
      const MAX_CACHED_PROFILES = 1000
      const remember = (profileId: string, stats: PathStats) => {
        statsCache.delete(profileId)
        statsCache.set(profileId, { stats, at: Date.now() })
        if (statsCache.size > MAX_CACHED_PROFILES) {
          const oldest = statsCache.keys().next()
          if (oldest.done !== true) statsCache.delete(oldest.value)
        }
      }
      const statsFor = (profileIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const found = new Map<string, PathStats>()
          for (const profileId of new Set(profileIds)) {
            const cached = statsCache.get(profileId)
            if (cached !== undefined && Date.now() - cached.at < Duration.toMillis(settings.statsTtl)) {
              found.set(profileId, cached.stats)
              continue
            }
            const stats = yield* engine.pathStats(profileId)
            remember(profileId, stats)
            found.set(profileId, stats)
          }
          return found
        })

      /** Locks, credits and marks up to `limit` waiting conversions (or just `only`) in one transaction. */
      const creditLocked = (limit: number, only?: QueuedConversion) =>
        repo.transaction(Effect.gen(function*() {
          yield* repo.tuneTransaction
          const targets = yield* repo.lockPending(limit, only)
          if (targets.length === 0) return 0
          const stats = yield* statsFor(targets.map((target) => target.profile_id))
          const rows = yield* engine.credit(targets, (profileId) => stats.get(profileId))
          yield* Effect.annotateCurrentSpan({ "svc.attribution.conversions": targets.length, "svc.attribution.credit_rows": rows })
          return targets.length
        }))

      /** A connection failure or an interruption: the loop waits and tries the same work again. */
      const isRetryable = (cause: Cause.Cause<DatabaseUnavailable>) =>
        Cause.hasInterruptsOnly(cause) || Option.isSome(Cause.findErrorOption(cause))

      /**
       * After a batch failed for another reason (a bug, a broken row): the batch one conversion at a
       * time, so one bad conversion cannot hold the others up. One that fails alone is logged and
       * marked credited without rows; the next replay of its profile tries it again.
       */
      const creditOneByOne = Effect.fn("AttributionWorker.creditOneByOne")(function*() {
        const queued = yield* repo.pending(settings.creditBatchSize)
        let done = 0
        for (const conversion of queued) {
          yield* Effect.yieldNow
          const exit = yield* Effect.exit(creditLocked(1, conversion))
          if (exit._tag === "Success") {
            done += exit.value
            continue
          }
          if (isRetryable(exit.cause)) return yield* Effect.failCause(exit.cause)
          yield* Effect.logError("conversion could not be credited; marked without credit rows until a replay", {
            conversion_id: conversion.id,
            cause: exit.cause
          })
          yield* repo.transaction(engine.markWithoutCredit(conversion))
          done++
        }
        return done
      })

      const creditPending = Effect.fn("AttributionWorker.creditPending")(function*() {
        const exit = yield* Effect.exit(creditLocked(settings.creditBatchSize))
        if (exit._tag === "Failure") {
          if (isRetryable(exit.cause)) return yield* Effect.failCause(exit.cause)
          yield* Effect.logWarning("crediting a batch failed; crediting its conversions one by one", exit.cause)
          return yield* creditOneByOne()
        }
        if (exit.value > 0) yield* Effect.logDebug("credited new conversions", { credited: exit.value })
        return exit.value
      })

      /** Fenced write: only while the job is still ours (same attempt, still running). */
      const ours = (job: ClaimedJob) => (still: boolean) =>
        still ? Effect.void : Effect.fail(new LeaseLost({ jobId: job.id }))

      const renew = (job: ClaimedJob, progress: number, total: number | null) =>
        Effect.flatMap(queue.renew(job, progress, total, leaseSeconds), ours(job))

      /** Queued again after a backoff, or `failed` after the last attempt. */
      const fail = (job: ClaimedJob, code: string) =>
        queue.fail(job, code, job.attempts >= settings.maxAttempts ? null : backoffSeconds(job.attempts))

      /**
       * Recomputes every conversion of the profile with statistics computed once (decision 0131).
       * The profile is split into `parts` customer partitions (about `replayBatchSize` conversions
       * each, the count fixed by the first attempt), worked `replayBatchConcurrency` at a time; a
       * part is credited in transactions of at most `replayBatchSize` conversions, and the last
       * of them records the part as done, so a later attempt skips the parts already committed.
       * Parts are disjoint (a customer's conversions share one), so they never wait on each other.
       */
      const replay = Effect.fn("AttributionWorker.replay")(function*(job: ClaimedJob) {
        yield* Effect.annotateCurrentSpan({
          "svc.profile_id": job.profile_id,
          "svc.replay.job_id": job.id,
          "svc.replay.attempt": job.attempts,
          "svc.replay.reason": job.reason
        })
        const batchSize = Math.max(1, settings.replayBatchSize)
        const stats = yield* engine.pathStats(job.profile_id)
        remember(job.profile_id, stats)
        const total = yield* repo.countConversions(job.profile_id)
        const plan = yield* queue.plan(job, Math.ceil(total / batchSize))
        if (Option.isNone(plan)) return yield* new LeaseLost({ jobId: job.id })
        const done = new Set(plan.value.done)
        const parts = yield* repo.replayParts(job.profile_id, plan.value.parts)
        const resumed = parts.filter((part) => done.has(part.part)).reduce((sum, part) => sum + part.ids.length, 0)
        yield* renew(job, resumed, total)
        if (resumed > 0) yield* Effect.logInfo("attribution replay resumed", { job_id: job.id, parts_done: done.size, progress: resumed })
        const runPart = (part: ReplayPart) =>
          Effect.gen(function*() {
            let credited = 0
            for (let start = 0; start < part.ids.length; start += batchSize) {
              // Let statements waiting for a connection go first (the embedded database has one).
              yield* Effect.yieldNow
              const chunk = part.ids.slice(start, start + batchSize)
              const times = part.times.slice(start, start + batchSize)
              const last = start + batchSize >= part.ids.length
              credited += yield* repo.transaction(Effect.gen(function*() {
                yield* repo.tuneTransaction
                const targets = yield* repo.lockReplayTargets(job.profile_id, chunk, times)
                if (targets.length > 0) yield* engine.credit(targets, () => stats)
                yield* Effect.flatMap(
                  last ? queue.advancePart(job, part.part, targets.length, leaseSeconds) : queue.advance(job, targets.length, leaseSeconds),
                  ours(job)
                )
                return targets.length
              }))
            }
            return credited
          })
        const counts = yield* Effect.forEach(
          parts.filter((part) => !done.has(part.part)),
          runPart,
          { concurrency: Math.max(1, settings.replayBatchConcurrency) }
        )
        const progress = counts.reduce((sum, n) => sum + n, resumed)
        if (!(yield* queue.succeed(job, progress))) return yield* new LeaseLost({ jobId: job.id })
        return progress
      })

      const runClaimed = (job: ClaimedJob): Effect.Effect<ReplayOutcome> =>
        replay(job).pipe(
          // Renewed on a clock, not only per batch (decision 0119): a batch slower than the short
          // lease keeps the job, and a lost lease stops the replay before its next write.
          whileLeased(job.id, settings.lease, queue.advance(job, 0, leaseSeconds)),
          withLinkedJobSpan("work_jobs attribution_replay", job, { "messaging.message.id": job.id, "svc.profile_id": job.profile_id }),
          Effect.timeout(settings.replayTimeout),
          Effect.map((progress): ReplayOutcome => ({ jobId: job.id, profileId: job.profile_id, state: "succeeded", progress })),
          Effect.tap((outcome) => Effect.logInfo("attribution replay succeeded", outcome)),
          Effect.catchCause((cause): Effect.Effect<ReplayOutcome> => {
            if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
            if (lostLease(cause)) {
              return Effect.as(
                Effect.logWarning("attribution replay lease taken over by another runner; stopping", { job_id: job.id }),
                { jobId: job.id, profileId: job.profile_id, state: "lease_lost" } satisfies ReplayOutcome
              )
            }
            const code = errorCodeOf(cause)
            const state = job.attempts >= settings.maxAttempts ? "failed" : "retrying"
            return Effect.logError("attribution replay attempt failed", { job_id: job.id, attempt: job.attempts, state, cause }).pipe(
              Effect.andThen(fail(job, code)),
              Effect.catchCause((writeCause) =>
                Effect.logError("attribution replay failure not recorded; the lease will expire", { job_id: job.id, cause: writeCause })
              ),
              Effect.as({ jobId: job.id, profileId: job.profile_id, state } satisfies ReplayOutcome)
            )
          }),
          Effect.onInterrupt(() =>
            queue.release(job).pipe(Effect.timeout(Duration.seconds(5)), Effect.ignore)
          )
        )

      const runNextReplay = Effect.fn("AttributionWorker.runNextReplay")(function*() {
        const claimed = yield* queue.claim(settings.maxAttempts, leaseSeconds, yield* liveness.holder)
        if (Option.isNone(claimed)) return Option.none<ReplayOutcome>()
        return Option.some(yield* runClaimed(claimed.value))
      })

      const drainOnce = Effect.fn("AttributionWorker.drainOnce")(function*() {
        let credited = 0
        while (true) {
          const batch = yield* creditPending()
          credited += batch
          if (batch < settings.creditBatchSize) break
        }
        const replays: Array<ReplayOutcome> = []
        while (true) {
          const outcome = yield* runNextReplay()
          if (Option.isNone(outcome)) break
          replays.push(outcome.value)
        }
        return { credited, replays } satisfies DrainResult
      })

      if (settings.enabled) {
        // The idle probes run untraced: a poll that finds nothing is not worth a span per second.
        const idle = <A, E, R>(probe: Effect.Effect<A, E, R>) => Effect.withTracerEnabled(probe, false)
        const survive = (what: string) => <E, R>(effect: Effect.Effect<boolean, E, R>) =>
          Effect.catchCause(effect, (cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(Effect.logWarning(`attribution worker: ${what} failed; retrying after the poll interval`, cause), false))

        const creditLoop = Effect.gen(function*() {
          // The first poll waits one interval: start-up work (migrations, purges, the runner) goes first.
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            const busy = yield* Effect.gen(function*() {
              if (!(yield* idle(repo.anyPending))) return false
              return (yield* creditPending()) >= settings.creditBatchSize
            }).pipe(survive("crediting"))
            // Busy: go again, after letting waiting statements have the connection.
            yield* busy ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
          }
        })

        const replayLoop = Effect.gen(function*() {
          // The first poll waits one interval: start-up work (migrations, purges, the runner) goes first.
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            const busy = yield* Effect.gen(function*() {
              if (!(yield* idle(queue.anyClaimable(settings.maxAttempts)))) return false
              return Option.isSome(yield* runNextReplay())
            }).pipe(survive("replay"))
            // Busy: go again, after letting waiting statements have the connection.
            yield* busy ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
          }
        })

        yield* Effect.forkScoped(creditLoop)
        for (let i = 0; i < Math.max(1, settings.replayConcurrency); i++) yield* Effect.forkScoped(replayLoop)
        yield* Effect.logDebug("attribution worker started", {
          poll_ms: Duration.toMillis(settings.pollInterval),
          replay_concurrency: settings.replayConcurrency
        })
      }

      return { creditPending: creditPending(), runNextReplay: runNextReplay(), drainOnce: drainOnce() }
    })
  ).pipe(Layer.provide([CreditEngine.layer, AttributionRepo.layer, ReplayQueue.layer]))
}
