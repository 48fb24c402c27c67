/**
 * Analytics insights (decision 0043) over real HTTP: models side by side, dimension values,
 * quality, the touch list, live visitors, people reached by ads, unknown ad ids and the UTM
 * scan with its bucket and cache. Facts are written by SQL, the attribution worker is off (the
 * fixtures write credit rows themselves) and the rollups are drained by hand before reads.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import {
  analyticsApp, type AnalyticsProfileOptions, connectBroker, credit, drain, get, insertConversion, insertTouch, seedAnalyticsProfile
} from "../support/analytics.ts"
import { call } from "../support/app.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const seedInsightsProfile = (options: AnalyticsProfileOptions = {}) => seedAnalyticsProfile(["analytics:read", "realtime:read"], options)

const post = (key: string, path: string) => call(path, { method: "POST", headers: { authorization: `Bearer ${key}` } })

const SECRETS = ["SECRETCLICK", "anon-1", "anon-3", "sess-1", "shop.example", "/landing"]

/**
 * The crafted world: New York profile in EUR, workspace reporting in USD; EUR→USD 1.1 from 03-02, 1.2 from 03-04.
 * Synced ad structure: campaign c1, ad set s1, ad a1 (a2 and c-unknown are not synced).
 * - T1 03-02 web (tracker) paid_social c1/s1/a1, ES, mobile, full UTM, fbclid, anon-1
 * - T2 03-03 web organic_search FR desktop, anon-2
 * - outcome touch 03-03 (never counted)
 * - T8 03-03 18:00Z web paid_social ad a1 only, anon-1 again
 * - T4 03-04 conversation ad referral (synthetic, partner_ad_referral, ctwa_referral) c1/s1/a2, customer X, ctwa_clid
 * - T5 03-05 web direct, anon-1
 * - T6 2026-04-01T02:00Z = 03-31 in New York: web paid_social c-unknown/a1, utm_source only, anon-3
 * - T7 04-02 declared source (partner_declared_source, organic_interaction) referral, ad a1, customer X
 * Conversions: C1 sale 100 EUR 03-03 (last_touch → T2; linear T1 ½ T2 ½; first_touch → T1);
 * C2 sale 50.5 USD 03-04T03:00Z = 03-03 NY (last_touch, linear → T1); C3 lead 03-04 (last_touch → T1);
 * C4 sale 30 EUR refunded 03-05 (last_touch → T1); C5 lead 03-06, no credit.
 */
const seedCrafted = Effect.gen(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedInsightsProfile({ timeZone: "America/New_York", currency: "EUR", reportingCurrency: "USD" })
  const p = profile.profileId
  const campaignId = crypto.randomUUID()
  const adSetId = crypto.randomUUID()
  yield* sql`INSERT INTO ad_campaigns (id, profile_id, platform_id, name) VALUES (${campaignId}, ${p}, 'c1', 'Spring')`
  yield* sql`INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name) VALUES (${adSetId}, ${p}, ${campaignId}, 's1', 'Set')`
  yield* sql`INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name) VALUES (${crypto.randomUUID()}, ${p}, ${adSetId}, 'a1', 'Ad')`
  const customer = crypto.randomUUID()
  yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${customer}, ${p}, 'cust-x')`
  const t1 = yield* insertTouch(p, {
    at: "2026-03-02T15:00:00Z", channel: "paid_social", source: "fb", medium: "cpc", campaign: "c1", campaignName: "Spring",
    adSet: "s1", adSetName: "Set", ad: "a1", adName: "Ad", country: "ES", device: "mobile", referrer: "facebook.com",
    page: "/landing", utm: { utm_source: "fb", utm_medium: "cpc", utm_campaign: "spring", utm_term: "shoes" },
    clickIdKind: "fbclid", clickId: "SECRETCLICK", anonymousId: "anon-1", sessionId: "sess-1",
    url: "https://shop.example/landing?fbclid=SECRETCLICK", joinMethod: "anonymous_id"
  })
  const t2 = yield* insertTouch(p, {
    at: "2026-03-03T15:00:00Z", channel: "organic_search", country: "FR", device: "desktop", referrer: "google.com", page: "/",
    anonymousId: "anon-2"
  })
  yield* insertTouch(p, { at: "2026-03-03T16:00:00Z", channel: "direct", kind: "outcome", ad: "a9", anonymousId: "anon-9" })
  yield* insertTouch(p, { at: "2026-03-03T18:00:00Z", channel: "paid_social", ad: "a1", anonymousId: "anon-1" })
  yield* insertTouch(p, {
    at: "2026-03-04T10:00:00Z", channel: "paid_social", kind: "synthetic", sourceSystem: "partner_ad_referral",
    joinMethod: "ctwa_referral", campaign: "c1", adSet: "s1", ad: "a2", customerId: customer, clickIdKind: "ctwa_clid",
    clickId: "SECRETCLICK", source: "adplatform", medium: "messaging"
  })
  yield* insertTouch(p, { at: "2026-03-05T10:00:00Z", channel: "direct", anonymousId: "anon-1" })
  yield* insertTouch(p, {
    at: "2026-04-01T02:00:00Z", channel: "paid_social", campaign: "c-unknown", ad: "a1", utm: { utm_source: "fb" },
    anonymousId: "anon-3"
  })
  yield* insertTouch(p, {
    at: "2026-04-02T12:00:00Z", channel: "referral", kind: "organic_interaction", sourceSystem: "partner_declared_source",
    ad: "a1", customerId: customer
  })
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
  yield* credit(c1, "first_touch", t1, "1")
  yield* credit(c2, "last_touch", t1, "1")
  yield* credit(c2, "linear", t1, "1")
  yield* credit(c3, "last_touch", t1, "1")
  yield* credit(c4, "last_touch", t1, "1")
  const imports = yield* AnalyticsImports
  yield* imports.upsertFxRates([
    { day: "2026-03-02", base: "EUR", quote: "USD", rate: "1.1" },
    { day: "2026-03-04", base: "EUR", quote: "USD", rate: "1.2" }
  ])
  yield* drain
  return { ...profile, t1 }
})

const RANGE = { start: "2026-03-01", end: "2026-04-10" }

const zeroModel = (model: string) => ({
  model,
  conversion_count: 0,
  credited_conversions: "0",
  credited_revenue: "0",
  reporting_credited_revenue: "0"
})

layer(analyticsApp, { timeout: "300 seconds", excludeTestServices: true })("analytics insights", (it) => {
  it.effect("GET /api/v1/attribution/models: all six models side by side, exact counts and money, with and without a filter", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const response = yield* get(profile.key, "/api/v1/attribution/models", RANGE)
      assert.strictEqual(response.status, 200, response.text)
      assert.deepStrictEqual(response.json.data, [
        { model: "last_touch", conversion_count: 3, credited_conversions: "3", credited_revenue: "145.909091", reporting_credited_revenue: "160.5" },
        { model: "first_touch", conversion_count: 1, credited_conversions: "1", credited_revenue: "100", reporting_credited_revenue: "110" },
        zeroModel("last_non_direct"),
        { model: "linear", conversion_count: 2, credited_conversions: "2", credited_revenue: "145.909091", reporting_credited_revenue: "160.5" },
        zeroModel("time_decay"),
        zeroModel("svc_model")
      ])
      assert.isString(response.json.meta.as_of)
      assert.deepStrictEqual(response.json.meta, {
        time_zone: "America/New_York",
        range: { start: "2026-03-01", end: "2026-04-10", days: 41 },
        as_of: response.json.meta.as_of,
        filters: { channel: null, campaign: null, ad_set: null, ad: null, conversion_key: null },
        currency: "EUR",
        reporting_currency: "USD",
        business_conversions: 4,
        unavailable_reason: null,
        reporting_unavailable_reason: null
      })
      // Touches of campaign c1: T1 and T4. last_touch: C2, C3 (C4 is refunded); linear: C1 half, C2 whole.
      const filtered = yield* get(profile.key, "/api/v1/attribution/models", { ...RANGE, campaign: "c1" })
      assert.strictEqual(filtered.status, 200, filtered.text)
      assert.deepStrictEqual(filtered.json.data, [
        { model: "last_touch", conversion_count: 2, credited_conversions: "2", credited_revenue: "45.909091", reporting_credited_revenue: "50.5" },
        { model: "first_touch", conversion_count: 1, credited_conversions: "1", credited_revenue: "100", reporting_credited_revenue: "110" },
        zeroModel("last_non_direct"),
        { model: "linear", conversion_count: 2, credited_conversions: "1.5", credited_revenue: "95.909091", reporting_credited_revenue: "105.5" },
        zeroModel("time_decay"),
        zeroModel("svc_model")
      ])
      const leads = yield* get(profile.key, "/api/v1/attribution/models", { ...RANGE, conversion_key: "lead" })
      assert.deepStrictEqual(leads.json.data[0], {
        model: "last_touch", conversion_count: 1, credited_conversions: "1", credited_revenue: "0", reporting_credited_revenue: "0"
      })
      assert.strictEqual(leads.json.meta.business_conversions, 2)
    }))

  it.effect("GET /api/v1/dimensions/{dimension}: values with touch counts from the rollups, sorted, limit, filters", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const channels = yield* get(profile.key, "/api/v1/dimensions/channel", RANGE)
      assert.strictEqual(channels.status, 200, channels.text)
      assert.deepStrictEqual(channels.json.data, [
        { value: "paid_social", touches: 4 },
        { value: "direct", touches: 1 },
        { value: "organic_search", touches: 1 },
        { value: "referral", touches: 1 }
      ])
      assert.deepInclude(channels.json.meta, { dimension: "channel", rows_total: 4 })
      const limited = yield* get(profile.key, "/api/v1/dimensions/channel", { ...RANGE, limit: "2" })
      assert.deepStrictEqual([limited.json.data.length, limited.json.meta.rows_total], [2, 4])
      const countries = yield* get(profile.key, "/api/v1/dimensions/country", RANGE)
      assert.deepStrictEqual(countries.json.data, [{ value: null, touches: 5 }, { value: "ES", touches: 1 }, { value: "FR", touches: 1 }])
      const paidCountries = yield* get(profile.key, "/api/v1/dimensions/country", { ...RANGE, channel: "paid_social" })
      assert.deepStrictEqual(paidCountries.json.data, [{ value: null, touches: 3 }, { value: "ES", touches: 1 }])
      const oneChannel = yield* get(profile.key, "/api/v1/dimensions/channel", { ...RANGE, channel: "direct" })
      assert.deepStrictEqual(oneChannel.json.data, [{ value: "direct", touches: 1 }])
      // 03-31 in New York holds T6 (2026-04-01T02:00Z).
      const lastDay = yield* get(profile.key, "/api/v1/dimensions/keyword", { start: "2026-03-02", end: "2026-03-02" })
      assert.deepStrictEqual(lastDay.json.data, [{ value: "shoes", touches: 1 }])
      const march31 = yield* get(profile.key, "/api/v1/dimensions/channel", { start: "2026-03-31", end: "2026-03-31" })
      assert.deepStrictEqual(march31.json.data, [{ value: "paid_social", touches: 1 }])
    }))

  it.effect("GET /api/v1/quality: every figure exact on the crafted world", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const response = yield* get(profile.key, "/api/v1/quality", RANGE)
      assert.strictEqual(response.status, 200, response.text)
      assert.deepStrictEqual(response.json.data, {
        touches: 7,
        with_utm: { count: 2, share: "0.2857" },
        with_click_id: { count: 2, share: "0.2857" },
        direct: { count: 1, share: "0.1429" },
        classified: { count: 6, share: "0.8571" },
        with_campaign_id: { count: 3, share: "0.4286" },
        with_ad_id: { count: 5, share: "0.7143" },
        unknown_country: { count: 5, share: "0.7143" },
        unknown_device: { count: 5, share: "0.7143" }
      })
      const paid = yield* get(profile.key, "/api/v1/quality", { ...RANGE, channel: "paid_social" })
      assert.deepStrictEqual(paid.json.data, {
        touches: 4,
        with_utm: { count: 2, share: "0.5" },
        with_click_id: { count: 2, share: "0.5" },
        direct: { count: 0, share: "0" },
        classified: { count: 4, share: "1" },
        with_campaign_id: { count: 3, share: "0.75" },
        with_ad_id: { count: 4, share: "1" },
        unknown_country: { count: 3, share: "0.75" },
        unknown_device: { count: 3, share: "0.75" }
      })
      const none = yield* get(profile.key, "/api/v1/quality", { start: "2026-01-01", end: "2026-01-31" })
      assert.deepStrictEqual(none.json.data.touches, 0)
      assert.deepStrictEqual(none.json.data.with_utm, { count: 0, share: null })
    }))

  it.effect("GET /api/v1/touches: newest first, keyset pages, filters, projected fields only", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const first = yield* get(profile.key, "/api/v1/touches", { ...RANGE, limit: "4" })
      assert.strictEqual(first.status, 200, first.text)
      assert.deepStrictEqual(first.json.data.map((row: any) => row.at), [
        "2026-04-02T12:00:00.000Z", "2026-04-01T02:00:00.000Z", "2026-03-05T10:00:00.000Z", "2026-03-04T10:00:00.000Z"
      ])
      assert.strictEqual(first.json.pagination.has_next, true)
      const second = yield* get(profile.key, "/api/v1/touches", { ...RANGE, limit: "4", cursor: first.json.pagination.cursor })
      assert.deepStrictEqual(second.json.data.map((row: any) => row.at), [
        "2026-03-03T18:00:00.000Z", "2026-03-03T15:00:00.000Z", "2026-03-02T15:00:00.000Z"
      ])
      assert.deepStrictEqual(second.json.pagination, { has_next: false, cursor: null })
      assert.deepStrictEqual(second.json.data[2], {
        touch_id: profile.t1,
        kind: "web_touch",
        at: "2026-03-02T15:00:00.000Z",
        channel: "paid_social",
        source: "fb",
        medium: "cpc",
        campaign: { external_id: "c1", name: "Spring" },
        ad_set: { external_id: "s1", name: "Set" },
        ad: { external_id: "a1", name: "Ad" },
        click_id_kind: "fbclid",
        join_method: "anonymous_id"
      })
      for (const secret of SECRETS) {
        assert.notInclude(first.text + second.text, secret)
      }
      const c1 = yield* get(profile.key, "/api/v1/touches", { ...RANGE, campaign: "c1" })
      assert.deepStrictEqual(c1.json.data.map((row: any) => [row.at, row.kind, row.join_method]), [
        ["2026-03-04T10:00:00.000Z", "synthetic", "ctwa_referral"],
        ["2026-03-02T15:00:00.000Z", "web_touch", "anonymous_id"]
      ])
      // 2026-04-01T02:00Z is still 03-31 in New York.
      const april = yield* get(profile.key, "/api/v1/touches", { start: "2026-04-01", end: "2026-04-10" })
      assert.deepStrictEqual(april.json.data.map((row: any) => row.at), ["2026-04-02T12:00:00.000Z"])
      const all = yield* get(profile.key, "/api/v1/touches", RANGE)
      assert.strictEqual(all.json.data.length, 7)
    }))

  it.effect("GET /api/v1/attribution/ad-people: distinct people per month, day and ad, split by origin; counts only", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const none = { partner_import: 0, conversation_ad_referral: 0, website_visit: 0, other: 0 }
      const months = yield* get(profile.key, "/api/v1/attribution/ad-people", RANGE)
      assert.strictEqual(months.status, 200, months.text)
      assert.deepStrictEqual(months.json.data, [
        { period: "2026-03", ad_external_id: null, people: 3, by_origin: { ...none, website_visit: 2, conversation_ad_referral: 1 }, reported_messaging_conversations: null },
        { period: "2026-04", ad_external_id: null, people: 1, by_origin: { ...none, partner_import: 1 }, reported_messaging_conversations: null }
      ])
      assert.strictEqual(months.json.meta.group_by, "month")
      const days = yield* get(profile.key, "/api/v1/attribution/ad-people", { ...RANGE, group_by: "day" })
      assert.deepStrictEqual(days.json.data.map((row: any) => [row.period, row.people, row.by_origin]), [
        ["2026-03-02", 1, { ...none, website_visit: 1 }],
        ["2026-03-03", 1, { ...none, website_visit: 1 }],
        ["2026-03-04", 1, { ...none, conversation_ad_referral: 1 }],
        ["2026-03-31", 1, { ...none, website_visit: 1 }],
        ["2026-04-02", 1, { ...none, partner_import: 1 }]
      ])
      const ads = yield* get(profile.key, "/api/v1/attribution/ad-people", { ...RANGE, group_by: "ad" })
      assert.deepStrictEqual(ads.json.data.map((row: any) => [row.period, row.ad_external_id, row.people, row.by_origin]), [
        [null, "a1", 3, { ...none, website_visit: 2, partner_import: 1 }],
        [null, "a2", 1, { ...none, conversation_ad_referral: 1 }]
      ])
      for (const secret of [...SECRETS, "cust-x"]) assert.notInclude(months.text + days.text + ads.text, secret)
      const c1 = yield* get(profile.key, "/api/v1/attribution/ad-people", { ...RANGE, campaign: "c1", group_by: "ad" })
      assert.deepStrictEqual(c1.json.data.map((row: any) => [row.ad_external_id, row.people]), [["a1", 1], ["a2", 1]])
    }))

  it.effect("GET /api/v1/quality/ad-ids: ids the synced ad structure does not know, counts per id", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      const response = yield* get(profile.key, "/api/v1/quality/ad-ids", RANGE)
      assert.strictEqual(response.status, 200, response.text)
      assert.deepStrictEqual(response.json.data, [
        { level: "ad", external_id: "a2", touches: 1, first_seen_at: "2026-03-04T10:00:00.000Z", last_seen_at: "2026-03-04T10:00:00.000Z" },
        {
          level: "campaign",
          external_id: "c-unknown",
          touches: 1,
          first_seen_at: "2026-04-01T02:00:00.000Z",
          last_seen_at: "2026-04-01T02:00:00.000Z"
        }
      ])
      assert.strictEqual(response.json.meta.rows_total, 2)
      const limited = yield* get(profile.key, "/api/v1/quality/ad-ids", { ...RANGE, limit: "1" })
      assert.deepStrictEqual([limited.json.data.length, limited.json.meta.rows_total], [1, 2])
    }))

  it.effect("GET /api/v1/realtime/visitors: distinct anonymous ids in the last 5 minutes and per minute over 30; realtime:read", () =>
    Effect.gen(function*() {
      const profile = yield* seedInsightsProfile()
      const p = profile.profileId
      yield* insertTouch(p, { at: "-1 minute", channel: "direct", anonymousId: "r1" })
      yield* insertTouch(p, { at: "-2 minutes", channel: "direct", anonymousId: "r1" })
      yield* insertTouch(p, { at: "-2 minutes", channel: "direct", anonymousId: "r2" })
      yield* insertTouch(p, { at: "-10 minutes", channel: "direct", anonymousId: "r3" })
      yield* insertTouch(p, { at: "-40 minutes", channel: "direct", anonymousId: "r4" })
      yield* insertTouch(p, { at: "-1 minute", channel: "direct" })
      yield* insertTouch(p, { at: "-1 minute", channel: "direct", anonymousId: "r5", kind: "outcome" })
      const response = yield* get(profile.key, "/api/v1/realtime/visitors")
      assert.strictEqual(response.status, 200, response.text)
      assert.strictEqual(response.json.data.visitors, 2)
      const minutes = response.json.data.per_minute
      assert.strictEqual(minutes.length, 30)
      assert.strictEqual(minutes.reduce((sum: number, row: any) => sum + row.visitors, 0), 4)
      assert.strictEqual(Date.parse(minutes[29].minute) <= Date.parse(response.json.data.as_of), true)
      assert.strictEqual(Date.parse(minutes[29].minute) - Date.parse(minutes[0].minute), 29 * 60_000)
      assert.notInclude(response.text, "r1")
      const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
      const refused = yield* get(key, "/api/v1/realtime/visitors")
      assert.strictEqual(refused.status, 403)
      assert.include(refused.json.error.message, "realtime:read")
    }))

  it.effect("POST /api/v1/quality/utm/refresh: scans, caches 10 minutes, 6 scans per hour per key", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const profile = yield* seedInsightsProfile()
      const p = profile.profileId
      yield* insertTouch(p, { at: "-1 day", channel: "paid_social", utm: { utm_source: "a", utm_medium: "b", utm_campaign: "c" }, clickIdKind: "gclid" })
      yield* insertTouch(p, { at: "-2 days", channel: "paid_social", utm: { utm_source: "a" } })
      yield* insertTouch(p, { at: "-3 days", channel: "paid_search", clickIdKind: "gclid" })
      yield* insertTouch(p, { at: "-4 days", channel: "direct" })
      yield* insertTouch(p, { at: "-1 day", channel: "paid_social", kind: "synthetic", sourceSystem: "partner_ad_referral" })
      yield* insertTouch(p, { at: "-40 days", channel: "direct" })
      const first = yield* post(profile.key, "/api/v1/quality/utm/refresh")
      assert.strictEqual(first.status, 200, first.text)
      assert.strictEqual(first.json.data.refreshed, true)
      assert.deepStrictEqual(first.json.data.summary, {
        window_days: 30,
        web_touches: 4,
        with_utm: 2,
        complete: 1,
        missing_source: 0,
        missing_medium: 1,
        missing_campaign: 1,
        click_id_without_utm: 1
      })
      yield* insertTouch(p, { at: "-1 hour", channel: "paid_social", utm: { utm_source: "a", utm_medium: "b", utm_campaign: "c" } })
      const cached = yield* post(profile.key, "/api/v1/quality/utm/refresh")
      assert.deepStrictEqual(cached.json.data, { ...first.json.data, refreshed: false })
      const age = sql`UPDATE analytics_utm_scans SET scanned_at = now() - interval '11 minutes' WHERE profile_id = ${p}`
      yield* age
      const again = yield* post(profile.key, "/api/v1/quality/utm/refresh")
      assert.deepStrictEqual([again.json.data.refreshed, again.json.data.summary.web_touches, again.json.data.summary.complete], [true, 5, 2])
      for (let scan = 3; scan <= 6; scan++) {
        yield* age
        const response = yield* post(profile.key, "/api/v1/quality/utm/refresh")
        assert.strictEqual(response.json.data.refreshed, true, `scan ${scan}`)
      }
      yield* age
      const refused = yield* post(profile.key, "/api/v1/quality/utm/refresh")
      assert.strictEqual(refused.status, 429, refused.text)
      assert.strictEqual(refused.json.error.code, "rate_limit_exceeded")
      assert.isAbove(Number(refused.headers.get("retry-after")), 0)
      // The stored summary is free even with the bucket empty; another key has its own bucket.
      const { key: other } = yield* seedApiKey(profile, { scopes: ["analytics:read"], rateLimitPerMinute: 10_000 })
      const otherScan = yield* post(other, "/api/v1/quality/utm/refresh")
      assert.strictEqual(otherScan.json.data.refreshed, true)
      const fresh = yield* post(profile.key, "/api/v1/quality/utm/refresh")
      assert.deepStrictEqual([fresh.status, fresh.json.data.refreshed], [200, false])
    }))

  it.effect("parameters: invalid_date_range and invalid_parameter naming the parameter, like the other reads", () =>
    Effect.gen(function*() {
      const profile = yield* seedInsightsProfile()
      const cases: Array<[string, Record<string, string>, string, string]> = [
        ["/api/v1/attribution/models", { days: "367" }, "invalid_date_range", "days"],
        ["/api/v1/attribution/models", { start: "2025-01-01", end: "2026-01-02" }, "invalid_date_range", "367"],
        ["/api/v1/quality", { start: "2026-02-30", end: "2026-03-02" }, "invalid_date_range", "start"],
        ["/api/v1/touches", { start: "2026-03-05", end: "2026-03-01" }, "invalid_date_range", "after"],
        ["/api/v1/attribution/ad-people", { end: "2026-03-01" }, "invalid_date_range", "start"],
        ["/api/v1/quality/ad-ids", { days: "abc" }, "invalid_parameter", "days"],
        ["/api/v1/dimensions/city", {}, "invalid_parameter", "dimension"],
        ["/api/v1/dimensions/country", { limit: "0" }, "invalid_parameter", "limit"],
        ["/api/v1/touches", { limit: "201" }, "invalid_parameter", "limit"],
        ["/api/v1/touches", { limit: "ten" }, "invalid_parameter", "limit"],
        ["/api/v1/touches", { cursor: "garbage" }, "invalid_parameter", "cursor"],
        ["/api/v1/touches", { channel: "email", campaign: "c1" }, "invalid_parameter", "campaign"],
        ["/api/v1/attribution/models", { conversion_key: "" }, "invalid_parameter", "conversion_key"],
        ["/api/v1/attribution/ad-people", { group_by: "week" }, "invalid_parameter", "group_by"],
        ["/api/v1/quality/ad-ids", { limit: "500" }, "invalid_parameter", "limit"]
      ]
      for (const [path, query, code, named] of cases) {
        const response = yield* get(profile.key, path, query)
        assert.strictEqual(response.status, 400, `${path} ${JSON.stringify(query)}: ${response.text}`)
        assert.strictEqual(response.json.error.code, code, `${path} ${JSON.stringify(query)}`)
        assert.include(response.json.error.message, named, `${path} ${JSON.stringify(query)}`)
      }
      const exactly = yield* get(profile.key, "/api/v1/touches", { start: "2025-01-01", end: "2026-01-01", limit: "200" })
      assert.strictEqual(exactly.status, 200, exactly.text)
    }))

  it.effect("analytics:read is required: 403 insufficient_scope naming it", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["conversions:read", "realtime:read"] })
      const paths = [
        "/api/v1/attribution/models",
        "/api/v1/attribution/ad-people",
        "/api/v1/dimensions/channel",
        "/api/v1/quality",
        "/api/v1/quality/ad-ids",
        "/api/v1/touches"
      ]
      for (const path of paths) {
        const response = yield* get(key, path)
        assert.strictEqual(response.status, 403, path)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
        assert.include(response.json.error.message, "analytics:read")
      }
      const refresh = yield* post(key, "/api/v1/quality/utm/refresh")
      assert.strictEqual(refresh.status, 403)
      const live = yield* get(key, "/api/v1/realtime/visitors")
      assert.strictEqual(live.status, 200, live.text)
    }))

  it.effect("connect-broker tier: every read answers empty with 200, never a 403; parameters are still checked", () =>
    Effect.gen(function*() {
      const profile = yield* seedCrafted
      yield* insertTouch(profile.profileId, { at: "-1 minute", channel: "direct", anonymousId: "live-1" })
      yield* drain
      const key = yield* connectBroker(profile, ["analytics:read", "realtime:read"])
      const models = yield* get(key, "/api/v1/attribution/models", RANGE)
      assert.strictEqual(models.status, 200, models.text)
      assert.deepStrictEqual(models.json.data, [
        "last_touch", "first_touch", "last_non_direct", "linear", "time_decay", "svc_model"
      ].map(zeroModel))
      assert.strictEqual(models.json.meta.business_conversions, 0)
      for (const path of ["/api/v1/dimensions/channel", "/api/v1/touches", "/api/v1/attribution/ad-people", "/api/v1/quality/ad-ids"]) {
        const response = yield* get(key, path, RANGE)
        assert.deepStrictEqual([response.status, response.json.data], [200, []], path)
      }
      const quality = yield* get(key, "/api/v1/quality", RANGE)
      assert.deepStrictEqual([quality.status, quality.json.data.touches, quality.json.data.with_utm], [200, 0, { count: 0, share: null }])
      const live = yield* get(key, "/api/v1/realtime/visitors")
      assert.deepStrictEqual([live.status, live.json.data.visitors, live.json.data.per_minute.length], [200, 0, 30])
      assert.strictEqual(live.json.data.per_minute.every((row: any) => row.visitors === 0), true)
      const scan = yield* post(key, "/api/v1/quality/utm/refresh")
      assert.deepStrictEqual([scan.status, scan.json.data.refreshed, scan.json.data.scanned_at, scan.json.data.summary.web_touches], [
        200, false, null, 0
      ])
      const bad = yield* get(key, "/api/v1/touches", { days: "400" })
      assert.strictEqual(bad.json.error.code, "invalid_date_range")
      const badLimit = yield* get(key, "/api/v1/dimensions/country", { limit: "0" })
      assert.strictEqual(badLimit.json.error.code, "invalid_parameter")
    }))
})
