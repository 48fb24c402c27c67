/**
 * Creative analysis (decision 0071): `queue` answers the job of the same creative queued in the
 * last 24 hours (consuming nothing) or queues one under the budgets; `poll` reads the ad's latest
 * job; `analyse` computes a claimed job's result from the synced creative and its performance.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { CreativeAnalysisBody, CreativeAnalysisJob, CreativeAnalysisQueued, CreativeAnalysisResult } from "../../../schema/creative-analysis.ts"
import { type DatabaseUnavailable, NotFound, RateLimitExceeded } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { analyse, fingerprintOf, WINDOW_DAYS, MIN_IMPRESSIONS } from "./features.ts"
import { type Budgets, type ClaimedJob, CreativeAnalysisRepo, type JobRow } from "./repo.ts"

/** The spec's budgets; provide another value over the app (e.g. smaller ones in a test). */
export const CreativeAnalysisBudgets = Context.Reference<Budgets>("svc/CreativeAnalysisBudgets", {
  defaultValue: () => ({ hourlyPerCaller: 30, dailyPerProfile: 20, dailyPerCaller: 100 })
})

const MESSAGES = {
  hourly_per_key: (budgets: Budgets) => `At most ${budgets.hourlyPerCaller} creative analyses per hour per key.`,
  daily_per_profile: (budgets: Budgets) => `The profile's daily budget of ${budgets.dailyPerProfile} creative analyses is used up until the next UTC midnight.`,
  daily_per_key: (budgets: Budgets) => `The key's daily budget of ${budgets.dailyPerCaller} creative analyses is used up until the next UTC midnight.`
} as const

const render = (row: JobRow): CreativeAnalysisJob => ({
  job_id: row.id,
  ad_id: row.ad_platform_id,
  status: row.status,
  creative_fingerprint: row.creative_fingerprint,
  attempts: row.attempts,
  error: row.error,
  created_at: row.created_at,
  started_at: row.started_at,
  finished_at: row.finished_at,
  result: row.status === "succeeded" ? row.result : null
})

const adNotFound = (adId: string) =>
  new NotFound({ message: `No ad ${adId} in this profile's synced ad structure.`, reason: "ad_not_found" })

/** `YYYY-MM-DD` of today (UTC) shifted by `days`. */
const utcDay = (now: number, days: number) => new Date(now + days * 86_400_000).toISOString().slice(0, 10)

export class CreativeAnalysis extends Context.Service<CreativeAnalysis, {
  readonly queue: (
    profile: ProfileContext,
    adId: string,
    caller: string
  ) => Effect.Effect<CreativeAnalysisQueued, NotFound | RateLimitExceeded | DatabaseUnavailable>
  readonly poll: (profile: ProfileContext, adId: string) => Effect.Effect<CreativeAnalysisBody, NotFound | DatabaseUnavailable>
  /** The result of a claimed job; fails `ad_not_found` when the ad left the synced structure. */
  readonly analyse: (job: ClaimedJob) => Effect.Effect<CreativeAnalysisResult, NotFound | DatabaseUnavailable>
}>()("svc/CreativeAnalysis") {
  static readonly layer = Layer.effect(CreativeAnalysis)(
    Effect.gen(function*() {
      const repo = yield* CreativeAnalysisRepo
      const budgets = yield* CreativeAnalysisBudgets

      const queue = Effect.fn("CreativeAnalysis.queue")(function*(profile: ProfileContext, adId: string, caller: string) {
        const ad = yield* repo.findAd(profile.profileId, adId)
        if (Option.isNone(ad)) return yield* adNotFound(adId)
        const outcome = yield* repo.queue(
          { profileId: profile.profileId, adPlatformId: adId, fingerprint: fingerprintOf(ad.value), caller },
          budgets
        )
        switch (outcome._tag) {
          case "Existing":
            return { data: render(outcome.job), meta: { deduplicated: true } } satisfies CreativeAnalysisQueued
          case "Queued":
            return { data: render(outcome.job), meta: { deduplicated: false } } satisfies CreativeAnalysisQueued
          case "Limited":
            return yield* new RateLimitExceeded({
              message: MESSAGES[outcome.budget](budgets),
              reason: `creative_analysis_${outcome.budget}`,
              retry_after_seconds: outcome.retryAfterSeconds
            })
        }
      })

      const poll = Effect.fn("CreativeAnalysis.poll")(function*(profile: ProfileContext, adId: string) {
        const latest = yield* repo.latest(profile.profileId, adId)
        if (Option.isSome(latest)) return { data: render(latest.value) } satisfies CreativeAnalysisBody
        const ad = yield* repo.findAd(profile.profileId, adId)
        return yield* Option.isNone(ad)
          ? adNotFound(adId)
          : new NotFound({ message: `No creative analysis of ad ${adId} yet; POST to queue one.`, reason: "analysis_not_found" })
      })

      const analyseJob = Effect.fn("CreativeAnalysis.analyse")(function*(job: ClaimedJob) {
        const ad = yield* repo.findAd(job.profile_id, job.ad_platform_id)
        if (Option.isNone(ad)) return yield* adNotFound(job.ad_platform_id)
        const now = Date.now()
        const window = { since: utcDay(now, -(WINDOW_DAYS - 1)), until: utcDay(now, 0) }
        const [days, totals, peers] = yield* Effect.all([
          repo.adDays(job.profile_id, job.ad_platform_id, window.since, window.until),
          repo.totals(job.profile_id, job.ad_platform_id, window.since, window.until),
          repo.peers(job.profile_id, window.since, window.until, MIN_IMPRESSIONS)
        ])
        return analyse(ad.value, window, days, totals, peers)
      })

      return { queue, poll, analyse: analyseJob }
    })
  ).pipe(Layer.provide(CreativeAnalysisRepo.layer))
}
