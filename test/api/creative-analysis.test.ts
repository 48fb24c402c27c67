/**
 * Creative analysis end to end (decision 0071): real HTTP, the background worker, a real database.
 * Ads and their days are seeded where the sync writes them; the budgets' counters (the job rows)
 * are seeded through the repository, so each limit is reached without dozens of calls.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CreativeAnalysisRepo } from "../../src/analytics/creatives/repo.ts"
import { CreativeAnalysisBudgets } from "../../src/analytics/creatives/service.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

/** The spec's budgets, but 25 a day per key, so the per-key day is reachable below a profile's 20 across two profiles. */
const budgets = Layer.succeed(CreativeAnalysisBudgets)({ hourlyPerCaller: 30, dailyPerProfile: 20, dailyPerCaller: 25 })

const send = (key: string, method: string, path: string) =>
  call(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } })

const fixture = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { id, key } = yield* seedApiKey(profile, { scopes: ["creatives:write", "campaigns:read"], rateLimitPerMinute: 10_000 })
  return { ...profile, key, caller: `key:${id}` }
})

interface AdSeed {
  readonly greeting?: string | null
  readonly cta?: string | null
  readonly thumbnail?: string | null
}

const seedAd = (profile: SeededProfile, platformId: string, seed: AdSeed = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const campaignId = crypto.randomUUID()
    const adSetId = crypto.randomUUID()
    yield* sql`INSERT INTO ad_campaigns (id, profile_id, platform_id, name) VALUES (${campaignId}, ${profile.profileId}, ${`c-${platformId}`}, 'C')`
    yield* sql`
      INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name)
      VALUES (${adSetId}, ${profile.profileId}, ${campaignId}, ${`s-${platformId}`}, 'S')`
    yield* sql`
      INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name, creative_thumbnail_url, destination_type, call_to_action_type, greeting)
      VALUES (${crypto.randomUUID()}, ${profile.profileId}, ${adSetId}, ${platformId}, ${`Ad ${platformId}`},
              ${seed.thumbnail === undefined ? "https://cdn.example/a.jpg" : seed.thumbnail}, 'chat_app_a',
              ${seed.cta === undefined ? "SEND_MESSAGE" : seed.cta},
              ${seed.greeting === undefined ? "Hi! Want a quote for your kitchen?" : seed.greeting})`
  })

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

/** Days `offset` (0 = today, negative = past) with impressions and clicks for an ad. */
const seedDays = (profile: SeededProfile, adId: string, days: ReadonlyArray<{ offset: number; impressions: number; clicks: number; spend: string }>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    for (const d of days) {
      yield* sql`
        INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency, amount,
                              source, impressions, clicks, reported_conversions, reported_chats)
        VALUES (${profile.profileId}, 'adplatform', ${day(d.offset)}::date, ${`c-${adId}`}, ${`s-${adId}`}, ${adId}, 'EUR', ${d.spend},
                'sync', ${d.impressions}, ${d.clicks}, 1, 0)`
    }
  })

const seedJobs = (profileId: string, caller: string, count: number) =>
  Effect.gen(function*() {
    const repo = yield* CreativeAnalysisRepo
    for (let i = 0; i < count; i++) {
      yield* repo.insert({ profileId, adPlatformId: `seeded-${i}`, fingerprint: "seed", caller })
    }
  }).pipe(Effect.provide(CreativeAnalysisRepo.layer))

const jobCount = (caller: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM creative_analysis_jobs WHERE caller = ${caller}`, (rows) => Number(rows[0]?.n ?? 0)))

const secondsToUtcMidnight = () => {
  const now = new Date()
  return (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000
}

const settled = (key: string, adId: string) =>
  eventually(send(key, "GET", `/api/v1/ads/${adId}/creative-analysis`), (r) => r.status === 200 && ["succeeded", "failed"].includes(r.json.data.status), {
    what: `analysis of ${adId} to finish`,
    within: "30 seconds",
    every: "200 millis"
  })

layer(serveApp(testSettings()).pipe(Layer.provide(budgets)), { timeout: "120 seconds", excludeTestServices: true })("creative analysis", (it) => {
  describe("queue and poll", () => {
    it.effect("202 queues a job the worker completes with features, verdicts and learned values", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "ad-1")
        // 10 delivering days: 3 % CTR for 7 days, then 1.2 % for the last 3 (fatigue).
        yield* seedDays(f, "ad-1", [
          ...[-9, -8, -7, -6, -5, -4, -3].map((offset) => ({ offset, impressions: 1000, clicks: 30, spend: "10.00" })),
          ...[-2, -1, 0].map((offset) => ({ offset, impressions: 1000, clicks: 12, spend: "10.00" }))
        ])
        // Three peers with 1 %, 2 % and 5 % CTR.
        for (const [id, clicks] of [["p-1", 10], ["p-2", 20], ["p-3", 50]] as const) {
          yield* seedAd(f, id)
          yield* seedDays(f, id, [{ offset: -1, impressions: 1000, clicks, spend: "5.00" }])
        }
        const queued = yield* send(f.key, "POST", "/api/v1/ads/ad-1/creative-analysis")
        assert.strictEqual(queued.status, 202, queued.text)
        assert.strictEqual(queued.json.meta.deduplicated, false)
        assert.strictEqual(queued.json.data.ad_id, "ad-1")
        assert.include(["queued", "running", "succeeded"], queued.json.data.status)

        const done = yield* settled(f.key, "ad-1")
        const job = done.json.data
        assert.strictEqual(job.status, "succeeded", done.text)
        assert.strictEqual(job.job_id, queued.json.data.job_id)
        const { creative, performance, verdicts, learned } = job.result
        assert.strictEqual(creative.format, "click_to_chat")
        assert.strictEqual(creative.media_type, "image")
        assert.strictEqual(creative.has_call_to_action, true)
        assert.strictEqual(creative.greeting_length, "Hi! Want a quote for your kitchen?".length)
        assert.strictEqual(creative.greeting_has_question, true)
        assert.strictEqual(performance.impressions, 10_000)
        assert.strictEqual(performance.clicks, 246)
        assert.strictEqual(performance.spend, "100.00")
        assert.strictEqual(performance.ctr, 0.0246)
        assert.strictEqual(performance.days_with_delivery, 10)
        assert.strictEqual(performance.ctr_recent_over_prior, 0.4)
        const decay = verdicts.find((v: any) => v.id === "performance.ctr_decay")
        assert.strictEqual(decay.outcome, "warn")
        assert.deepStrictEqual(decay.rule.thresholds, { warn_below: 0.8, high_below: 0.6, min_impressions: 1000 })
        assert.strictEqual(decay.rule.inputs.ctr_recent_over_prior, 0.4)
        assert.strictEqual(verdicts.find((v: any) => v.id === "creative.call_to_action").outcome, "pass")
        assert.strictEqual(verdicts.find((v: any) => v.id === "creative.url_tags").outcome, "withheld")
        assert.deepStrictEqual(learned.fatigue_risk_tier, { value: "high", status: "served", reason: null })
        // 2.46 % beats the 1 % and 2 % peers, not the 5 % one.
        assert.deepStrictEqual(learned.top_performer_likelihood, { value: 0.6667, status: "served", reason: null })
        assert.strictEqual(learned.expected_lifespan_days.status, "served")
      }))

    it.effect("an ad without delivery gets its values withheld with a reason", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "quiet", { cta: null, greeting: null })
        assert.strictEqual((yield* send(f.key, "POST", "/api/v1/ads/quiet/creative-analysis")).status, 202)
        const job = (yield* settled(f.key, "quiet")).json.data
        assert.strictEqual(job.status, "succeeded")
        assert.deepStrictEqual(job.result.learned.fatigue_risk_tier, { value: null, status: "withheld", reason: "insufficient_impressions" })
        assert.strictEqual(job.result.verdicts.find((v: any) => v.id === "creative.call_to_action").outcome, "fail")
        assert.strictEqual(job.result.verdicts.find((v: any) => v.id === "creative.greeting_length").outcome, "fail")
        assert.strictEqual(job.result.verdicts.find((v: any) => v.id === "performance.ctr_vs_profile").outcome, "withheld")
      }))

    it.effect("a job left running by a dead runner is picked up again when its lease expires", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const sql = yield* SqlClient
        yield* seedAd(f, "orphan")
        const job = yield* Effect.provide(
          Effect.flatMap(CreativeAnalysisRepo, (repo) => repo.insert({ profileId: f.profileId, adPlatformId: "orphan", fingerprint: "x", caller: f.caller })),
          CreativeAnalysisRepo.layer
        )
        yield* sql`UPDATE creative_analysis_jobs SET status = 'running', attempts = 1, lease_until = now() - interval '1 second' WHERE id = ${job.id}`
        const done = (yield* settled(f.key, "orphan")).json.data
        assert.strictEqual(done.status, "succeeded")
        assert.strictEqual(done.attempts, 2)
      }))
  })

  describe("repeat within 24 hours", () => {
    it.effect("the same creative answers the existing job and consumes nothing; a changed creative queues anew", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const sql = yield* SqlClient
        yield* seedAd(f, "dup")
        const first = yield* send(f.key, "POST", "/api/v1/ads/dup/creative-analysis")
        assert.strictEqual(first.status, 202)
        // One short of the profile's day: had the repeat consumed a unit, the changed creative below would be refused.
        yield* seedJobs(f.profileId, f.caller, 18)
        const again = yield* send(f.key, "POST", "/api/v1/ads/dup/creative-analysis")
        assert.strictEqual(again.status, 202, again.text)
        assert.strictEqual(again.json.meta.deduplicated, true)
        assert.strictEqual(again.json.data.job_id, first.json.data.job_id)
        assert.strictEqual(yield* jobCount(f.caller), 19)

        yield* sql`UPDATE ads SET greeting = 'Hello, a new greeting?' WHERE profile_id = ${f.profileId} AND platform_id = 'dup'`
        const changed = yield* send(f.key, "POST", "/api/v1/ads/dup/creative-analysis")
        assert.strictEqual(changed.status, 202, changed.text)
        assert.strictEqual(changed.json.meta.deduplicated, false)
        assert.notStrictEqual(changed.json.data.job_id, first.json.data.job_id)
        assert.strictEqual(yield* jobCount(f.caller), 20)
      }))

    it.effect("two concurrent calls for the same creative queue one job", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "race")
        const answers = yield* Effect.all([
          send(f.key, "POST", "/api/v1/ads/race/creative-analysis"),
          send(f.key, "POST", "/api/v1/ads/race/creative-analysis")
        ], { concurrency: 2 })
        assert.deepStrictEqual(answers.map((a) => a.status), [202, 202])
        assert.strictEqual(answers[0]?.json.data.job_id, answers[1]?.json.data.job_id)
        assert.deepStrictEqual(answers.map((a) => a.json.meta.deduplicated).sort(), [false, true])
        assert.strictEqual(yield* jobCount(f.caller), 1)
      }))
  })

  describe("budgets", () => {
    it.effect("30 calls per hour per key: the 31st is 429 with Retry-After within the hour, and queues nothing", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "h")
        yield* seedJobs(f.profileId, f.caller, 30)
        const refused = yield* send(f.key, "POST", "/api/v1/ads/h/creative-analysis")
        assert.strictEqual(refused.status, 429, refused.text)
        assert.strictEqual(refused.json.error.code, "rate_limit_exceeded")
        assert.strictEqual(refused.json.error.reason, "creative_analysis_hourly_per_key")
        const retryAfter = Number(refused.headers.get("retry-after"))
        assert.isTrue(retryAfter >= 3590 && retryAfter <= 3600, String(retryAfter))
        assert.strictEqual(yield* jobCount(f.caller), 30)
      }))

    it.effect("20 per profile per UTC day: 429 with Retry-After to the next UTC midnight", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "p")
        yield* seedJobs(f.profileId, "key:someone-else", 20)
        const refused = yield* send(f.key, "POST", "/api/v1/ads/p/creative-analysis")
        assert.strictEqual(refused.status, 429, refused.text)
        assert.strictEqual(refused.json.error.reason, "creative_analysis_daily_per_profile")
        const retryAfter = Number(refused.headers.get("retry-after"))
        assert.isTrue(Math.abs(retryAfter - secondsToUtcMidnight()) <= 5, `${retryAfter} vs ${secondsToUtcMidnight()}`)
        assert.strictEqual(yield* jobCount(f.caller), 0)
      }))

    it.effect("the per-key day counts the key's calls on every profile: 429 with Retry-After to the next UTC midnight", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        yield* seedAd(f, "k")
        const other1 = yield* seedProfile()
        const other2 = yield* seedProfile()
        yield* seedJobs(other1.profileId, f.caller, 13)
        yield* seedJobs(other2.profileId, f.caller, 12)
        const refused = yield* send(f.key, "POST", "/api/v1/ads/k/creative-analysis")
        assert.strictEqual(refused.status, 429, refused.text)
        assert.strictEqual(refused.json.error.reason, "creative_analysis_daily_per_key")
        const retryAfter = Number(refused.headers.get("retry-after"))
        assert.isTrue(Math.abs(retryAfter - secondsToUtcMidnight()) <= 5, `${retryAfter} vs ${secondsToUtcMidnight()}`)
        assert.strictEqual(yield* jobCount(f.caller), 25)
      }))
  })

  describe("access", () => {
    it.effect("403 without creatives:write", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        yield* seedAd(profile, "s")
        const { key } = yield* seedApiKey(profile, { scopes: ["campaigns:read", "campaigns:apply"] })
        const refused = yield* send(key, "POST", "/api/v1/ads/s/creative-analysis")
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual((yield* send(key, "GET", "/api/v1/ads/s/creative-analysis")).status, 403)
      }))

    it.effect("an app-provisioned profile with the attribution add-on off: 409 entitlement_required, nothing queued", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Creative app")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `ca-${crypto.randomUUID().slice(0, 8)}` })
        assert.strictEqual(created.status, 201, created.text)
        const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
        yield* seedAd(profile, "broker")
        const { id, key } = yield* seedApiKey(profile, { scopes: ["creatives:write"] })
        const refused = yield* send(key, "POST", "/api/v1/ads/broker/creative-analysis")
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "entitlement_required")
        assert.strictEqual(yield* jobCount(`key:${id}`), 0)
      }))

    it.effect("404 for another profile's ad, and for an unknown one; nothing queued", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const other = yield* seedProfile()
        yield* seedAd(other, "theirs")
        const foreign = yield* send(f.key, "POST", "/api/v1/ads/theirs/creative-analysis")
        assert.strictEqual(foreign.status, 404, foreign.text)
        assert.strictEqual(foreign.json.error.code, "not_found")
        assert.strictEqual((yield* send(f.key, "GET", "/api/v1/ads/theirs/creative-analysis")).status, 404)
        assert.strictEqual((yield* send(f.key, "POST", "/api/v1/ads/nope/creative-analysis")).status, 404)
        assert.strictEqual(yield* jobCount(f.caller), 0)
      }))
  })
})
