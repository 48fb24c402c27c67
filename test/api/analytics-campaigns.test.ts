/**
 * Campaign, ad set and ad reads (decision 0042) over real HTTP, served from the campaign
 * rollups. Facts are written by SQL, the attribution worker is off (the fixtures write credit
 * rows), and the rollups are drained by hand before each read.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import { AnalyticsRollups } from "../../src/analytics/rollups/repo.ts"
import {
  analyticsApp, type AnalyticsProfileOptions, connectBroker, credit, drain, get, insertConversion, insertTouch, seedAnalyticsProfile
} from "../support/analytics.ts"
import { withoutRequestId } from "../support/app.ts"
import { seedApiKey } from "../support/tenancy.ts"

const seedCampaignProfile = (options: AnalyticsProfileOptions = {}) => seedAnalyticsProfile(["analytics:read", "campaigns:read"], options)

/** A synced campaign → ad set → ad chain; returns our ids. */
const seedStructure = Effect.fn("test.seedStructure")(function*(profileId: string, ids: {
  readonly campaign: string
  readonly adSet?: string
  readonly ad?: string
  readonly objective?: string | null
  readonly learning?: string | null
}) {
  const sql = yield* SqlClient
  const campaignId = crypto.randomUUID()
  yield* sql`
    INSERT INTO ad_campaigns (id, profile_id, platform_id, name, objective)
    VALUES (${campaignId}, ${profileId}, ${ids.campaign}, ${`Campaign ${ids.campaign}`}, ${ids.objective ?? null})`
  const adSetId = crypto.randomUUID()
  if (ids.adSet !== undefined) {
    yield* sql`
      INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name, learning_stage_status)
      VALUES (${adSetId}, ${profileId}, ${campaignId}, ${ids.adSet}, ${`Ad set ${ids.adSet}`}, ${ids.learning ?? null})`
  }
  const adId = crypto.randomUUID()
  if (ids.ad !== undefined) {
    yield* sql`
      INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name) VALUES (${adId}, ${profileId}, ${adSetId}, ${ids.ad}, ${`Ad ${ids.ad}`})`
  }
  return { campaignId, adSetId, adId }
})

/**
 * The crafted world: UTC profile in SEK, workspace reporting in NOK (SEK→NOK 1.1 every day).
 * Synced: campaign c1 (objective OUTCOME_SALES) → ad set s1 (LEARNING) → ad a1; campaign c2, no data.
 * - T1 paid_social c1/s1/a1; T2 organic_search; T3 paid_search c9/s9/a9 (not synced)
 * - C1 sale 100 SEK first, 03-03: last_touch → T1; linear → T1 ½, T2 ½
 * - C2 sale 50 SEK repeat, 03-04: last_touch and linear → T1
 * - C3 lead 03-04: last_touch and linear → T3
 * - C4 sale 30 SEK refunded in full, 03-05: last_touch → T1 (excluded from counts)
 * - C5 lead 03-06: no credit; C6 lead 03-06: last_touch → T2
 * Spend of ad a1 (campaign c1, set s1): 20 SEK on 03-03.
 */
const seedCrafted = Effect.gen(function*() {
  const profile = yield* seedCampaignProfile({ currency: "SEK", reportingCurrency: "NOK" })
  const p = profile.profileId
  const c1 = yield* seedStructure(p, { campaign: "c1", adSet: "s1", ad: "a1", objective: "OUTCOME_SALES", learning: "LEARNING" })
  yield* seedStructure(p, { campaign: "c2" })
  const t1 = yield* insertTouch(p, { at: "2026-03-02T10:00:00Z", channel: "paid_social", campaign: "c1", adSet: "s1", ad: "a1" })
  const t2 = yield* insertTouch(p, { at: "2026-03-02T11:00:00Z", channel: "organic_search" })
  const t3 = yield* insertTouch(p, { at: "2026-03-02T12:00:00Z", channel: "paid_search", campaign: "c9", adSet: "s9", ad: "a9" })
  const conv1 = yield* insertConversion(p, { at: "2026-03-03T10:00:00Z", key: "sale", value: "100", currency: "SEK", cash: true, first: true })
  const conv2 = yield* insertConversion(p, { at: "2026-03-04T10:00:00Z", key: "sale", value: "50", currency: "SEK", cash: true, first: false })
  const conv3 = yield* insertConversion(p, { at: "2026-03-04T11:00:00Z", key: "lead" })
  const conv4 = yield* insertConversion(p, {
    at: "2026-03-05T10:00:00Z", key: "sale", value: "30", currency: "SEK", cash: true, first: true, refund: "30"
  })
  yield* insertConversion(p, { at: "2026-03-06T10:00:00Z", key: "lead" })
  const conv6 = yield* insertConversion(p, { at: "2026-03-06T11:00:00Z", key: "lead" })
  yield* credit(conv1.id, "last_touch", t1, "1")
  yield* credit(conv1.id, "linear", t1, "0.5", 0)
  yield* credit(conv1.id, "linear", t2, "0.5", 1)
  yield* credit(conv2.id, "last_touch", t1, "1")
  yield* credit(conv2.id, "linear", t1, "1")
  yield* credit(conv3.id, "last_touch", t3, "1")
  yield* credit(conv3.id, "linear", t3, "1")
  yield* credit(conv4.id, "last_touch", t1, "1")
  yield* credit(conv6.id, "last_touch", t2, "1")
  const imports = yield* AnalyticsImports
  yield* imports.upsertSpend([
    { profileId: p, platform: "adplatform", day: "2026-03-03", campaignId: "c1", adSetId: "s1", adId: "a1", currency: "SEK", amount: "20" }
  ])
  // fx_rates is global: a direct rate on every day of the range keeps other tests' rates out of this world.
  yield* imports.upsertFxRates(Array.from({ length: 10 }, (_, i) => ({
    day: `2026-03-${String(i + 1).padStart(2, "0")}`, base: "SEK", quote: "NOK", rate: "1.1"
  })))
  yield* drain
  return { ...profile, c1, conv1, conv2 }
})

const RANGE = { start: "2026-03-01", end: "2026-03-10" }
const ZERO_REPORTING = { currency: "NOK", outcome_value: "0", credited_revenue: "0", spend: null, roas: null, cac: null, cac_first_payment: null }

layer(analyticsApp, { timeout: "300 seconds", excludeTestServices: true })("campaign reads", (it) => {
  describe("GET /api/v1/campaigns", () => {
    it.effect("campaign rows of the crafted world: every field, spend and CAC, unsynced ids, zero rows of synced campaigns", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const response = yield* get(world.key, "/api/v1/campaigns", RANGE)
        assert.strictEqual(response.status, 200, response.text)
        const common = {
          level: "campaign", adplatform_reported_conversions: null, adplatform_reported_chats: null,
          learning_stage_status: null, campaign_objective: null
        }
        assert.deepStrictEqual(response.json.data, [
          {
            ...common, platform_id: "c1", id: world.c1.campaignId, name: "Campaign c1", status: "active", in_synced_structure: true,
            outcome_count: 2, outcome_count_first_payment: 1, attributed_outcome_count: 2, attributed_outcomes_by_type: { sale: 2 },
            credited_conversions: "2", outcome_value: "150", credited_revenue: "150", spend: "20", roas: "7.5", cac: "10",
            cac_first_payment: "20",
            reporting: { currency: "NOK", outcome_value: "165", credited_revenue: "165", spend: "22", roas: "7.5", cac: "11", cac_first_payment: "22" }
          },
          {
            ...common, platform_id: "c9", id: null, name: null, status: null, in_synced_structure: false,
            outcome_count: 0, outcome_count_first_payment: 0, attributed_outcome_count: 1, attributed_outcomes_by_type: { lead: 1 },
            credited_conversions: "1", outcome_value: "0", credited_revenue: "0", spend: null, roas: null, cac: null,
            cac_first_payment: null, reporting: ZERO_REPORTING
          },
          {
            ...common, platform_id: "c2", id: response.json.data[2]?.id, name: "Campaign c2", status: "active", in_synced_structure: true,
            outcome_count: 0, outcome_count_first_payment: 0, attributed_outcome_count: 0, attributed_outcomes_by_type: {},
            credited_conversions: "0", outcome_value: "0", credited_revenue: "0", spend: null, roas: null, cac: null,
            cac_first_payment: null, reporting: ZERO_REPORTING
          }
        ])
        assert.isString(response.json.data[2]?.id)
        assert.deepInclude(response.json.meta, {
          model: "last_touch", level: "campaign", currency: "SEK", reporting_currency: "NOK", adplatform_reported_status: "not_synced",
          unavailable_reason: null, reporting_unavailable_reason: null, range: { start: "2026-03-01", end: "2026-03-10", days: 10 }
        })
      }))

    it.effect("rows plus /campaigns/unattributed add up to the overview, at every level and under single- and multi-touch models", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const unattributed = yield* get(world.key, "/api/v1/campaigns/unattributed", RANGE)
        assert.strictEqual(unattributed.status, 200, unattributed.text)
        assert.deepStrictEqual(unattributed.json.data, {
          outcome_count: 0, outcome_count_first_payment: 0, attributed_outcome_count: 2, attributed_outcomes_by_type: { lead: 2 },
          credited_conversions: "2", outcome_value: "0", credited_revenue: "0",
          reporting: { currency: "NOK", outcome_value: "0", credited_revenue: "0" }
        })
        const linearRemainder = (yield* get(world.key, "/api/v1/campaigns/unattributed", { ...RANGE, model: "linear" })).json.data
        assert.deepInclude(linearRemainder, { attributed_outcome_count: 2, credited_conversions: "2.5", credited_revenue: "50" })
        for (const model of ["last_touch", "linear"]) {
          for (const level of ["campaign", "ad_set", "ad"]) {
            const overview = (yield* get(world.key, "/api/v1/overview", { ...RANGE, model })).json.data.current
            const rows = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, model, level })).json.data
            const rest = (yield* get(world.key, "/api/v1/campaigns/unattributed", { ...RANGE, model, level })).json.data
            const sum = (pick: (row: any) => number) => rows.reduce((total: number, row: any) => total + pick(row), 0) + pick(rest)
            assert.strictEqual(sum((row) => Number(row.credited_conversions)), overview.outcomes, `${model} ${level}`)
            assert.strictEqual(sum((row) => Number(row.credited_revenue)), Number(overview.revenue), `${model} ${level}`)
            if (model === "last_touch") assert.strictEqual(sum((row) => row.attributed_outcome_count), overview.outcomes)
          }
        }
        const linear = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, model: "linear" })).json.data
        // Under linear, C1 counts in c1 whole (a credited conversion) with half its revenue and share.
        assert.deepInclude(linear[0], {
          platform_id: "c1", attributed_outcome_count: 2, credited_conversions: "1.5", outcome_value: "150", credited_revenue: "100",
          roas: "5", cac: "10"
        })
      }))

    it.effect("level=ad_set adds learning_stage_status and campaign_objective from the synced copy; level=ad and filters", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const sets = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, level: "ad_set" })).json.data
        assert.deepInclude(sets[0], {
          level: "ad_set", platform_id: "s1", id: world.c1.adSetId, learning_stage_status: "LEARNING",
          campaign_objective: "OUTCOME_SALES", attributed_outcome_count: 2, spend: "20"
        })
        assert.deepInclude(sets[1], { platform_id: "s9", learning_stage_status: null, campaign_objective: null, in_synced_structure: false })
        const ads = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, level: "ad", campaign: "c1" })).json
        assert.deepStrictEqual(ads.data.map((row: any) => [row.platform_id, row.attributed_outcome_count, row.spend]), [["a1", 2, "20"]])
        assert.strictEqual(ads.meta.filters.campaign, "c1")
        const leads = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, conversion_key: "lead" })).json.data
        assert.deepStrictEqual(leads.map((row: any) => [row.platform_id, row.attributed_outcome_count]), [["c9", 1], ["c1", 0], ["c2", 0]])
        // Spend is recorded per ad: under a channel filter it is unmeasurable.
        const social = (yield* get(world.key, "/api/v1/campaigns", { ...RANGE, channel: "paid_social" })).json.data
        assert.deepInclude(social.find((row: any) => row.platform_id === "c1"), { attributed_outcome_count: 2, spend: null, roas: null, cac: null })
        // A measured zero: c1 has spend, none in this range.
        const later = (yield* get(world.key, "/api/v1/campaigns", { start: "2026-04-01", end: "2026-04-02" })).json.data
        assert.deepInclude(later.find((row: any) => row.platform_id === "c1"), { spend: "0", roas: null, cac: null })
      }))

    it.effect("parameters: level, model, range and filters are checked (400 naming the parameter)", () =>
      Effect.gen(function*() {
        const profile = yield* seedCampaignProfile()
        const cases: Array<[string, Record<string, string>, string, string]> = [
          ["/api/v1/campaigns", { level: "adset" }, "invalid_parameter", "level"],
          ["/api/v1/campaigns/unattributed", { level: "" }, "invalid_parameter", "level"],
          ["/api/v1/campaigns", { model: "nope" }, "invalid_parameter", "model"],
          ["/api/v1/campaigns", { campaign: "c1", ad: "a1" }, "invalid_parameter", "ad"],
          ["/api/v1/campaigns", { days: "400" }, "invalid_date_range", "days"]
        ]
        for (const [path, query, code, name] of cases) {
          const response = yield* get(profile.key, path, query)
          assert.strictEqual(response.status, 400, response.text)
          assert.strictEqual(response.json.error.code, code)
          assert.include(response.json.error.message, name)
        }
      }))

    it.effect("campaigns:read is required: 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const profile = yield* seedCampaignProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read"], rateLimitPerMinute: 10_000 })
        for (const path of ["/api/v1/campaigns", "/api/v1/campaigns/unattributed", "/api/v1/campaigns/c1/conversions"]) {
          const response = yield* get(key, path)
          assert.strictEqual(response.status, 403, response.text)
          assert.strictEqual(response.json.error.code, "insufficient_scope")
        }
      }))

    it.effect("connect-broker tier: every read answers empty with 200 after checking parameters", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const key = yield* connectBroker(world, ["campaigns:read"])
        const rows = yield* get(key, "/api/v1/campaigns", RANGE)
        assert.deepStrictEqual([rows.status, rows.json.data], [200, []])
        const rest = yield* get(key, "/api/v1/campaigns/unattributed", RANGE)
        assert.strictEqual(rest.status, 200, rest.text)
        assert.deepInclude(rest.json.data, { attributed_outcome_count: 0, credited_conversions: "0", credited_revenue: "0" })
        const list = yield* get(key, "/api/v1/campaigns/c1/conversions", RANGE)
        assert.deepStrictEqual([list.status, list.json.data, list.json.pagination], [200, [], { has_next: false, cursor: null }])
        assert.strictEqual((yield* get(key, "/api/v1/campaigns", { level: "x" })).json.error.code, "invalid_parameter")
        assert.strictEqual((yield* get(key, "/api/v1/campaigns/c1/conversions", { limit: "0" })).json.error.code, "invalid_parameter")
      }))
  })

  describe("GET /api/v1/campaigns/{id}/conversions", () => {
    it.effect("the conversions the model credits to the campaign, newest first, refunds out; keyset pages; limit checked", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const all = yield* get(world.key, "/api/v1/campaigns/c1/conversions", RANGE)
        assert.strictEqual(all.status, 200, all.text)
        assert.deepStrictEqual(all.json.data, [
          {
            id: world.conv2.id, outcome_event_id: world.conv2.eventId, conversion_key: "sale", occurred_at: "2026-03-04T10:00:00.000000Z",
            value: "50", currency: "SEK", counts_as_cash: true, is_first_payment: false, credit_share: "1"
          },
          {
            id: world.conv1.id, outcome_event_id: world.conv1.eventId, conversion_key: "sale", occurred_at: "2026-03-03T10:00:00.000000Z",
            value: "100", currency: "SEK", counts_as_cash: true, is_first_payment: true, credit_share: "1"
          }
        ])
        assert.deepStrictEqual(all.json.pagination, { has_next: false, cursor: null })
        assert.deepInclude(all.json.meta, { model: "last_touch", platform_id: "c1" })
        const first = yield* get(world.key, "/api/v1/campaigns/c1/conversions", { ...RANGE, limit: "1" })
        assert.deepStrictEqual(first.json.data.map((row: any) => row.id), [world.conv2.id])
        assert.strictEqual(first.json.pagination.has_next, true)
        const second = yield* get(world.key, "/api/v1/campaigns/c1/conversions", { ...RANGE, limit: "1", cursor: first.json.pagination.cursor })
        assert.deepStrictEqual(second.json.data.map((row: any) => row.id), [world.conv1.id])
        assert.deepStrictEqual(second.json.pagination, { has_next: false, cursor: null })
        const linear = (yield* get(world.key, "/api/v1/campaigns/c1/conversions", { ...RANGE, model: "linear" })).json.data
        assert.deepStrictEqual(linear.map((row: any) => [row.id, row.credit_share]), [[world.conv2.id, "1"], [world.conv1.id, "0.5"]])
        // An unsynced id the touches carry is a campaign too.
        const unsynced = (yield* get(world.key, "/api/v1/campaigns/c9/conversions", RANGE)).json.data
        assert.deepStrictEqual(unsynced.map((row: any) => row.conversion_key), ["lead"])
        for (const limit of ["0", "201", "abc", "1.5", ""]) {
          const bad = yield* get(world.key, "/api/v1/campaigns/c1/conversions", { limit })
          assert.strictEqual(bad.status, 400, `${limit}: ${bad.text}`)
          assert.deepInclude(bad.json.error, { code: "invalid_parameter" })
          assert.include(bad.json.error.message, "limit")
        }
        const max = yield* get(world.key, "/api/v1/campaigns/c1/conversions", { ...RANGE, limit: "200" })
        assert.strictEqual(max.status, 200, max.text)
        const badCursor = yield* get(world.key, "/api/v1/campaigns/c1/conversions", { cursor: "garbage" })
        assert.strictEqual(badCursor.json.error.code, "invalid_parameter")
      }))

    it.effect("unknown or another profile's campaign: 404 with an identical body", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const other = yield* seedCampaignProfile()
        yield* seedStructure(other.profileId, { campaign: "other-campaign" })
        const unknown = yield* get(world.key, "/api/v1/campaigns/nope/conversions", RANGE)
        const foreign = yield* get(world.key, "/api/v1/campaigns/other-campaign/conversions", RANGE)
        assert.strictEqual(unknown.status, 404, unknown.text)
        assert.strictEqual(foreign.status, 404, foreign.text)
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(unknown.text))
        const own = yield* get(other.key, "/api/v1/campaigns/other-campaign/conversions", RANGE)
        assert.deepStrictEqual([own.status, own.json.data], [200, []])
      }))
  })

  describe("GET /api/v1/ads/{id}, /ads/trend, /ads/fatigue-risk", () => {
    it.effect("ad detail: the row's metrics plus learned values, all withheld; level=ad_set adds learning and objective", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const withheld = { value: null, status: "withheld", reason: "no_model_served" }
        const ad = yield* get(world.key, "/api/v1/ads/a1", RANGE)
        assert.strictEqual(ad.status, 200, ad.text)
        assert.deepInclude(ad.json.data, {
          level: "ad", platform_id: "a1", id: world.c1.adId, name: "Ad a1", attributed_outcome_count: 2, outcome_count: 2,
          credited_revenue: "150", spend: "20", roas: "7.5", cac: "10", learning_stage_status: null, campaign_objective: null
        })
        assert.deepStrictEqual(ad.json.data.learned, {
          top_performer_likelihood: withheld, hazard_30d_pause: withheld, hazard_30d_degradation: withheld,
          fatigue_risk_tier: withheld, expected_lifespan_days: withheld
        })
        const set = (yield* get(world.key, "/api/v1/ads/s1", { ...RANGE, level: "ad_set" })).json.data
        assert.deepInclude(set, { level: "ad_set", learning_stage_status: "LEARNING", campaign_objective: "OUTCOME_SALES", spend: "20" })
        const campaign = (yield* get(world.key, "/api/v1/ads/c1", { ...RANGE, level: "campaign", model: "linear" })).json.data
        assert.deepInclude(campaign, { level: "campaign", credited_conversions: "1.5", learning_stage_status: null, campaign_objective: null })
        const unsynced = (yield* get(world.key, "/api/v1/ads/a9", RANGE)).json.data
        assert.deepInclude(unsynced, { in_synced_structure: false, id: null, attributed_outcome_count: 1, spend: null })
        // Unknown, another profile's, or an id of another level: one 404 body.
        const other = yield* seedCampaignProfile()
        yield* seedStructure(other.profileId, { campaign: "oc", adSet: "os", ad: "other-ad" })
        const unknown = yield* get(world.key, "/api/v1/ads/nope", RANGE)
        const foreign = yield* get(world.key, "/api/v1/ads/other-ad", RANGE)
        const wrongLevel = yield* get(world.key, "/api/v1/ads/c1", RANGE)
        assert.deepStrictEqual([unknown.status, foreign.status, wrongLevel.status], [404, 404, 404])
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(unknown.text))
        assert.strictEqual(withoutRequestId(wrongLevel.text), withoutRequestId(unknown.text))
        assert.strictEqual((yield* get(world.key, "/api/v1/ads/a1", { level: "ads" })).json.error.code, "invalid_parameter")
      }))

    it.effect("trend: one point per day with the ads' credit and spend; messaging null until synced; fatigue-risk withheld", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const trend = yield* get(world.key, "/api/v1/ads/trend", { start: "2026-03-02", end: "2026-03-05" })
        assert.strictEqual(trend.status, 200, trend.text)
        const point = (date: string, fields: Record<string, unknown>) => ({
          date, attributed_outcome_count: 0, outcome_count: 0, outcome_count_first_payment: 0, credited_conversions: "0",
          credited_revenue: "0", spend: "0", messaging_conversations_started_7d: null, reporting: { credited_revenue: "0", spend: "0" },
          ...fields
        })
        assert.deepStrictEqual(trend.json.data, [
          point("2026-03-02", {}),
          point("2026-03-03", {
            attributed_outcome_count: 1, outcome_count: 1, outcome_count_first_payment: 1, credited_conversions: "1",
            credited_revenue: "100", spend: "20", reporting: { credited_revenue: "110", spend: "22" }
          }),
          point("2026-03-04", {
            attributed_outcome_count: 2, outcome_count: 1, credited_conversions: "2", credited_revenue: "50",
            reporting: { credited_revenue: "55", spend: "0" }
          }),
          // The refunded sale: credited, not counted; its net revenue is 0.
          point("2026-03-05", {})
        ])
        assert.deepInclude(trend.json.meta, { spend_measured: true, messaging_status: "not_synced", unavailable_reason: null })
        const social = (yield* get(world.key, "/api/v1/ads/trend", { start: "2026-03-03", end: "2026-03-03", channel: "paid_social" })).json
        assert.deepInclude(social.data[0], { attributed_outcome_count: 1, spend: null })
        const fatigue = yield* get(world.key, "/api/v1/ads/fatigue-risk")
        assert.strictEqual(fatigue.status, 200, fatigue.text)
        assert.deepStrictEqual(fatigue.json.data, { model: { status: "withheld", reason: "no_model_served" }, ads: [] })
        assert.strictEqual((yield* get(world.key, "/api/v1/ads/fatigue-risk", { model: "x" })).json.error.code, "invalid_parameter")
        assert.strictEqual((yield* get(world.key, "/api/v1/ads/trend", { days: "367" })).json.error.code, "invalid_date_range")
      }))

    it.effect("connect-broker tier and scope: ads reads answer empty; campaigns:read is required", () =>
      Effect.gen(function*() {
        const world = yield* seedCrafted
        const { key: analyticsOnly } = yield* seedApiKey(world, { scopes: ["analytics:read"], rateLimitPerMinute: 10_000 })
        for (const path of ["/api/v1/ads/a1", "/api/v1/ads/trend", "/api/v1/ads/fatigue-risk"]) {
          assert.strictEqual((yield* get(analyticsOnly, path)).status, 403)
        }
        const key = yield* connectBroker(world, ["campaigns:read"])
        const ad = yield* get(key, "/api/v1/ads/a1", RANGE)
        assert.strictEqual(ad.status, 200, ad.text)
        assert.deepInclude(ad.json.data, { attributed_outcome_count: 0, credited_revenue: "0", spend: null })
        const trend = yield* get(key, "/api/v1/ads/trend", RANGE)
        assert.deepStrictEqual([trend.status, trend.json.data], [200, []])
        const fatigue = yield* get(key, "/api/v1/ads/fatigue-risk", RANGE)
        assert.deepStrictEqual([fatigue.status, fatigue.json.data.ads], [200, []])
      }))
  })

  describe("rollups", () => {
    it.effect("property: campaign rows and the remainder equal a recomputation from raw rows after waves of writes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        let seed = 20261122
        const random = () => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return seed / 2147483648
        }
        const pick = <A>(values: ReadonlyArray<A>): A => values[Math.floor(random() * values.length)] as A
        const models = ["last_touch", "first_touch", "linear", "time_decay"]
        const profile = yield* seedCampaignProfile({ timeZone: pick(["UTC", "America/New_York", "Asia/Kolkata"]), currency: "EUR" })
        const p = profile.profileId
        yield* seedStructure(p, { campaign: "c1", adSet: "s1", ad: "a1" })
        const base = Date.parse("2026-06-01T00:00:00Z")
        const randomAt = () => new Date(base + Math.floor(random() * 30 * 86_400_000)).toISOString()
        const touches: Array<string> = []
        const conversions: Array<string> = []
        const wave = Effect.gen(function*() {
          for (let i = 0; i < 25; i++) {
            const paid = random() < 0.6
            touches.push(yield* insertTouch(p, {
              at: randomAt(),
              channel: paid ? pick(["paid_social", "paid_search"]) : pick(["organic_search", "direct"]),
              campaign: paid ? pick(["c1", "c2"]) : null,
              adSet: paid ? pick(["s1", "s2", "s3"]) : null,
              ad: paid ? pick(["a1", "a2", "a3", "a4"]) : null
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
              if (random() < 0.2) continue
              const count = model === "linear" || model === "time_decay" ? 1 + Math.floor(random() * 3) : 1
              const chosen = [...new Set(Array.from({ length: count }, () => pick(touches)))]
              for (const [k, touch] of chosen.entries()) yield* credit(id, model, touch, (1 / chosen.length).toFixed(10), k)
            }
          }
        })
        yield* wave
        yield* drain
        yield* wave
        const refunded = [conversions[1]!, conversions[4]!, conversions[7]!, conversions[10]!, conversions[13]!]
        yield* sql`UPDATE conversions SET refunded_at = now(), refund_amount = COALESCE(value_amount, 0) / 2 WHERE id IN ${sql.in(refunded)}`
        yield* sql`DELETE FROM conversions WHERE id = ${conversions[2]!}`
        yield* sql`DELETE FROM attribution_credits WHERE conversion_id = ${conversions[3]!} AND model = 'last_touch'`
        yield* credit(conversions[3]!, "last_touch", touches[touches.length - 1]!, "1")
        // A touch moving to another campaign re-marks the days of the conversions credited to it.
        yield* sql`UPDATE touches SET campaign_external_id = 'c3', ad_set_external_id = 's3' WHERE id = ${touches[0]!}`
        yield* drain

        const levelColumn: Record<string, string> = {
          campaign: "COALESCE(t.campaign_external_id, '')", ad_set: "COALESCE(t.ad_set_external_id, '')",
          ad: "COALESCE(t.ad_external_id, '')"
        }
        const filterColumn: Record<string, string> = { ...levelColumn, channel: "t.channel" }
        const filterChoices: Array<[string, string] | null> = [null, null, ["channel", "paid_social"], ["campaign", "c1"], ["ad_set", "s2"]]
        let checks = 0
        let trendChecks = 0
        for (let round = 0; round < 12; round++) {
          const startDay = Math.floor(random() * 25) - 2
          const length = 1 + Math.floor(random() * 20)
          const start = new Date(base + startDay * 86_400_000).toISOString().slice(0, 10)
          const end = new Date(base + (startDay + length - 1) * 86_400_000).toISOString().slice(0, 10)
          const model = pick(models)
          const level = pick(["campaign", "ad_set", "ad"])
          const filter = pick(filterChoices)
          const conversionKey = pick([null, null, "sale", "lead"])
          const query: Record<string, string> = { start, end, model, level }
          if (filter !== null) query[filter[0]] = filter[1]
          if (conversionKey !== null) query["conversion_key"] = conversionKey
          const keyClause = conversionKey === null ? sql`` : sql`AND c.conversion_key = ${conversionKey}`
          const within = filter === null ? sql`true` : sql`${sql.literal(filterColumn[filter[0]]!)} = ${filter[1]}`
          const conv = sql`
            SELECT c.*, (c.occurred_at AT TIME ZONE pr.time_zone)::date AS day, c.refunded_at IS NULL AS counted,
                   CASE WHEN c.counts_as_cash THEN COALESCE(c.value_amount, 0) - COALESCE(c.refund_amount, 0) ELSE 0 END AS net
            FROM conversions c JOIN profiles pr ON pr.id = c.profile_id
            WHERE c.profile_id = ${p} AND (c.occurred_at AT TIME ZONE pr.time_zone)::date BETWEEN ${start}::date AND ${end}::date
              ${keyClause}`
          // Direct: per platform id, what the model credits to matching touches carrying it.
          const expected = yield* sql<any>`
            WITH c AS (${conv}),
            x AS (SELECT ${sql.literal(levelColumn[level]!)} AS pid, c.id, c.day, COALESCE(c.currency, '') AS cur, c.counted,
                         c.counts_as_cash, c.is_first_payment, c.net, a.credit_share
                  FROM c JOIN attribution_credits a ON a.conversion_id = c.id AND a.model = ${model} AND a.is_credited
                  JOIN touches t ON t.id = a.touch_id WHERE ${within}),
            per_conv AS (SELECT pid, id, bool_or(counted) AS counted, bool_or(counts_as_cash) AS cash,
                                bool_or(is_first_payment IS TRUE) AS first, max(net) AS net
                         FROM x WHERE pid <> '' GROUP BY pid, id),
            v AS (SELECT pid, count(*) FILTER (WHERE counted)::int AS attributed_outcome_count,
                         count(*) FILTER (WHERE counted AND cash)::int AS outcome_count,
                         count(*) FILTER (WHERE counted AND cash AND first)::int AS outcome_count_first_payment,
                         trim_scale(COALESCE(sum(net) FILTER (WHERE counted AND cash), 0))::text AS outcome_value
                  FROM per_conv GROUP BY pid),
            s AS (SELECT pid, trim_scale(COALESCE(sum(credit_share) FILTER (WHERE counted), 0))::text AS credited_conversions
                  FROM x WHERE pid <> '' GROUP BY pid),
            m AS (SELECT pid, day, cur, sum(credit_share * net) AS money FROM x WHERE pid <> '' GROUP BY 1, 2, 3),
            r AS (SELECT pid, trim_scale(sum(round(money, 6)))::text AS credited_revenue FROM m GROUP BY pid)
            SELECT v.pid AS platform_id, v.attributed_outcome_count, v.outcome_count, v.outcome_count_first_payment,
                   s.credited_conversions, v.outcome_value, r.credited_revenue
            FROM v JOIN s ON s.pid = v.pid JOIN r ON r.pid = v.pid ORDER BY v.pid`
          const response = yield* get(profile.key, "/api/v1/campaigns", query)
          assert.strictEqual(response.status, 200, response.text)
          const active = (row: any) => row.attributed_outcome_count > 0 || row.credited_conversions !== "0" || row.credited_revenue !== "0"
          const answered = response.json.data
            .filter(active)
            .map((row: any) => ({
              platform_id: row.platform_id, attributed_outcome_count: row.attributed_outcome_count, outcome_count: row.outcome_count,
              outcome_count_first_payment: row.outcome_count_first_payment, credited_conversions: row.credited_conversions,
              outcome_value: row.outcome_value, credited_revenue: row.credited_revenue
            }))
            .sort((a: any, b: any) => a.platform_id < b.platform_id ? -1 : 1)
          assert.deepStrictEqual(answered, expected.filter(active), JSON.stringify(query))
          // By type adds up to the count.
          for (const row of response.json.data) {
            const byType = Object.values(row.attributed_outcomes_by_type as Record<string, number>).reduce((a, b) => a + b, 0)
            assert.strictEqual(byType, row.attributed_outcome_count)
          }

          // The remainder, directly: counted conversions with no credited matching touch carrying an id at the level.
          const [remainder] = yield* sql<any>`
            WITH c AS (${conv}),
            x AS (SELECT c.id, ${sql.literal(levelColumn[level]!)} AS pid
                  FROM c JOIN attribution_credits a ON a.conversion_id = c.id AND a.model = ${model} AND a.is_credited
                  JOIN touches t ON t.id = a.touch_id WHERE ${within})
            SELECT count(*)::int AS n FROM c
            WHERE c.counted AND NOT EXISTS (SELECT 1 FROM x WHERE x.id = c.id AND x.pid <> '')
              AND (${filter === null} OR EXISTS (SELECT 1 FROM x WHERE x.id = c.id))`
          const rest = yield* get(profile.key, "/api/v1/campaigns/unattributed", query)
          assert.strictEqual(rest.status, 200, rest.text)
          assert.strictEqual(rest.json.data.attributed_outcome_count, remainder.n, JSON.stringify(query))

          // Rows plus the remainder add up to the overview (shares under every model, counts under single-touch ones).
          const overview = (yield* get(profile.key, "/api/v1/overview", query)).json.data.current
          const rows = response.json.data
          const shares = rows.reduce((sum: number, row: any) => sum + Number(row.credited_conversions), 0) +
            Number(rest.json.data.credited_conversions)
          const target = filter === null ? overview.outcomes : Number(overview.credited_conversions)
          assert.closeTo(shares, target, 1e-6, JSON.stringify(query))
          if (model === "last_touch" || model === "first_touch") {
            const counts = rows.reduce((sum: number, row: any) => sum + row.attributed_outcome_count, 0) +
              rest.json.data.attributed_outcome_count
            assert.strictEqual(counts, overview.outcomes, JSON.stringify(query))
          }
          if (level === "ad") {
            // The trend is the ad rows, per day.
            const { level: _level, ...trendQuery } = query
            const trend = (yield* get(profile.key, "/api/v1/ads/trend", trendQuery)).json.data
            const perDay = (pick: (row: any) => number) => trend.reduce((sum: number, point: any) => sum + pick(point), 0)
            const perRow = (pick: (row: any) => number) => rows.reduce((sum: number, row: any) => sum + pick(row), 0)
            assert.strictEqual(perDay((point) => point.attributed_outcome_count), perRow((row) => row.attributed_outcome_count))
            assert.closeTo(perDay((point) => Number(point.credited_conversions)), perRow((row) => Number(row.credited_conversions)), 1e-9)
            trendChecks++
          }
          checks++
        }
        assert.strictEqual(checks, 12)
        assert.isAbove(trendChecks, 0)
        const snapshot = sql<{ n: string }>`
          SELECT md5(string_agg(x::text, ',' ORDER BY x::text)) AS n FROM (
            SELECT model, level, platform_id, day, conversion_key, currency, conversions,
                   credited_conversions::text, credited_revenue::text, outcome_value::text
            FROM analytics_campaign_days WHERE profile_id = ${p}) x`
        const before = yield* snapshot
        yield* Effect.flatMap(AnalyticsRollups, (rollups) => rollups.rebuild(p))
        assert.deepStrictEqual(yield* snapshot, before)
      }))
  })
})
