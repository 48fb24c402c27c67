/**
 * The sync worker (decision 0058): works the durable `sync_jobs` queue, one set of background
 * fibers per process (started by `CoreServicesLayer`, like the attribution worker), safe with
 * several runners on one PostgreSQL.
 *
 * - A job is claimed with a short lease (one running job per connection), renewed after every batch
 *   of rows written and every third of the lease (decision 0119); a runner that dies leaves a
 *   lease that expires within seconds, and any runner claims the
 *   job again (`attempts` + 1, the fencing token). Writes are idempotent upserts, so a job taken
 *   over starts again from its first page.
 * - Structure (campaigns, ad sets, ads with creatives and greetings) syncs whatever the add-on
 *   says; insights (spend, impressions, clicks, the platform's reported conversions and chats)
 *   only while the profile's `svc_attribution` is on, checked before every batch: while off an
 *   insights or backfill job is cancelled with `attribution_disabled`.
 * - Pages are streamed and written `batchSize` rows at a time, the next pages read while a batch
 *   is written (at most two batches ahead): memory holds a few batches, never an account.
 * - A dead grant reports the connection `reconnect_required` and fails the job for good; a
 *   throttle or an outage queues it again after a jittered backoff (at least the provider's
 *   `Retry-After`); a refusal or a missing permission fails it for good.
 */
import { Cause, Context, Data, Duration, Effect, Layer, Option, Stream } from "effect"
import type { SyncProgress } from "../../../schema/connections-sync.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AnalyticsImports } from "../../analytics/imports/service.ts"
import { CommerceOrders } from "../commerce/orders/service.ts"
import { AdPlatform, type InsightRow } from "../../connections/providers/adplatform/port.ts"
import { RunnerLiveness } from "../../platform/liveness.ts"
import { defaultLease, LeaseLost, leaseSecondsOf, lostLease, whileLeased } from "../../platform/lease.ts"
import { withLinkedJobSpan } from "../../platform/tracing.ts"
import { ConnectionRecords } from "../../connections/records.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { CrmOutcomes } from "../crm-outcomes/service.ts"
import { CardgwPayments } from "./cardgw.ts"
import { type ClaimedSyncJob, emptyProgress, SYNCED_PROVIDER_KINDS, SyncJobsRepo } from "./repo.ts"
import { type StructureScope, StructureRepo } from "./structure-repo.ts"

export interface SyncWorkerSettingsShape {
  /** Run the background fibers. Off: nothing runs unless `drainOnce` is called. */
  readonly enabled: boolean
  /** Pause between polls while there is nothing to do. */
  readonly pollInterval: Duration.Duration
  /** How long a claimed job stays ours without a renewal (renewed every third of it while it runs). */
  readonly lease: Duration.Duration
  /** Attempts of a job before it is `failed`. */
  readonly maxAttempts: number
  /** Jobs one process runs at once (never two of one connection). */
  readonly concurrency: number
  /** Rows written per statement (and per lease renewal). */
  readonly batchSize: number
  /** Insight batches one job writes at once (each on its own database connection). */
  readonly writeConcurrency: number
  /** An attempt running longer than this is failed (and retried). */
  readonly jobTimeout: Duration.Duration
  /** The first retry's pause; doubled per attempt (jittered), at most 10 minutes. */
  readonly retryBase: Duration.Duration
  /** Days of insights a `manual` or nightly `insights` job without a window reads (today included). */
  readonly recentDays: number
}

export const defaultSyncWorkerSettings: SyncWorkerSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  lease: defaultLease,
  maxAttempts: 6,
  concurrency: 2,
  batchSize: 500,
  writeConcurrency: 2,
  jobTimeout: Duration.minutes(60),
  retryBase: Duration.seconds(10),
  recentDays: 3
}

/** The worker's settings; provide another value (e.g. a short poll in tests) over `CoreServicesLayer`. */
export const SyncWorkerSettings = Context.Reference<SyncWorkerSettingsShape>("svc/SyncWorkerSettings", {
  defaultValue: () => defaultSyncWorkerSettings
})

/** The attribution add-on went off: insights stop. */
class AttributionOff extends Data.TaggedError("AttributionOff")<{}> {}

export type SyncOutcome = {
  readonly jobId: string
  readonly connectionId: string
  readonly state: "done" | "retrying" | "failed" | "cancelled" | "lease_lost"
  readonly error: string | null
}

/** `YYYY-MM-DD` of `date` shifted by `days`. */
const isoDay = (date: Date, days: number) => new Date(date.getTime() + days * 86_400_000).toISOString().slice(0, 10)

/** What a failed attempt becomes: its code and whether it is tried again (and not before how long). */
interface Verdict {
  readonly code: string
  readonly retry: boolean
  readonly atLeastSeconds: number
  readonly authRevoked: boolean
}

const verdictOf = (cause: Cause.Cause<unknown>): Verdict => {
  const failure = Cause.findErrorOption(cause)
  const plain = { atLeastSeconds: 0, authRevoked: false }
  if (Option.isNone(failure)) return { code: "internal_error", retry: true, ...plain }
  const error = failure.value
  if (Cause.isTimeoutError(error)) return { code: "timeout", retry: true, ...plain }
  if (typeof error !== "object" || error === null || !("_tag" in error)) return { code: "internal_error", retry: true, ...plain }
  switch (error._tag) {
    case "ProviderThrottled": {
      const seconds = "retryAfterSeconds" in error && typeof error.retryAfterSeconds === "number" ? error.retryAfterSeconds : 0
      return { code: "provider_throttled", retry: true, atLeastSeconds: seconds, authRevoked: false }
    }
    case "ProviderUnavailable":
      return { code: "provider_unavailable", retry: true, ...plain }
    case "DatabaseUnavailable":
      return { code: "database_error", retry: true, ...plain }
    case "ProviderAuthRevoked":
      return { code: "reconnect_required", retry: false, atLeastSeconds: 0, authRevoked: true }
    case "ProviderPermissionMissing":
      return { code: "permission_missing", retry: false, ...plain }
    case "ProviderRefused":
      return { code: "provider_refused", retry: false, ...plain }
    default:
      return { code: "internal_error", retry: true, ...plain }
  }
}

export class SyncWorker extends Context.Service<SyncWorker, {
  /** Claims and runs one job, if one can be claimed now. */
  readonly runNext: Effect.Effect<Option.Option<SyncOutcome>, DatabaseUnavailable>
  /** Runs every claimable job, then returns (for tests, the CLI and the bench). */
  readonly drainOnce: Effect.Effect<ReadonlyArray<SyncOutcome>, DatabaseUnavailable>
  /** The nightly run's work (the cron calls it): structure for every connection, recent insights for entitled profiles. */
  readonly enqueueNightly: Effect.Effect<{ readonly structure: number; readonly insights: number }, DatabaseUnavailable>
}>()("svc/SyncWorker") {
  static readonly layer = Layer.effect(SyncWorker)(
    Effect.gen(function*() {
      const jobs = yield* SyncJobsRepo
      const liveness = yield* RunnerLiveness
      const structure = yield* StructureRepo
      const spend = yield* AnalyticsImports
      const platform = yield* AdPlatform
      const sessions = yield* ConnectionSessions
      const connections = yield* ConnectionRecords
      const crmOutcomes = yield* CrmOutcomes
      const cardgw = yield* CardgwPayments
      const settings = yield* SyncWorkerSettings
      const commerceOrders = yield* CommerceOrders
      const leaseSeconds = leaseSecondsOf(settings.lease)
      const batchSize = Math.max(1, settings.batchSize)

      const backoffSeconds = (attempts: number) => {
        const base = Duration.toSeconds(settings.retryBase) * 2 ** Math.max(0, attempts - 1)
        // Jitter (50% to 100%): jobs throttled together do not come back together.
        return Math.min(600, base * (0.5 + Math.random() / 2))
      }

      /**
       * Batches of `batchSize` rows; the provider's next pages are read while a batch is written,
       * at most two batches ahead (bounded memory; the reading fiber ends with the stream).
       */
      const batches = <A, E>(rows: Stream.Stream<A, E>) => rows.pipe(Stream.grouped(batchSize), Stream.buffer({ capacity: 2 }))

      const runJob = Effect.fn("SyncWorker.runJob")(function*(job: ClaimedSyncJob) {
        yield* Effect.annotateCurrentSpan({
          "svc.profile_id": job.profile_id,
          "svc.sync.job_id": job.id,
          "svc.sync.kind": job.kind,
          "svc.sync.attempt": job.attempts,
          "svc.connection_id": job.connection_id
        })
        let progress: SyncProgress = { ...emptyProgress }
        const renew = Effect.fnUntraced(function*(next: SyncProgress, checkpoint?: string) {
          progress = next
          if (!(yield* jobs.renew(job, progress, leaseSeconds, checkpoint))) return yield* new LeaseLost({ jobId: job.id })
        })


        const work = Effect.gen(function*() {
          if (!job.live) return { state: "cancelled" as const, code: "connection_disconnected", progress }
          // The card gateway's payments since the last sync (src/ingestion/sync/cardgw.ts).
          if (job.provider_kind === "cardgw") {
            if (job.connection_status === "reconnect_required") return { state: "failed" as const, code: "reconnect_required", progress }
            yield* renew(progress)
            yield* cardgw.sync(job, (payments, checkpoint) => renew({ ...progress, payments }, checkpoint))
            return { state: "done" as const, code: null, progress }
          }
          if (job.provider_kind === "commerce" && job.connection_status !== "reconnect_required") {
            // The store's catalogue and orders (src/ingestion/commerce/orders/service.ts).
            const record = yield* connections.find(job.connection_id)
            if (Option.isNone(record)) return { state: "cancelled" as const, code: "connection_disconnected", progress }
            const session = yield* sessions.session(job.connection_id)
            // A job taken over after a crash resumes at the checkpoint its last batch left.
            yield* commerceOrders.sync(record.value, session, {
              batchSize,
              resumeFrom: job.checkpoint,
              onBatch: (counts, checkpoint) =>
                renew({ ...progress, products: counts.products, orders: counts.orders, milestones: counts.milestones }, checkpoint)
            })
            return { state: "done" as const, code: null, progress }
          }
          if (!SYNCED_PROVIDER_KINDS.includes(job.provider_kind)) return { state: "cancelled" as const, code: "provider_not_synced", progress }
          if (job.connection_status === "reconnect_required") return { state: "failed" as const, code: "reconnect_required", progress }
          // The CRM's deals at mapped stages become outcomes (decision 0062).
          if (job.provider_kind === "crm") {
            yield* crmOutcomes.syncJob(job, (deals, checkpoint) => renew({ ...progress, deals }, checkpoint))
            return { state: "done" as const, code: null, progress }
          }

          // Insights alone while the add-on is off: nothing to ask the provider.
          if ((job.kind === "insights" || job.kind === "backfill") && !(yield* jobs.attributionOn(job.profile_id))) {
            return { state: "cancelled" as const, code: "attribution_disabled", progress }
          }

          const session = yield* sessions.session(job.connection_id)
          const scope: StructureScope = { profileId: job.profile_id, connectionId: job.connection_id, currency: job.account_currency }

          if (job.kind === "structure" || job.kind === "manual") {
            yield* renew({ ...progress, phase: "structure" })
            yield* batches(platform.campaigns(session)).pipe(
              Stream.runForEach((batch) =>
                Effect.flatMap(structure.upsertCampaigns(scope, batch), (n) => renew({ ...progress, campaigns: progress.campaigns + n }))
              )
            )
            yield* batches(platform.adSets(session)).pipe(
              Stream.runForEach((batch) =>
                Effect.flatMap(structure.upsertAdSets(scope, batch), (n) => renew({ ...progress, ad_sets: progress.ad_sets + n }))
              )
            )
            yield* batches(platform.ads(session)).pipe(
              Stream.runForEach((batch) => Effect.flatMap(structure.upsertAds(scope, batch), (n) => renew({ ...progress, ads: progress.ads + n })))
            )
          }

          if (job.kind === "insights" || job.kind === "backfill" || job.kind === "manual") {
            if (!(yield* jobs.attributionOn(job.profile_id))) {
              if (job.kind !== "manual") return { state: "cancelled" as const, code: "attribution_disabled", progress }
              progress = { ...progress, insights_skipped: "attribution_disabled" }
            } else {
              const days = Math.max(1, job.window_days ?? settings.recentDays)
              const now = new Date()
              const range = { since: isoDay(now, -(days - 1)), until: isoDay(now, 0) }
              yield* renew({ ...progress, phase: "insights", since: range.since, until: range.until })
              const write = (batch: ReadonlyArray<InsightRow>) =>
                Effect.gen(function*() {
                  // The add-on can go off mid-job: no spend is written after it does.
                  if (!(yield* jobs.attributionOn(job.profile_id))) return yield* new AttributionOff()
                  yield* spend.upsertSyncedSpend(batch.map((row) => ({
                    profileId: job.profile_id,
                    platform: job.provider_kind,
                    day: row.date,
                    campaignId: row.campaign_id,
                    adSetId: row.ad_set_id,
                    adId: row.ad_id,
                    currency: row.currency,
                    spendMinor: row.spend_minor,
                    impressions: row.impressions,
                    clicks: row.clicks,
                    reportedConversions: row.conversions,
                    reportedChats: row.chats
                  })))
                  yield* renew({ ...progress, insight_rows: progress.insight_rows + batch.length })
                })
              const exit = yield* batches(platform.insights(session, range)).pipe(
                // Insight rows of different pages never share a key: batches may be written side by side.
                Stream.mapEffect(write, { concurrency: Math.max(1, settings.writeConcurrency), unordered: true }),
                Stream.runDrain,
                Effect.exit
              )
              if (exit._tag === "Failure") {
                const off = Cause.findErrorOption(exit.cause)
                if (Option.isSome(off) && off.value instanceof AttributionOff) {
                  return { state: "cancelled" as const, code: "attribution_disabled", progress }
                }
                return yield* Effect.failCause(exit.cause)
              }
            }
          }
          return { state: "done" as const, code: null, progress }
        })
        // The lease is renewed on a clock too, not only per batch (decision 0119): a provider backing
        // off (Retry-After) must not let another runner take a job that is still being worked, and a
        // short lease lets one take over within seconds a job whose process died. Whichever ends
        // first ends the other: the work (done or failed), or a lost lease.
        return yield* whileLeased(job.id, settings.lease, Effect.suspend(() => jobs.renew(job, progress, leaseSeconds)))(work)
      })

      const runClaimed = (job: ClaimedSyncJob): Effect.Effect<SyncOutcome> => {
        const outcome = (state: SyncOutcome["state"], error: string | null): SyncOutcome => ({
          jobId: job.id,
          connectionId: job.connection_id,
          state,
          error
        })
        return runJob(job).pipe(
          withLinkedJobSpan(`sync_jobs ${job.kind}`, job, { "messaging.message.id": job.id, "svc.connection_id": job.connection_id }),
          Effect.timeout(settings.jobTimeout),
          Effect.flatMap((result) => {
            switch (result.state) {
              case "done":
                return Effect.flatMap(jobs.succeed(job, result.progress), (ok) =>
                  ok ? Effect.as(connections.markSynced(job.connection_id), outcome("done", null)) : Effect.succeed(outcome("lease_lost", null)))
              case "cancelled":
                return Effect.as(jobs.cancel(job, result.code, result.progress), outcome("cancelled", result.code))
              case "failed":
                return Effect.as(jobs.fail(job, result.code, null), outcome("failed", result.code))
            }
          }),
          Effect.tap((result) => Effect.logInfo("sync job finished", result)),
          Effect.catchCause((cause): Effect.Effect<SyncOutcome> => {
            if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
            if (lostLease(cause)) {
              return Effect.as(
                Effect.logWarning("sync job lease taken over by another runner; stopping", { job_id: job.id }),
                outcome("lease_lost", null)
              )
            }
            const verdict = verdictOf(cause)
            const last = !verdict.retry || job.attempts >= settings.maxAttempts
            const retryAfter = last ? null : Math.max(verdict.atLeastSeconds, backoffSeconds(job.attempts))
            return Effect.gen(function*() {
              yield* (last ? Effect.logError : Effect.logWarning)("sync job attempt failed", {
                job_id: job.id,
                attempt: job.attempts,
                code: verdict.code,
                retry_after_seconds: retryAfter,
                cause
              })
              if (verdict.authRevoked) yield* sessions.reportAuthRevoked(job.connection_id)
              yield* jobs.fail(job, verdict.code, retryAfter)
            }).pipe(
              Effect.catchCause((writeCause) =>
                Effect.logError("sync job failure not recorded; the lease will expire", { job_id: job.id, cause: writeCause })
              ),
              Effect.as(outcome(last ? "failed" : "retrying", verdict.code))
            )
          }),
          Effect.onInterrupt(() => jobs.release(job).pipe(Effect.timeout(Duration.seconds(5)), Effect.ignore))
        )
      }

      const runNext = Effect.fn("SyncWorker.runNext")(function*() {
        const claimed = yield* jobs.claim(settings.maxAttempts, leaseSeconds, yield* liveness.holder)
        if (Option.isNone(claimed)) return Option.none<SyncOutcome>()
        return Option.some(yield* runClaimed(claimed.value))
      })

      const drainOnce = Effect.fn("SyncWorker.drainOnce")(function*() {
        const outcomes: Array<SyncOutcome> = []
        while (true) {
          const outcome = yield* runNext()
          if (Option.isNone(outcome)) return outcomes
          outcomes.push(outcome.value)
        }
      })

      const enqueueNightly = Effect.withSpan(jobs.enqueueNightly(settings.recentDays), "SyncWorker.enqueueNightly")

      if (settings.enabled) {
        // Idle probes run untraced: a poll that finds nothing is not worth a span per second.
        const loop = Effect.gen(function*() {
          // The first poll waits one interval: start-up work (migrations, the runner) goes first.
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            const busy = yield* Effect.gen(function*() {
              if (!(yield* Effect.withTracerEnabled(jobs.anyClaimable(settings.maxAttempts), false))) return false
              return Option.isSome(yield* runNext())
            }).pipe(Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.as(Effect.logWarning("sync worker: a poll failed; retrying after the poll interval", cause), false)
            ))
            yield* busy ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
          }
        })
        // Scoped to the layer: the fibers end (and hand their jobs back) when the process stops.
        for (let i = 0; i < Math.max(1, settings.concurrency); i++) yield* Effect.forkScoped(loop)
      }

      return { runNext: runNext(), drainOnce: drainOnce(), enqueueNightly }
    })
  ).pipe(
    Layer.provide([
      SyncJobsRepo.layer,
      StructureRepo.layer,
      AnalyticsImports.layer,
      ConnectionRecords.layer,
      CrmOutcomes.layer,
      CardgwPayments.layer,
      CommerceOrders.layer
    ])
  )
}
