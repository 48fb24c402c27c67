/**
 * The owner of `creative_analysis_jobs` (decision 0071): queueing under the budgets (the rows are
 * the counters), the claim with a lease (`FOR UPDATE SKIP LOCKED`, `attempts` fences a runner
 * whose lease was taken over), the result, and the reads the analysis computes its features
 * from (the synced creative, its spend days, credited conversions and tagged touches).
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import { CreativeAnalysisJob, CreativeAnalysisResult } from "../../../schema/creative-analysis.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { orderedClaimSettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { currentTraceContext } from "../../platform/tracing.ts"

/**
 * The statements of a claim (see `claim`): `sweep` fails a job whose runners all died with it
 * (failed for good rather than tried forever), `claim` takes the oldest claimable one, `probe`
 * says whether a claim would find one. test/api/queue-claim-plans.test.ts checks their generic
 * plans' cost at growing backlogs.
 */
export const claimStatements = (sql: SqlClient, maxAttempts: number, leaseSeconds: number) => {
  const claimable = sql`(status = 'queued' OR (status = 'running' AND lease_until < now() AND attempts < ${maxAttempts}))`
  return {
    probe: sql`SELECT 1 AS one FROM creative_analysis_jobs WHERE ${claimable} LIMIT 1`,
    sweep: sql`
      UPDATE creative_analysis_jobs SET status = 'failed', error = COALESCE(error, 'lease_expired'), lease_until = NULL,
             finished_at = now(), updated_at = now()
      WHERE status = 'running' AND lease_until < now() AND attempts >= ${maxAttempts}`,
    claim: sql`
      UPDATE creative_analysis_jobs j
      SET status = 'running', attempts = j.attempts + 1, started_at = now(), updated_at = now(),
          lease_until = now() + make_interval(secs => ${leaseSeconds})
      WHERE j.id = (SELECT c.id FROM creative_analysis_jobs c WHERE ${claimable}
                    ORDER BY c.created_at, c.id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING j.id::text AS id, j.profile_id::text AS profile_id, j.ad_platform_id, j.attempts, j.traceparent, j.tracestate`
  }
}

/** The job as answered, under its column names (`id`, `ad_platform_id`), with its profile. */
export const JobRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  ad_platform_id: Schema.String,
  ...Struct.omit(CreativeAnalysisJob.fields, ["job_id", "ad_id"])
})
export type JobRow = typeof JobRow.Type

/** The synced creative of an ad, as the sync last wrote it. */
export const AdCreativeRow = Schema.Struct({
  platform_id: Schema.String,
  name: Schema.String,
  creative_thumbnail_url: Schema.NullOr(Schema.String),
  destination_type: Schema.NullOr(Schema.String),
  destination_phone_number: Schema.NullOr(Schema.String),
  destination_page_id: Schema.NullOr(Schema.String),
  call_to_action_type: Schema.NullOr(Schema.String),
  greeting: Schema.NullOr(Schema.String),
  greeting_status: Schema.NullOr(Schema.String),
  welcome_message: Schema.NullOr(Schema.String)
})
export type AdCreativeRow = typeof AdCreativeRow.Type

/** One day of an ad's delivery (UTC day as synced). */
export const AdDayRow = Schema.Struct({
  day: Schema.String,
  impressions: Schema.Number,
  clicks: Schema.Number,
  spend: Schema.String,
  currency: Schema.String,
  reported_conversions: Schema.Number
})
export type AdDayRow = typeof AdDayRow.Type

const Totals = Schema.Struct({
  attributed: Schema.Number,
  profile_impressions: Schema.Number,
  profile_clicks: Schema.Number,
  ad_touches: Schema.Number,
  tagged_touches: Schema.Number
})
export type PerformanceTotals = typeof Totals.Type

const PeerRow = Schema.Struct({ ad_platform_id: Schema.String, ctr: Schema.Number })
export type PeerRow = typeof PeerRow.Type

const Count = Schema.Struct({ n: Schema.Number, oldest: Schema.NullOr(Schema.Number) })
const Claimed = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  ad_platform_id: Schema.String,
  attempts: Schema.Int,
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String)
})
export type ClaimedJob = typeof Claimed.Type

export interface Budgets {
  readonly hourlyPerCaller: number
  readonly dailyPerProfile: number
  readonly dailyPerCaller: number
}

export interface QueueRequest {
  readonly profileId: string
  readonly adPlatformId: string
  readonly fingerprint: string
  readonly caller: string
}

/** What queueing did: joined a recent job, hit a budget (seconds until it has room), or queued. */
export type QueueOutcome =
  | { readonly _tag: "Existing"; readonly job: JobRow }
  | { readonly _tag: "Limited"; readonly budget: "hourly_per_key" | "daily_per_profile" | "daily_per_key"; readonly retryAfterSeconds: number }
  | { readonly _tag: "Queued"; readonly job: JobRow }

export class CreativeAnalysisRepo extends Context.Service<CreativeAnalysisRepo, {
  readonly findAd: (profileId: string, adPlatformId: string) => Effect.Effect<Option.Option<AdCreativeRow>, DatabaseUnavailable>
  /**
   * In one transaction (serialized per profile and per caller): the job of the same ad and
   * fingerprint queued in the last 24 hours and not failed, else the budgets checked (hour per
   * caller, UTC day per profile, UTC day per caller), else a new queued job.
   */
  readonly queue: (request: QueueRequest, budgets: Budgets) => Effect.Effect<QueueOutcome, DatabaseUnavailable>
  /** Writes a queued job as is (what `queue` inserts); the budgets count it. */
  readonly insert: (request: QueueRequest) => Effect.Effect<JobRow, DatabaseUnavailable>
  readonly latest: (profileId: string, adPlatformId: string) => Effect.Effect<Option.Option<JobRow>, DatabaseUnavailable>
  readonly anyClaimable: (maxAttempts: number) => Effect.Effect<boolean, DatabaseUnavailable>
  /** The oldest queued job, or a running one whose lease expired (attempts + 1). */
  readonly claim: (maxAttempts: number, leaseSeconds: number) => Effect.Effect<Option.Option<ClaimedJob>, DatabaseUnavailable>
  readonly succeed: (job: ClaimedJob, result: CreativeAnalysisResult) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Extends the lease `leaseSeconds` from now while the job is still this attempt's; answers whether it was. */
  readonly renew: (job: ClaimedJob, leaseSeconds: number) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Back to `queued` when `retry`, else `failed` for good. */
  readonly fail: (job: ClaimedJob, error: string, retry: boolean) => Effect.Effect<void, DatabaseUnavailable>
  readonly adDays: (profileId: string, adPlatformId: string, since: string, until: string) => Effect.Effect<ReadonlyArray<AdDayRow>, DatabaseUnavailable>
  readonly totals: (profileId: string, adPlatformId: string, since: string, until: string) => Effect.Effect<PerformanceTotals, DatabaseUnavailable>
  /** CTR of each of the profile's ads with at least `minImpressions` in the window. */
  readonly peers: (profileId: string, since: string, until: string, minImpressions: number) => Effect.Effect<ReadonlyArray<PeerRow>, DatabaseUnavailable>
}>()("svc/CreativeAnalysisRepo") {
  static readonly layer = Layer.effect(CreativeAnalysisRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstJob = decodeFirstRow(JobRow)
      const firstAd = decodeFirstRow(AdCreativeRow)
      const firstCount = decodeFirstRow(Count)
      const firstClaimed = decodeFirstRow(Claimed)
      const firstTotals = decodeFirstRow(Totals)
      const dayRows = decodeRows(AdDayRow)
      const peerRows = decodeRows(PeerRow)

      const columns = sql`
        id::text AS id, profile_id::text AS profile_id, ad_platform_id, creative_fingerprint, status, attempts, error, result,
        ${isoTimestamp(sql, "created_at")} AS created_at, ${isoTimestamp(sql, "started_at")} AS started_at,
        ${isoTimestamp(sql, "finished_at")} AS finished_at`

      const findAd = (profileId: string, adPlatformId: string) =>
        firstAd(sql`
          SELECT platform_id, name, creative_thumbnail_url, destination_type, destination_phone_number, destination_page_id,
                 call_to_action_type, greeting, greeting_status, welcome_message::text AS welcome_message
          FROM ads WHERE profile_id = ${profileId} AND platform_id = ${adPlatformId}`)

      const insert = (request: QueueRequest) =>
        Effect.flatMap(
          // The queuing request's trace, for the job's span to link to (decision 0083).
          Effect.flatMap(currentTraceContext, (current) => {
            const trace = Option.getOrUndefined(current)
            return firstJob(sql`
              INSERT INTO creative_analysis_jobs (id, profile_id, ad_platform_id, creative_fingerprint, caller, traceparent, tracestate)
              VALUES (gen_random_uuid(), ${request.profileId}, ${request.adPlatformId}, ${request.fingerprint}, ${request.caller},
                      ${trace?.traceparent ?? null}, ${trace === undefined || trace.tracestate === "" ? null : trace.tracestate})
              RETURNING ${columns}`)
          }),
          (row) => Option.isSome(row) ? Effect.succeed(row.value) : Effect.die("insert returned no row")
        )

      /** Jobs counted in a window and the age in seconds of the oldest (null when none). */
      const counted = (where: Fragment) =>
        Effect.map(
          firstCount(sql`
            SELECT count(*)::int AS n, extract(epoch FROM now() - min(created_at))::float8 AS oldest
            FROM creative_analysis_jobs WHERE ${where}`),
          (row) => Option.getOrElse(row, () => ({ n: 0, oldest: null }))
        )

      const toMidnight = Effect.map(
        firstCount(sql`
          SELECT 0 AS n, extract(epoch FROM (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') - (now() AT TIME ZONE 'UTC'))::float8 AS oldest`),
        (row) => Math.max(1, Math.ceil(Option.match(row, { onNone: () => 86_400, onSome: (r) => r.oldest ?? 86_400 })))
      )

      const queue = (request: QueueRequest, budgets: Budgets) =>
        Effect.gen(function*() {
          // Serializes the checks and the insert per profile and per caller: two concurrent calls cannot both take the last unit.
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`creative_analysis:profile:${request.profileId}`}))`
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`creative_analysis:caller:${request.caller}`}))`
          const existing = yield* firstJob(sql`
            SELECT ${columns} FROM creative_analysis_jobs
            WHERE profile_id = ${request.profileId} AND ad_platform_id = ${request.adPlatformId}
              AND creative_fingerprint = ${request.fingerprint} AND status <> 'failed'
              AND created_at > now() - interval '24 hours'
            ORDER BY created_at DESC LIMIT 1`)
          if (Option.isSome(existing)) return { _tag: "Existing", job: existing.value } satisfies QueueOutcome
          const hour = yield* counted(sql`caller = ${request.caller} AND created_at > now() - interval '1 hour'`)
          if (hour.n >= budgets.hourlyPerCaller) {
            return {
              _tag: "Limited",
              budget: "hourly_per_key",
              retryAfterSeconds: Math.max(1, Math.ceil(3600 - (hour.oldest ?? 0)))
            } satisfies QueueOutcome
          }
          const today = sql`created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
          const profileDay = yield* counted(sql`profile_id = ${request.profileId} AND ${today}`)
          if (profileDay.n >= budgets.dailyPerProfile) {
            return { _tag: "Limited", budget: "daily_per_profile", retryAfterSeconds: yield* toMidnight } satisfies QueueOutcome
          }
          const callerDay = yield* counted(sql`caller = ${request.caller} AND ${today}`)
          if (callerDay.n >= budgets.dailyPerCaller) {
            return { _tag: "Limited", budget: "daily_per_key", retryAfterSeconds: yield* toMidnight } satisfies QueueOutcome
          }
          return { _tag: "Queued", job: yield* insert(request) } satisfies QueueOutcome
        }).pipe(sql.withTransaction)

      const latest = (profileId: string, adPlatformId: string) =>
        firstJob(sql`
          SELECT ${columns} FROM creative_analysis_jobs
          WHERE profile_id = ${profileId} AND ad_platform_id = ${adPlatformId}
          ORDER BY created_at DESC, id DESC LIMIT 1`)

      // The idle probe reads no row: only whether a claim would find one.
      const anyClaimable = (maxAttempts: number) =>
        Effect.map(claimStatements(sql, maxAttempts, 0).probe, (rows) => rows.length > 0)

      const claim = (maxAttempts: number, leaseSeconds: number) =>
        Effect.gen(function*() {
          const statements = claimStatements(sql, maxAttempts, leaseSeconds)
          yield* orderedClaimSettings(sql)
          yield* statements.sweep
          return yield* firstClaimed(statements.claim)
        }).pipe(sql.withTransaction)

      const ours = (job: ClaimedJob) => sql`id = ${job.id} AND attempts = ${job.attempts} AND status = 'running'`

      const succeed = (job: ClaimedJob, result: CreativeAnalysisResult) =>
        Effect.map(
          sql`
            UPDATE creative_analysis_jobs SET status = 'succeeded', result = ${JSON.stringify(result)}::jsonb, error = NULL,
                   lease_until = NULL, finished_at = now(), updated_at = now()
            WHERE ${ours(job)} RETURNING id`,
          (rows) => rows.length > 0
        )

      const renew = (job: ClaimedJob, leaseSeconds: number) =>
        Effect.map(
          sql`UPDATE creative_analysis_jobs SET lease_until = now() + make_interval(secs => ${leaseSeconds}) WHERE ${ours(job)} RETURNING id`,
          (rows) => rows.length > 0
        )

      const fail = (job: ClaimedJob, error: string, retry: boolean) =>
        sql`
          UPDATE creative_analysis_jobs SET status = ${retry ? "queued" : "failed"}, error = ${error}, lease_until = NULL,
                 finished_at = ${retry ? null : sql`now()`}, updated_at = now()
          WHERE ${ours(job)}`.pipe(Effect.asVoid)

      const adDays = (profileId: string, adPlatformId: string, since: string, until: string) =>
        dayRows(sql`
          SELECT to_char(day, 'YYYY-MM-DD') AS day, COALESCE(sum(impressions), 0)::float8 AS impressions,
                 COALESCE(sum(clicks), 0)::float8 AS clicks, sum(amount)::text AS spend, min(currency) AS currency,
                 COALESCE(sum(reported_conversions), 0)::float8 AS reported_conversions
          FROM ad_spend
          WHERE profile_id = ${profileId} AND ad_external_id = ${adPlatformId} AND day BETWEEN ${since}::date AND ${until}::date
          GROUP BY day ORDER BY day`)

      const totals = (profileId: string, adPlatformId: string, since: string, until: string) =>
        Effect.map(
          firstTotals(sql`
            SELECT
              (SELECT COALESCE(sum(credited_conversions), 0)::float8 FROM analytics_campaign_days
               WHERE profile_id = ${profileId} AND model = 'last_touch' AND level = 'ad'
                 AND platform_id = ${adPlatformId} AND day BETWEEN ${since}::date AND ${until}::date) AS attributed,
              (SELECT COALESCE(sum(impressions), 0)::float8 FROM ad_spend
               WHERE profile_id = ${profileId} AND day BETWEEN ${since}::date AND ${until}::date) AS profile_impressions,
              (SELECT COALESCE(sum(clicks), 0)::float8 FROM ad_spend
               WHERE profile_id = ${profileId} AND day BETWEEN ${since}::date AND ${until}::date) AS profile_clicks,
              (SELECT count(*)::float8 FROM touches
               WHERE profile_id = ${profileId} AND ad_external_id = ${adPlatformId}
                 AND occurred_at >= ${since}::date AND occurred_at < ${until}::date + 1) AS ad_touches,
              (SELECT count(*)::float8 FROM touches
               WHERE profile_id = ${profileId} AND ad_external_id = ${adPlatformId} AND source IS NOT NULL
                 AND occurred_at >= ${since}::date AND occurred_at < ${until}::date + 1) AS tagged_touches`),
          (row) => Option.getOrElse(row, () => ({ attributed: 0, profile_impressions: 0, profile_clicks: 0, ad_touches: 0, tagged_touches: 0 }))
        )

      const peers = (profileId: string, since: string, until: string, minImpressions: number) =>
        peerRows(sql`
          SELECT ad_external_id AS ad_platform_id, (sum(clicks)::float8 / sum(impressions)::float8) AS ctr
          FROM ad_spend
          WHERE profile_id = ${profileId} AND day BETWEEN ${since}::date AND ${until}::date
          GROUP BY ad_external_id HAVING COALESCE(sum(impressions), 0) >= ${minImpressions}`)

      return atDatabaseBoundary({ findAd, queue, insert, latest, anyClaimable, claim, succeed, renew, fail, adDays, totals, peers })
    })
  )
}
