/**
 * Analytics reads (decision 0041): overview, timeseries and breakdowns over real HTTP, served
 * from the rollups. Facts are written by SQL (their routes are other domains'), the attribution
 * worker is off (the fixtures write credit rows themselves), and the rollups are drained by hand
 * before each read (the background job also runs; draining waits for it).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import { AnalyticsRollups } from "../../src/analytics/rollups/repo.ts"
import {
  analyticsApp,
  type AnalyticsProfileOptions,
  connectBroker,
  credit,
  drain,
  get,
  insertConversion,
  insertTouch,
  seedAnalyticsProfile as seedProfileWith
} from "../support/analytics.ts"
import { defineConversion, ingest } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const seedAnalyticsProfile = (options: AnalyticsProfileOptions = {}) => seedProfileWith(["analytics:read", "events:write"], options)

/** Today in a time zone, as the service computes it. */
const todayIn = (timeZone: string) => new Intl.DateTimeFormat("en-CA", { timeZone }).format(new Date())

/**
 * The crafted world: New York profile in EUR, workspace reporting in USD.
 * - T1 paid_social (campaign c1 / set s1 / ad a1, ES, mobile, facebook.com, /landing, keyword shoes)
 * - T2 organic_search (FR, desktop, google.com, /)
 * - C1 sale 100 EUR, first payment, 03-03 (NY); last_touch → T2; linear → T1 ½, T2 ½
 * - C2 sale 50.5 USD, 2026-03-04T03:00Z = 03-03 22:00 in New York; last_touch and linear → T1
 * - C3 lead, 03-04; last_touch → T1
 * - C4 sale 30 EUR refunded in full, 03-05; last_touch → T1 (excluded from counts)
 * - C5 lead, 03-06, no credit
 * Spend of ad a1: 20 EUR on 03-03, 10 USD on 03-04. EUR→USD 1.1 on 03-02 (carried to 03-03), 1.2 on 03-04.
 */
const seedCrafted = Effect.gen(function*() {
  const profile = yield* seedAnalyticsProfile({ timeZone: "America/New_York", currency: "EUR", reportingCurrency: "USD" })
  const p = profile.profileId
  const t1 = yield* insertTouch(p, {
    at: "2026-03-02T15:00:00Z", channel: "paid_social", campaign: "c1", adSet: "s1", ad: "a1", country: "ES", device: "mobile",
    referrer: "facebook.com", page: "/landing", keyword: "shoes", browser: "Safari", os: "iOS"
  })
  const t2 = yield* insertTouch(p, {
    at: "2026-03-03T15:00:00Z", channel: "organic_search", country: "FR", device: "desktop", referrer: "google.com", page: "/",
    browser: "Firefox", os: "Linux"
  })
  // An outcome touch is never counted as a touch.
  yield* insertTouch(p, { at: "2026-03-03T16:00:00Z", channel: "direct", kind: "outcome" })
  const { id: c1 } = yield* insertConversion(p, { at: "2026-03-03T16:00:00Z", key: "sale", value: "100", currency: "EUR", cash: true, first: true })
  const { id: c2 } = yield* insertConversion(p, { at: "2026-03-04T03:00:00Z", key: "sale", value: "50.5", currency: "USD", cash: true, first: false })
  const { id: c3 } = yield* insertConversion(p, { at: "2026-03-04T12:00:00Z", key: "lead" })
  const { id: c4 } = yield* insertConversion(p, {
    at: "2026-03-05T12:00:00Z", key: "sale", value: "30", currency: "EUR", cash: true, first: true, refund: "30"
  })
  yield* insertConversion(p, { at: "2026-03-06T12:00:00Z", key: "lead" })
  yield* credit(c1, "last_touch", t2, "1")
  yield* credit(c1, "linear", t1, "0.5", 0)
  yield* credit(c1, "linear", t2, "0.5", 1)
  yield* credit(c2, "last_touch", t1, "1")
  yield* credit(c2, "linear", t1, "1")
  yield* credit(c3, "last_touch", t1, "1")
  yield* credit(c4, "last_touch", t1, "1")
  const imports = yield* AnalyticsImports
  yield* imports.upsertSpend([
    { profileId: p, platform: "adplatform", day: "2026-03-03", campaignId: "c1", adSetId: "s1", adId: "a1", currency: "EUR", amount: "20" },
    { profileId: p, platform: "adplatform", day: "2026-03-04", campaignId: "c1", adSetId: "s1", adId: "a1", currency: "USD", amount: "10" }
  ])
  yield* imports.upsertFxRates([
    { day: "2026-03-02", base: "EUR", quote: "USD", rate: "1.1" },
    { day: "2026-03-04", base: "EUR", quote: "USD", rate: "1.2" }
  ])
  yield* drain
  return profile
})

const RANGE = { start: "2026-03-01", end: "2026-03-10" }

layer(analyticsApp, { timeout: "300 seconds", excludeTestServices: true })("analytics reads", (it) => {
  describe("GET /api/v1/overview", () => {
    it.effect("exact counts and money of the crafted world: business_conversions, cash, refunds out, FX both ways, ROAS", () =>
      Effect.gen(function*() {
        const profile = yield* seedCrafted
        const response = yield* get(profile.key, "/api/v1/overview", RANGE)
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.data, {
          model: "last_touch",
          time_zone: "America/New_York",
          currency: "EUR",
          reporting_currency: "USD",
          filters: { channel: null, campaign: null, ad_set: null, ad: null, conversion_key: null },
          spend_measured: true,
          current: {
            start: "2026-03-01",
            end: "2026-03-10",
            outcomes: 4,
            business_conversions: 4,
            cash_payments: 2,
            first_payments: 1,
            credited_conversions: "3",
            revenue: "145.909091",
            spend: "28.333333",
            roas: "5.1497",
            unavailable_reason: null,
            reporting: { currency: "USD", revenue: "160.5", spend: "32", roas: "5.0156", unavailable_reason: null }
          },
          previous: {
            start: "2026-02-19",
            end: "2026-02-28",
            outcomes: 0,
            business_conversions: 0,
            cash_payments: 0,
            first_payments: 0,
            credited_conversions: "0",
            revenue: "0",
            spend: "0",
            roas: null,
            unavailable_reason: null,
            reporting: { currency: "USD", revenue: "0", spend: "0", roas: null, unavailable_reason: null }
          }
        })
      }))

    it.effect("filters: a campaign counts only what the model credits to it, with its spend; a channel has no measurable spend", () =>
      Effect.gen(function*() {
        const profile = yield* seedCrafted
        const campaign = (yield* get(profile.key, "/api/v1/overview", { ...RANGE, campaign: "c1" })).json.data.current
        assert.deepInclude(campaign, {
          outcomes: 2, cash_payments: 1, first_payments: 0, credited_conversions: "2", revenue: "45.909091", spend: "28.333333",
          roas: "1.6203"
        })
        assert.deepStrictEqual(campaign.reporting, { currency: "USD", revenue: "50.5", spend: "32", roas: "1.5781", unavailable_reason: null })
        const channel = (yield* get(profile.key, "/api/v1/overview", { ...RANGE, channel: "paid_social" })).json.data
        assert.deepInclude(channel.current, { outcomes: 2, spend: null, roas: null, revenue: "45.909091" })
        assert.strictEqual(channel.spend_measured, false)
        const organic = (yield* get(profile.key, "/api/v1/overview", { ...RANGE, channel: "organic_search", model: "linear" })).json.data
        assert.deepInclude(organic.current, { outcomes: 1, cash_payments: 1, first_payments: 1, credited_conversions: "0.5", revenue: "50" })
        const leads = (yield* get(profile.key, "/api/v1/overview", { ...RANGE, conversion_key: "lead" })).json.data.current
        assert.deepInclude(leads, { outcomes: 2, cash_payments: 0, revenue: "0", spend: "28.333333", roas: "0" })
        const otherAd = (yield* get(profile.key, "/api/v1/overview", { ...RANGE, ad: "a2" })).json.data.current
        assert.deepInclude(otherAd, { outcomes: 0, spend: null, roas: null })
      }))

    it.effect("spend: null when none was ever recorded, \"0\" for a measured zero; a missing FX rate nulls only what needs it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        // JPY rates are this test's own (a rerun on the same database starts without them).
        yield* sql`DELETE FROM fx_rates WHERE quote = 'JPY' OR base = 'JPY'`
        const profile = yield* seedAnalyticsProfile({ currency: "EUR", reportingCurrency: "JPY" })
        yield* insertConversion(profile.profileId, { at: "2026-05-02T10:00:00Z", key: "sale", value: "10", currency: "EUR", cash: true })
        yield* drain
        const unmeasured = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data
        assert.strictEqual(unmeasured.spend_measured, false)
        assert.deepInclude(unmeasured.current, { revenue: "10", spend: null, roas: null, unavailable_reason: null })
        assert.deepStrictEqual(unmeasured.current.reporting, {
          currency: "JPY", revenue: null, spend: null, roas: null, unavailable_reason: "fx_rate_missing"
        })
        const imports = yield* AnalyticsImports
        yield* imports.upsertSpend([{
          profileId: profile.profileId, platform: "adplatform", day: "2026-04-01", campaignId: null, adSetId: null, adId: "x",
          currency: "EUR", amount: "5"
        }])
        const zero = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data
        assert.strictEqual(zero.spend_measured, true)
        assert.deepInclude(zero.current, { spend: "0", roas: null })
        // Idempotent import: the same key again updates the one row.
        yield* imports.upsertSpend([{
          profileId: profile.profileId, platform: "adplatform", day: "2026-05-02", campaignId: null, adSetId: null, adId: "x",
          currency: "EUR", amount: "4"
        }])
        yield* imports.upsertSpend([{
          profileId: profile.profileId, platform: "adplatform", day: "2026-05-02", campaignId: null, adSetId: null, adId: "x",
          currency: "EUR", amount: "2.5"
        }])
        const [rows] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ad_spend WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows?.n, 2)
        const spent = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data.current
        assert.deepInclude(spent, { spend: "2.5", roas: "4" })
        // JPY per EUR as the ECB file gives it, carried from 05-01 to 05-02.
        yield* imports.upsertFxRates([{ day: "2026-05-01", base: "EUR", quote: "JPY", rate: "160.5" }])
        const converted = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data.current
        assert.deepStrictEqual(converted.reporting, { currency: "JPY", revenue: "1605", spend: "401.25", roas: "4", unavailable_reason: null })
        yield* sql`UPDATE workspaces SET reporting_currency = NULL WHERE id = ${profile.workspaceId}`
        const unset = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data.current
        assert.deepStrictEqual(unset.reporting, { currency: null, revenue: null, spend: null, roas: null, unavailable_reason: "currency_unset" })
        // A payment in a currency without any rate: the profile-currency revenue is null too, with its reason.
        yield* sql`DELETE FROM fx_rates WHERE quote = 'GBP' OR base = 'GBP'`
        yield* insertConversion(profile.profileId, { at: "2026-05-03T10:00:00Z", key: "sale", value: "1", currency: "GBP", cash: true })
        yield* drain
        const gbp = (yield* get(profile.key, "/api/v1/overview", { start: "2026-05-01", end: "2026-05-03" })).json.data.current
        assert.deepInclude(gbp, { outcomes: 2, revenue: null, spend: "2.5", roas: null, unavailable_reason: "fx_rate_missing" })
        const series = (yield* get(profile.key, "/api/v1/timeseries", { start: "2026-05-02", end: "2026-05-03" })).json
        assert.deepStrictEqual(series.data.map((point: any) => point.revenue), ["10", null])
        assert.strictEqual(series.meta.unavailable_reason, "fx_rate_missing")
      }))

    it.effect("days: calendar days ending today in the profile's time zone; previous period of the same length before it", () =>
      Effect.gen(function*() {
        const profile = yield* seedAnalyticsProfile({ timeZone: "Pacific/Kiritimati" })
        const response = yield* get(profile.key, "/api/v1/overview", { days: "7" })
        assert.strictEqual(response.status, 200, response.text)
        const today = todayIn("Pacific/Kiritimati")
        const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10)
        assert.deepInclude(response.json.data.current, { start: day(-6), end: today })
        assert.deepInclude(response.json.data.previous, { start: day(-13), end: day(-7) })
        const fallback = yield* get(profile.key, "/api/v1/overview")
        assert.deepInclude(fallback.json.data.current, { start: day(-29), end: today })
      }))
  })

  describe("GET /api/v1/timeseries", () => {
    it.effect("one point per day of the profile's time zone: a 22:00 New York sale is on its New York day", () =>
      Effect.gen(function*() {
        const profile = yield* seedCrafted
        const response = yield* get(profile.key, "/api/v1/timeseries", { start: "2026-03-02", end: "2026-03-06" })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.data, [
          { date: "2026-03-02", outcomes: 0, cash_payments: 0, first_payments: 0, credited_conversions: "0", revenue: "0", spend: "0",
            reporting: { revenue: "0", spend: "0" } },
          { date: "2026-03-03", outcomes: 2, cash_payments: 2, first_payments: 1, credited_conversions: "2", revenue: "145.909091",
            spend: "20", reporting: { revenue: "160.5", spend: "22" } },
          { date: "2026-03-04", outcomes: 1, cash_payments: 0, first_payments: 0, credited_conversions: "1", revenue: "0",
            spend: "8.333333", reporting: { revenue: "0", spend: "10" } },
          { date: "2026-03-05", outcomes: 0, cash_payments: 0, first_payments: 0, credited_conversions: "0", revenue: "0", spend: "0",
            reporting: { revenue: "0", spend: "0" } },
          { date: "2026-03-06", outcomes: 1, cash_payments: 0, first_payments: 0, credited_conversions: "0", revenue: "0", spend: "0",
            reporting: { revenue: "0", spend: "0" } }
        ])
        assert.deepInclude(response.json.meta, {
          granularity: "day", range: { start: "2026-03-02", end: "2026-03-06", days: 5 }, spend_measured: true,
          unavailable_reason: null, reporting_unavailable_reason: null
        })
        // The same facts in a UTC profile: the 03:00Z sale moves to 03-04.
        const sql = yield* SqlClient
        yield* sql`UPDATE profiles SET time_zone = 'UTC' WHERE id = ${profile.profileId}`
        yield* drain
        const utc = yield* get(profile.key, "/api/v1/timeseries", { start: "2026-03-03", end: "2026-03-04" })
        assert.deepStrictEqual(utc.json.data.map((point: any) => [point.date, point.outcomes, point.revenue]), [
          ["2026-03-03", 1, "100"],
          // 50.5 USD now on 03-04: that day's rate (1.2).
          ["2026-03-04", 2, "42.083333"]
        ])
      }))
  })

  describe("GET /api/v1/breakdowns/{dimension}", () => {
    it.effect("rows per value with touches and the model's credit; filters within the same touch; limit", () =>
      Effect.gen(function*() {
        const profile = yield* seedCrafted
        const country = yield* get(profile.key, "/api/v1/breakdowns/country", RANGE)
        assert.strictEqual(country.status, 200, country.text)
        assert.deepStrictEqual(country.json.data, [
          { value: "ES", touches: 1, conversions: 2, cash_payments: 1, first_payments: 0, credited_conversions: "2",
            credited_revenue: "45.909091", reporting_credited_revenue: "50.5" },
          { value: "FR", touches: 1, conversions: 1, cash_payments: 1, first_payments: 1, credited_conversions: "1",
            credited_revenue: "100", reporting_credited_revenue: "110" }
        ])
        assert.deepInclude(country.json.meta, { dimension: "country", rows_total: 2, model: "last_touch" })
        const linear = yield* get(profile.key, "/api/v1/breakdowns/country", { ...RANGE, model: "linear" })
        assert.deepStrictEqual(linear.json.data.map((row: any) => [row.value, row.conversions, row.first_payments, row.credited_conversions, row.credited_revenue]), [
          ["ES", 2, 1, "1.5", "95.909091"],
          ["FR", 1, 1, "0.5", "50"]
        ])
        const keyword = yield* get(profile.key, "/api/v1/breakdowns/keyword", RANGE)
        assert.deepStrictEqual(keyword.json.data.map((row: any) => [row.value, row.touches, row.conversions]), [["shoes", 1, 2], [null, 1, 1]])
        const filtered = yield* get(profile.key, "/api/v1/breakdowns/referrer", { ...RANGE, channel: "paid_social" })
        assert.deepStrictEqual(filtered.json.data.map((row: any) => [row.value, row.touches, row.conversions]), [["facebook.com", 1, 2]])
        const same = yield* get(profile.key, "/api/v1/breakdowns/channel", { ...RANGE, channel: "organic_search" })
        assert.deepStrictEqual(same.json.data.map((row: any) => [row.value, row.touches, row.conversions]), [["organic_search", 1, 1]])
        const limited = yield* get(profile.key, "/api/v1/breakdowns/device", { ...RANGE, limit: "1" })
        assert.deepStrictEqual(limited.json.data.map((row: any) => row.value), ["mobile"])
        assert.strictEqual(limited.json.meta.rows_total, 2)
        for (const dimension of ["channel", "referrer", "page", "keyword", "country", "device", "browser", "os"]) {
          const response = yield* get(profile.key, `/api/v1/breakdowns/${dimension}`, RANGE)
          assert.strictEqual(response.status, 200, dimension)
          assert.strictEqual(response.json.data.reduce((sum: number, row: any) => sum + row.touches, 0), 2, dimension)
        }
      }))
  })

  describe("parameters", () => {
    it.effect("over 366 days or invalid dates: 400 invalid_date_range; bad parameters: 400 invalid_parameter naming them", () =>
      Effect.gen(function*() {
        const profile = yield* seedAnalyticsProfile()
        const cases: Array<[string, Record<string, string>, string, string]> = [
          ["/api/v1/overview", { days: "367" }, "invalid_date_range", "days"],
          ["/api/v1/timeseries", { start: "2025-01-01", end: "2026-01-02" }, "invalid_date_range", "367"],
          ["/api/v1/overview", { start: "2026-02-30", end: "2026-03-02" }, "invalid_date_range", "start"],
          ["/api/v1/overview", { start: "2026-03-05", end: "2026-03-01" }, "invalid_date_range", "after"],
          ["/api/v1/overview", { end: "2026-03-01" }, "invalid_date_range", "start"],
          ["/api/v1/breakdowns/country", { start: "03/01/2026" }, "invalid_date_range", "start"],
          ["/api/v1/overview", { days: "abc" }, "invalid_parameter", "days"],
          ["/api/v1/overview", { days: "0" }, "invalid_parameter", "days"],
          ["/api/v1/overview", { days: "7", start: "2026-03-01" }, "invalid_parameter", "days"],
          ["/api/v1/timeseries", { model: "u_shaped" }, "invalid_parameter", "model"],
          ["/api/v1/overview", { channel: "email", campaign: "c1" }, "invalid_parameter", "campaign"],
          ["/api/v1/overview", { conversion_key: "" }, "invalid_parameter", "conversion_key"],
          ["/api/v1/breakdowns/city", {}, "invalid_parameter", "dimension"],
          ["/api/v1/breakdowns/country", { limit: "0" }, "invalid_parameter", "limit"],
          ["/api/v1/breakdowns/country", { limit: "201" }, "invalid_parameter", "limit"]
        ]
        for (const [path, query, code, named] of cases) {
          const response = yield* get(profile.key, path, query)
          assert.strictEqual(response.status, 400, `${path} ${JSON.stringify(query)}: ${response.text}`)
          assert.strictEqual(response.json.error.code, code, JSON.stringify(query))
          assert.include(response.json.error.message, named, JSON.stringify(query))
        }
        const exactly = yield* get(profile.key, "/api/v1/timeseries", { start: "2025-01-01", end: "2026-01-01" })
        assert.strictEqual(exactly.status, 200)
        assert.strictEqual(exactly.json.data.length, 366)
      }))

    it.effect("analytics:read is required: 403 insufficient_scope naming it", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["conversions:read"] })
        for (const path of ["/api/v1/overview", "/api/v1/timeseries", "/api/v1/breakdowns/channel"]) {
          const response = yield* get(key, path)
          assert.strictEqual(response.status, 403)
          assert.strictEqual(response.json.error.code, "insufficient_scope")
          assert.include(response.json.error.message, "analytics:read")
        }
      }))

    it.effect("connect-broker tier: every read answers empty with 200, never a 403; parameters are still checked", () =>
      Effect.gen(function*() {
        const profile = yield* seedCrafted
        const key = yield* connectBroker(profile, ["analytics:read"])
        const overview = yield* get(key, "/api/v1/overview", RANGE)
        assert.strictEqual(overview.status, 200, overview.text)
        assert.deepInclude(overview.json.data.current, { outcomes: 0, cash_payments: 0, revenue: "0", spend: null, roas: null })
        assert.strictEqual(overview.json.data.spend_measured, false)
        const series = yield* get(key, "/api/v1/timeseries", RANGE)
        assert.deepStrictEqual([series.status, series.json.data], [200, []])
        const rows = yield* get(key, "/api/v1/breakdowns/country", RANGE)
        assert.deepStrictEqual([rows.status, rows.json.data, rows.json.meta.rows_total], [200, [], 0])
        const bad = yield* get(key, "/api/v1/overview", { days: "400" })
        assert.strictEqual(bad.json.error.code, "invalid_date_range")
      }))
  })

  describe("rollups", () => {
    it.effect("bounded lag: an ingested outcome reaches the overview without a hand drain", () =>
      Effect.gen(function*() {
        const profile = yield* seedAnalyticsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const at = new Date().toISOString()
        const answer = yield* ingest(profile.key, { event_name: "purchase", occurred_at: at, properties: { value: "12.5", currency: "EUR" } })
        assert.strictEqual(answer.status, 200, answer.text)
        // The job's lag is its settle delay (3 s) plus a poll (1 s): allow a loaded machine 20 s.
        const seen = yield* eventually(
          Effect.map(get(profile.key, "/api/v1/overview", { days: "2" }), (overview) => overview.json.data.current.outcomes),
          (outcomes) => outcomes !== 0,
          { what: "the outcome to reach the overview", within: "20 seconds", every: "200 millis" }
        )
        assert.strictEqual(seen, 1)
      }))

    it.effect("a day's marks wait for the settle delay; one recompute then covers the day's later marks too", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const rollups = yield* AnalyticsRollups
        const profile = yield* seedAnalyticsProfile()
        const p = profile.profileId
        const at = new Date().toISOString()
        const outcomes = Effect.map(get(profile.key, "/api/v1/overview", { days: "2" }), (r) => r.json.data.current.outcomes)
        const marks = Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM analytics_dirty WHERE profile_id = ${p}`,
          (rows) => rows[0]?.n ?? 0
        )
        yield* insertConversion(p, { at, key: "sale", value: "5", currency: "EUR", cash: true, first: true })
        // A minute's settle: the fresh mark stays, and the rollups do not have the conversion yet.
        assert.strictEqual(yield* rollups.refreshPending(Duration.minutes(1)), 0)
        assert.isAbove(yield* marks, 0)
        assert.strictEqual(yield* outcomes, 0)
        // Once the oldest mark of the day is old enough, one batch takes it and the day's later marks.
        yield* sql`UPDATE analytics_dirty SET marked_at = now() - interval '2 minutes' WHERE profile_id = ${p}`
        yield* insertConversion(p, { at, key: "sale", value: "7", currency: "EUR", cash: true, first: false })
        yield* rollups.refreshPending(Duration.minutes(1))
        assert.strictEqual(yield* marks, 0)
        assert.strictEqual(yield* outcomes, 2)
      }))

    it.effect("property: after waves of writes, refunds, deletions and re-credits, rollups equal a recomputation from raw rows", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        let seed = 20261121
        const random = () => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return seed / 2147483648
        }
        const pick = <A>(values: ReadonlyArray<A>): A => values[Math.floor(random() * values.length)] as A
        const zones = ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"]
        const channels = ["paid_social", "paid_search", "organic_search", "direct", "email"]
        const models = ["last_touch", "first_touch", "linear", "time_decay"]
        const profile = yield* seedAnalyticsProfile({ timeZone: pick(zones), currency: "EUR" })
        const p = profile.profileId
        const base = Date.parse("2026-06-01T00:00:00Z")
        const randomAt = () => new Date(base + Math.floor(random() * 40 * 86_400_000)).toISOString()
        const touches: Array<string> = []
        const conversions: Array<string> = []
        const wave = Effect.gen(function*() {
          for (let i = 0; i < 25; i++) {
            const paid = random() < 0.5
            touches.push(yield* insertTouch(p, {
              at: randomAt(),
              channel: paid ? pick(["paid_social", "paid_search"]) : pick(channels),
              campaign: paid ? pick(["c1", "c2"]) : null,
              adSet: paid ? pick(["s1", "s2", "s3"]) : null,
              ad: paid ? pick(["a1", "a2", "a3", "a4"]) : null,
              referrer: pick([null, "google.com", "facebook.com"]),
              page: pick(["/", "/a", "/b"]),
              keyword: pick([null, "shoes", "boots"]),
              utm: pick([{}, { utm_campaign: "spring", utm_source: "newsletter", utm_medium: "email" }, { utm_source: "partner" }]),
              country: pick([null, "ES", "FR", "US"]),
              device: pick(["mobile", "desktop"]),
              browser: pick(["Safari", "Chrome"]),
              os: pick(["iOS", "Linux"])
            }))
          }
          for (let i = 0; i < 15; i++) {
            const cash = random() < 0.6
            const { id } = yield* insertConversion(p, {
              at: randomAt(),
              key: cash ? "sale" : pick(["lead", "call"]),
              value: cash ? `${Math.floor(random() * 10000) / 100}` : null,
              currency: cash ? pick(["EUR", null]) : null,
              cash,
              first: cash ? random() < 0.5 : null
            })
            conversions.push(id)
            for (const model of models) {
              if (random() < 0.15) continue
              const count = model === "linear" || model === "time_decay" ? 1 + Math.floor(random() * 3) : 1
              const chosen = [...new Set(Array.from({ length: count }, () => pick(touches)))]
              const shares = model === "time_decay" && chosen.length > 1
                ? chosen.map((_, k) => k === 0 ? "0.2" : (0.8 / (chosen.length - 1)).toFixed(10))
                : chosen.map(() => (1 / chosen.length).toFixed(10))
              for (const [k, touch] of chosen.entries()) yield* credit(id, model, touch, shares[k] ?? "0", k)
            }
          }
        })
        yield* wave
        yield* drain
        yield* wave
        // Mutations after a drain: a refund, a deletion, a re-credit, a touch that changes country.
        const [refunded, deleted, recredited] = [conversions[1]!, conversions[2]!, conversions[3]!]
        yield* sql`UPDATE conversions SET refunded_at = now(), refund_amount = COALESCE(value_amount, 0) / 2 WHERE id = ${refunded}`
        yield* sql`DELETE FROM conversions WHERE id = ${deleted}`
        yield* sql`DELETE FROM attribution_credits WHERE conversion_id = ${recredited} AND model = 'last_touch'`
        yield* credit(recredited, "last_touch", touches[touches.length - 1]!, "1")
        yield* sql`UPDATE touches SET country = 'PT' WHERE id = ${touches[0]!}`
        yield* drain

        const dims: Record<string, string> = {
          channel: "t.channel", campaign: "COALESCE(t.campaign_external_id, '')", ad_set: "COALESCE(t.ad_set_external_id, '')",
          ad: "COALESCE(t.ad_external_id, '')", referrer: "COALESCE(t.referrer_domain, '')", page: "COALESCE(t.path, '')",
          keyword: "COALESCE(t.payload -> 'utm' ->> 'utm_term', '')", country: "COALESCE(t.country, '')",
          device: "COALESCE(t.device, '')", browser: "COALESCE(t.browser, '')", os: "COALESCE(t.os, '')",
          utm_campaign: "COALESCE(t.payload -> 'utm' ->> 'utm_campaign', '')",
          utm_source: "COALESCE(t.payload -> 'utm' ->> 'utm_source', '')",
          utm_medium: "COALESCE(t.payload -> 'utm' ->> 'utm_medium', '')"
        }
        const filterChoices: Array<[string, string] | null> = [null, ["channel", "paid_social"], ["campaign", "c1"], ["ad", "a2"], ["ad_set", "s3"]]
        let checks = 0
        for (let round = 0; round < 12; round++) {
          const startDay = Math.floor(random() * 35) - 2
          const length = 1 + Math.floor(random() * 20)
          const start = new Date(base + startDay * 86_400_000).toISOString().slice(0, 10)
          const end = new Date(base + (startDay + length - 1) * 86_400_000).toISOString().slice(0, 10)
          const model = pick(models)
          const filter = pick(filterChoices)
          const conversionKey = pick([null, "sale", "lead"])
          const query: Record<string, string> = { start, end, model }
          if (filter !== null) query[filter[0]] = filter[1]
          if (conversionKey !== null) query["conversion_key"] = conversionKey

          // Direct: conversions of the range (local days), credited to a matching touch when filtered.
          const keyClause = conversionKey === null ? sql`` : sql`AND c.conversion_key = ${conversionKey}`
          const conv = sql`
            SELECT c.*, (c.occurred_at AT TIME ZONE pr.time_zone)::date AS day, c.refunded_at IS NULL AS counted,
                   CASE WHEN c.counts_as_cash THEN COALESCE(c.value_amount, 0) - COALESCE(c.refund_amount, 0) ELSE 0 END AS net
            FROM conversions c JOIN profiles pr ON pr.id = c.profile_id
            WHERE c.profile_id = ${p} AND (c.occurred_at AT TIME ZONE pr.time_zone)::date BETWEEN ${start}::date AND ${end}::date
              ${keyClause}`
          const [direct] = filter === null
            ? yield* sql<any>`
                WITH c AS (${conv}),
                s AS (SELECT conversion_id, sum(credit_share) AS share FROM attribution_credits
                      WHERE model = ${model} AND is_credited GROUP BY conversion_id),
                m AS (SELECT c.day, COALESCE(c.currency, '') AS cur, sum(c.net) AS money FROM c GROUP BY 1, 2)
                SELECT (SELECT count(*) FILTER (WHERE counted)::int FROM c) AS outcomes,
                       (SELECT count(*) FILTER (WHERE counted AND counts_as_cash)::int FROM c) AS cash_payments,
                       (SELECT count(*) FILTER (WHERE counted AND counts_as_cash AND is_first_payment)::int FROM c) AS first_payments,
                       (SELECT trim_scale(COALESCE(sum(s.share), 0))::text FROM c JOIN s ON s.conversion_id = c.id WHERE c.counted)
                         AS credited_conversions,
                       (SELECT trim_scale(COALESCE(sum(round(money, 6)), 0))::text FROM m) AS revenue`
            : yield* sql<any>`
                WITH c AS (${conv}),
                x AS (SELECT c.id, c.day, COALESCE(c.currency, '') AS cur, c.counted, c.counts_as_cash, c.is_first_payment, c.net,
                             a.credit_share
                      FROM c JOIN attribution_credits a ON a.conversion_id = c.id AND a.model = ${model} AND a.is_credited
                      JOIN touches t ON t.id = a.touch_id
                      WHERE ${sql.literal(dims[filter[0]]!)} = ${filter[1]}),
                m AS (SELECT day, cur, sum(credit_share * net) AS money FROM x GROUP BY 1, 2)
                SELECT count(DISTINCT id) FILTER (WHERE counted)::int AS outcomes,
                       count(DISTINCT id) FILTER (WHERE counted AND counts_as_cash)::int AS cash_payments,
                       count(DISTINCT id) FILTER (WHERE counted AND counts_as_cash AND is_first_payment)::int AS first_payments,
                       trim_scale(COALESCE(sum(credit_share) FILTER (WHERE counted), 0))::text AS credited_conversions,
                       (SELECT trim_scale(COALESCE(sum(round(money, 6)), 0))::text FROM m) AS revenue
                FROM x`
          const overview = yield* get(profile.key, "/api/v1/overview", query)
          assert.strictEqual(overview.status, 200, overview.text)
          const current = overview.json.data.current
          assert.deepStrictEqual(
            {
              outcomes: current.outcomes,
              cash_payments: current.cash_payments,
              first_payments: current.first_payments,
              credited_conversions: current.credited_conversions,
              revenue: current.revenue
            },
            direct,
            JSON.stringify(query)
          )

          const series = yield* get(profile.key, "/api/v1/timeseries", query)
          assert.strictEqual(series.json.data.reduce((sum: number, point: any) => sum + point.outcomes, 0), direct.outcomes)

          const dimension = pick(["channel", "referrer", "page", "keyword", "country", "device", "browser", "os", "utm_campaign", "utm_source", "utm_medium"])
          const within = filter === null ? sql`true` : sql`${sql.literal(dims[filter[0]]!)} = ${filter[1]}`
          const expected = yield* sql<any>`
            WITH c AS (${conv}),
            x AS (SELECT ${sql.literal(dims[dimension]!)} AS value, c.id, c.day, COALESCE(c.currency, '') AS cur, c.counted,
                         c.counts_as_cash, c.is_first_payment, c.net, a.credit_share
                  FROM c JOIN attribution_credits a ON a.conversion_id = c.id AND a.model = ${model} AND a.is_credited
                  JOIN touches t ON t.id = a.touch_id WHERE ${within}),
            m AS (SELECT value, day, cur, sum(credit_share * net) AS money FROM x GROUP BY 1, 2, 3),
            v AS (SELECT value, count(DISTINCT id) FILTER (WHERE counted)::int AS conversions,
                         count(DISTINCT id) FILTER (WHERE counted AND counts_as_cash)::int AS cash_payments,
                         trim_scale(COALESCE(sum(credit_share) FILTER (WHERE counted), 0))::text AS credited_conversions
                  FROM x GROUP BY value),
            r AS (SELECT value, trim_scale(sum(round(money, 6)))::text AS credited_revenue FROM m GROUP BY value),
            tt AS (SELECT ${sql.literal(dims[dimension]!)} AS value, count(*)::int AS touches
                   FROM touches t JOIN profiles pr ON pr.id = t.profile_id
                   WHERE t.profile_id = ${p} AND t.kind <> 'outcome' AND ${within}
                     AND (t.occurred_at AT TIME ZONE pr.time_zone)::date BETWEEN ${start}::date AND ${end}::date
                   GROUP BY 1)
            SELECT NULLIF(COALESCE(v.value, tt.value), '') AS value, COALESCE(tt.touches, 0) AS touches,
                   COALESCE(v.conversions, 0) AS conversions, COALESCE(v.cash_payments, 0) AS cash_payments,
                   COALESCE(v.credited_conversions, '0') AS credited_conversions, COALESCE(r.credited_revenue, '0') AS credited_revenue
            FROM v FULL JOIN tt ON tt.value = v.value LEFT JOIN r ON r.value = v.value
`
          const rows = yield* get(profile.key, `/api/v1/breakdowns/${dimension}`, { ...query, limit: "200" })
          assert.strictEqual(rows.status, 200, rows.text)
          const byValue = (a: any, b: any) => (a.value ?? "") < (b.value ?? "") ? -1 : (a.value ?? "") > (b.value ?? "") ? 1 : 0
          const answered = rows.json.data
            .map((row: any) => ({
              value: row.value, touches: row.touches, conversions: row.conversions, cash_payments: row.cash_payments,
              credited_conversions: row.credited_conversions, credited_revenue: row.credited_revenue
            }))
            .sort(byValue)
          assert.deepStrictEqual(answered, [...expected].sort(byValue), `${dimension} ${JSON.stringify(query)}`)
          checks++
        }
        assert.strictEqual(checks, 12)
        // A rebuild from the raw tables changes nothing.
        const snapshot = sql<{ n: string }>`
          SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) AS n FROM (
            SELECT model, day, conversion_key, currency, conversions, revenue::text, credited_conversions::text
            FROM analytics_conversion_days WHERE profile_id = ${p}
            UNION ALL
            SELECT model || dimension || value, day, conversion_key, currency, conversions,
                   credited_revenue::text, credited_conversions::text
            FROM analytics_credit_days WHERE profile_id = ${p}) x`
        const before = yield* snapshot
        const rebuilt = yield* Effect.flatMap(AnalyticsRollups, (rollups) => rollups.rebuild(p))
        assert.isAbove(rebuilt.days, 0)
        assert.deepStrictEqual(yield* snapshot, before)
      }))
  })
})
