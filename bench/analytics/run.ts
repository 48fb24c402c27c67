/**
 * Analytics reads at scale (`npm run bench:analytics`). Decision 0041; figures in bench/README.md.
 *
 * In-process, on the PostgreSQL of `DATABASE_URL` (required), with the service's own layers
 * (configuration, database pool, migrations, `AnalyticsService`, `AnalyticsRollups` with its
 * background fiber off, `AttributionWorker` + `CreditEngine` with theirs off). Steps, each timed
 * and printed:
 *
 * 1. a profile of BENCH_TOUCHES touches (10,000,000) over 13 months, with conversions from
 *    BENCH_CUSTOMERS customers (about 0.7 per customer: 500,000 by default), generated with the
 *    replay bench's set-based SQL (bench/replay/dataset.ts; see there for its shape) with touch
 *    attributes (400 ads in 20 campaigns, referrers, pages, keywords, countries, devices...), and
 *    a day of spend per ad;
 * 2. the credit rows of every conversion under the six models, by a real full replay;
 * 3. the rollups, rebuilt from the raw rows (`AnalyticsRollups.rebuild`);
 * 4. BENCH_READS reads (100) of each: overview (last 30 days), timeseries (daily, 90 days),
 *    breakdown by channel (30 days), campaigns at ad level (30 days) — p50 / p95; next to the
 *    baseline "raw": the overview's conversion counts computed straight from the raw rows for
 *    the same 30 days.
 *
 * Goal: p95 < 100 ms for each read (BENCH_SLOW_READS samples the raw-facts read apart). The profile is dropped at the end unless BENCH_KEEP=1; a kept
 * profile is measured again, without generating (nor crediting, once credited) with BENCH_PROFILE_ID=<id> (and
 * without rebuilding its rollups with BENCH_REBUILD=0). Also printed: the time the rollup job takes
 * to recompute one busy day (its lag), and a filtered breakdown served from the raw facts.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CreditEngine } from "../../src/attribution/engine.ts"
import { ReplayQueue } from "../../src/attribution/jobs/repo.ts"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { AnalyticsRollups, AnalyticsRollupSettings, defaultRollupSettings } from "../../src/analytics/rollups/repo.ts"
import { CampaignsService } from "../../src/analytics/campaigns/service.ts"
import { AnalyticsService } from "../../src/analytics/overview/service.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { RunnerLiveness } from "../../src/platform/liveness.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { type Dataset, dropDataset, existingDataset, generateDataset, SPAN_DAYS } from "../replay/dataset.ts"
import { fmt, intFromEnv, runInProcessBench } from "../support.ts"

const TOUCHES = intFromEnv("BENCH_TOUCHES", 10_000_000, 100_000_000)
const CUSTOMERS = intFromEnv("BENCH_CUSTOMERS", 715_000, 20_000_000)
const READS = intFromEnv("BENCH_READS", 100, 100_000)
// The raw-facts read is no goal and takes seconds at 30M touches: it may be sampled fewer times.
const SLOW_READS = intFromEnv("BENCH_SLOW_READS", READS, 100_000)
const KEPT_PROFILE = process.env["BENCH_PROFILE_ID"]
const GOAL_P95_MS = 100

const ROLLUP_TABLES = ["analytics_conversion_days", "analytics_credit_days", "analytics_touch_days", "analytics_campaign_days"]

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = process.hrtime.bigint()
    const value = yield* effect
    return { value, seconds: seconds(start) }
  })

const sample = <A, E, R>(effect: Effect.Effect<A, E, R>, reads = READS) =>
  Effect.gen(function*() {
    const samples: Array<number> = []
    for (let i = 0; i < reads; i++) samples.push((yield* timed(effect)).seconds * 1000)
    samples.sort((a, b) => a - b)
    const at = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))] ?? Number.NaN
    return { p50: at(0.5), p95: at(0.95) }
  })

const program = Effect.gen(function*() {
  const sql = yield* SqlClient
  const analytics = yield* AnalyticsService
  const rollups = yield* AnalyticsRollups
  const worker = yield* AttributionWorker
  const queue = yield* ReplayQueue
  const campaigns = yield* CampaignsService
  console.log(
    KEPT_PROFILE !== undefined
      ? `node ${process.versions.node}; ${READS} reads each`
      : `node ${process.versions.node}; ${fmt(TOUCHES)} touches, ${fmt(CUSTOMERS)} customers (1 in 2 converts), ${READS} reads each`
  )
  const dataset: Dataset = KEPT_PROFILE !== undefined
    ? yield* existingDataset(sql, KEPT_PROFILE)
    : yield* Effect.gen(function*() {
      const generated = yield* timed(generateDataset(sql, { touches: TOUCHES, customers: CUSTOMERS, convertEvery: 2, attributes: true }))
      // A day of spend per ad, in the ad account's currency (google for search ads, meta for social).
      yield* sql`
        INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency, amount)
        SELECT ${generated.value.profileId}, CASE WHEN a < 220 THEN 'google' ELSE 'meta' END, current_date - d,
               'c-' || a / 20, 'as-' || a / 4, 'ad-' || a, 'EUR', round((random() * 40)::numeric, 2)
        FROM generate_series(0, 399) a, generate_series(0, ${SPAN_DAYS}::int) d`
      console.log(
        `dataset: ${fmt(generated.value.touches)} touches, ${fmt(generated.value.conversions)} conversions, ` +
          `generated in ${fmt(generated.seconds, 1)} s`
      )
      return generated.value
    })
  if (KEPT_PROFILE !== undefined) {
    console.log(`dataset: kept profile ${dataset.profileId}: ${fmt(dataset.touches)} touches, ${fmt(dataset.conversions)} conversions`)
  }
  yield* Effect.ensuring(
    Effect.gen(function*() {
      const [credited] = yield* sql<{ any: boolean }>`
        SELECT EXISTS (
          SELECT 1 FROM conversions c WHERE c.profile_id = ${dataset.profileId}
            AND NOT EXISTS (SELECT 1 FROM credit_queue q WHERE q.profile_id = c.profile_id AND q.conversion_id = c.id AND q.occurred_at = c.occurred_at)
        ) AS any`
      if (credited?.any !== true) {
        yield* queue.enqueue(dataset.profileId, "bench")
        const credited = yield* timed(worker.runNextReplay)
        console.log(`full replay (six models) in ${fmt(credited.seconds, 1)} s`)
        // What autovacuum does after a table grows this much: reads plan on current statistics.
        yield* sql`VACUUM ANALYZE attribution_credits`
        yield* sql`VACUUM ANALYZE conversions`
      }
      const [credits] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM attribution_credits a JOIN conversions c ON c.id = a.conversion_id WHERE c.profile_id = ${dataset.profileId}`
      console.log(`credit rows: ${fmt(credits?.n ?? 0)}`)
      if (KEPT_PROFILE === undefined || process.env["BENCH_REBUILD"] !== "0") {
        const rebuilt = yield* timed(rollups.rebuild(dataset.profileId))
        const [sizes] = yield* sql<{ conversion_days: number; credit_days: number; touch_days: number; campaign_days: number }>`
          SELECT (SELECT count(*)::int FROM analytics_conversion_days WHERE profile_id = ${dataset.profileId}) AS conversion_days,
                 (SELECT count(*)::int FROM analytics_credit_days WHERE profile_id = ${dataset.profileId}) AS credit_days,
                 (SELECT count(*)::int FROM analytics_touch_days WHERE profile_id = ${dataset.profileId}) AS touch_days,
                 (SELECT count(*)::int FROM analytics_campaign_days WHERE profile_id = ${dataset.profileId}) AS campaign_days`
        console.log(
          `rollups rebuilt in ${fmt(rebuilt.seconds, 1)} s (${fmt(rebuilt.value.days)} days): ${fmt(sizes?.conversion_days ?? 0)} conversion-day, ` +
            `${fmt(sizes?.credit_days ?? 0)} credit-day, ${fmt(sizes?.touch_days ?? 0)} touch-day, ` +
            `${fmt(sizes?.campaign_days ?? 0)} campaign-day rows`
        )
        for (const table of ROLLUP_TABLES) yield* sql`VACUUM ANALYZE ${sql(table)}`
      }
      // The job's lag on a busy day: the latest full day, marked dirty and recomputed alone; and a
      // day of history (the latest at least 180 days back), whose months a split made their own.
      const recompute = (label: string, before: string) =>
        Effect.gen(function*() {
          const [busy] = yield* sql<{ day: string; conversions: number }>`
            SELECT day::text AS day, conversions::int AS conversions FROM (
              SELECT day, sum(conversions) AS conversions FROM analytics_conversion_days
              WHERE profile_id = ${dataset.profileId} AND model = 'last_touch' AND day < ${before}::date GROUP BY day
            ) d ORDER BY day DESC LIMIT 1`
          if (busy === undefined) return
          yield* sql`INSERT INTO analytics_dirty (profile_id, day) VALUES (${dataset.profileId}, ${busy.day}::date)`
          const recomputed = yield* timed(rollups.drain)
          console.log(`${label} recomputed by the rollup job (${busy.day}, ${fmt(busy.conversions)} conversions): ${fmt(recomputed.seconds * 1000, 0)} ms`)
        })
      yield* recompute("one day", new Date().toISOString().slice(0, 10))
      yield* recompute("one day of history", new Date(Date.now() - 180 * 86_400_000).toISOString().slice(0, 10))

      const profile = { profileId: dataset.profileId, workspaceId: dataset.workspaceId, attributionEnabled: true }
      const overview = yield* sample(analytics.overview(profile, { days: 30 }))
      const timeseries = yield* sample(analytics.timeseries(profile, { days: 90 }))
      const breakdown = yield* sample(analytics.breakdown(profile, "channel", { days: 30 }))
      const ads = yield* sample(campaigns.campaigns(profile, { days: 30, level: "ad" }))
      const filtered = yield* sample(analytics.breakdown(profile, "country", { days: 30, campaign: "c-3" }), SLOW_READS)
      const raw = yield* sample(sql`
        SELECT count(*) FILTER (WHERE counts_as_cash) AS cash, count(*) AS conversions FROM conversions
        WHERE profile_id = ${dataset.profileId} AND occurred_at >= now() - interval '30 days'`)
      const rawHistory = yield* sample(sql`
        SELECT count(*) FILTER (WHERE counts_as_cash) AS cash, count(*) AS conversions FROM conversions
        WHERE profile_id = ${dataset.profileId} AND occurred_at >= now() - interval '210 days' AND occurred_at < now() - interval '180 days'`)
      const rows = [
        ["overview (30 days)", overview],
        ["timeseries (daily, 90 days)", timeseries],
        ["breakdown by channel (30 days)", breakdown],
        ["campaigns at ad level (30 days)", ads],
        ["not a goal read: breakdown by country within one campaign (30 days, raw facts)", filtered],
        ["baseline \"raw\": conversion counts of 30 days from the raw table", raw],
        ["baseline \"raw\": the same, 30 days ending 180 days ago", rawHistory]
      ] as const
      console.log("")
      console.log("| read | p50 ms | p95 ms | goal p95 < 100 ms |")
      console.log("|---|---:|---:|---|")
      for (const [label, figures] of rows) {
        const goal = label.startsWith("baseline") || label.startsWith("not a goal") ? "" : figures.p95 < GOAL_P95_MS ? "met" : "NOT met"
        console.log(`| ${label} | ${fmt(figures.p50, 2)} | ${fmt(figures.p95, 2)} | ${goal} |`)
      }
    }),
    process.env["BENCH_KEEP"] === "1"
      ? Effect.sync(() => console.log(`kept profile ${dataset.profileId}`))
      : Effect.orDie(Effect.gen(function*() {
        yield* dropDataset(sql, dataset)
        yield* sql`DELETE FROM ad_spend WHERE profile_id = ${dataset.profileId}`
        for (const table of [...ROLLUP_TABLES, "analytics_dirty"]) {
          yield* sql`DELETE FROM ${sql(table)} WHERE profile_id = ${dataset.profileId}`
        }
      }))
  )
})

await runInProcessBench("analytics", "a PostgreSQL the bench may write ten million touches to", program, () => {
  const quiet = Layer.mergeAll(
    Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false }),
    Layer.succeed(AnalyticsRollupSettings)({ ...defaultRollupSettings, enabled: false })
  )
  return Layer.mergeAll(AnalyticsService.layer, CampaignsService.layer, AnalyticsRollups.layer, AttributionWorker.layer, CreditEngine.layer, ReplayQueue.layer).pipe(
    Layer.provide(quiet),
    Layer.provide(RunnerLiveness.layer),
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provide(AppConfig.layer)
  )
})
