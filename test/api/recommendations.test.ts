/**
 * Recommendations end to end (decision 0072): real HTTP on a real database. The ad structure, the
 * spend days and the last-touch credited conversions are seeded where the sync and the rollups
 * write them; the list generates from them on read.
 *
 * The crafted week (EUR): ad set s1 (budget 100.00/day) spends 95/day with 10 conversions; s2
 * (budget 50.00) 50/day with none; s3 (budget 200.00) 50/day with 2. Profile cost per outcome
 * 1365 / 12 = 113.75. s1: 66.50 ≤ 70 % of it, 95 % of budget used → +20 % (12000). s2: no
 * conversion, 350 ≥ 2 × 113.75 → -50 % (2500). Ad a2 (under s2): 350 ≥ 3 × 113.75 → pause.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { RecommendationsRepo } from "../../src/ads/recommendations/repo.ts"
import { type AdFixture, adFixture, objectOf, send as sendKeyed, WRITE_SCOPES, writeCount } from "../support/adplatform.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const send = (key: string, method: string, path: string) =>
  call(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } })

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

const seedWorld = (profile: SeededProfile) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const campaignId = crypto.randomUUID()
    yield* sql`INSERT INTO ad_campaigns (id, profile_id, platform_id, name, currency) VALUES (${campaignId}, ${profile.profileId}, 'c1', 'Campaign', 'EUR')`
    const sets = [
      { set: "s1", ad: "a1", budget: 10_000, spend: "95.00", conversions: 10 },
      { set: "s2", ad: "a2", budget: 5_000, spend: "50.00", conversions: 0 },
      { set: "s3", ad: "a3", budget: 20_000, spend: "50.00", conversions: 2 }
    ]
    for (const s of sets) {
      const setId = crypto.randomUUID()
      yield* sql`
        INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name, currency, daily_budget_minor)
        VALUES (${setId}, ${profile.profileId}, ${campaignId}, ${s.set}, ${`Set ${s.set}`}, 'EUR', ${s.budget})`
      yield* sql`
        INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name) VALUES (${crypto.randomUUID()}, ${profile.profileId}, ${setId}, ${s.ad}, ${`Ad ${s.ad}`})`
      for (let offset = -6; offset <= 0; offset++) {
        yield* sql`
          INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency, amount,
                                source, impressions, clicks, reported_conversions, reported_chats)
          VALUES (${profile.profileId}, 'adplatform', ${day(offset)}::date, 'c1', ${s.set}, ${s.ad}, 'EUR', ${s.spend}, 'sync', 1000, 20, 0, 0)`
      }
      if (s.conversions > 0) {
        for (const [level, platformId] of [["ad_set", s.set], ["ad", s.ad]] as const) {
          yield* sql`
            INSERT INTO analytics_campaign_days (profile_id, model, level, platform_id, day, conversion_key, currency, conversions,
                                                 cash_payments, first_payments, credited_conversions, credited_revenue, outcome_value)
            VALUES (${profile.profileId}, 'last_touch', ${level}, ${platformId}, ${day(-1)}::date, 'purchase', 'EUR', ${s.conversions},
                    0, 0, ${s.conversions}, 0, 0)`
        }
      }
    }
  })

const fixture = Effect.gen(function*() {
  const profile = yield* seedProfile()
  yield* seedWorld(profile)
  const { key } = yield* seedApiKey(profile, { scopes: ["campaigns:read", "campaigns:apply"], rateLimitPerMinute: 10_000 })
  return { ...profile, key }
})

const list = (key: string, query = "") =>
  Effect.map(send(key, "GET", `/api/v1/recommendations${query}`), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json
  })

const byRule = (data: ReadonlyArray<any>, rule: string) => {
  const found = data.find((r) => r.rule.id === rule)
  assert.isDefined(found, `recommendation ${rule}`)
  return found
}

const rowCount = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM recommendations WHERE profile_id = ${profileId}`, (rows) => Number(rows[0]?.n ?? 0)))

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("recommendations", (it) => {
  describe("generation", () => {
    it.effect("the rules propose exactly the supported actions, with their rule, target and guardrailed budgets", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const page = yield* list(f.key)
        assert.deepStrictEqual(page.data.map((r: any) => r.rule.id).sort(), ["ad.pause_no_outcomes", "adset.budget_decrease", "adset.budget_increase"])
        const increase = byRule(page.data, "adset.budget_increase")
        assert.strictEqual(increase.status, "open")
        assert.deepStrictEqual(increase.target, { level: "ad_set", platform_id: "s1", name: "Set s1" })
        assert.deepStrictEqual(increase.action, { type: "budget", previous_daily_budget_minor: 10_000, new_daily_budget_minor: 12_000 })
        assert.deepStrictEqual(increase.rule.thresholds, { min_outcomes: 3, max_cpo_share_of_profile: 0.7, min_budget_use: 0.9, change: 0.2 })
        assert.strictEqual(increase.rule.inputs.cost_per_outcome, 66.5)
        assert.strictEqual(increase.rule.inputs.profile_cost_per_outcome, 113.75)
        assert.strictEqual(increase.rule.inputs.budget_use, 0.95)
        const decrease = byRule(page.data, "adset.budget_decrease")
        assert.deepStrictEqual(decrease.target, { level: "ad_set", platform_id: "s2", name: "Set s2" })
        assert.deepStrictEqual(decrease.action, { type: "budget", previous_daily_budget_minor: 5_000, new_daily_budget_minor: 2_500 })
        const pause = byRule(page.data, "ad.pause_no_outcomes")
        assert.deepStrictEqual(pause.target, { level: "ad", platform_id: "a2", name: "Ad a2" })
        assert.deepStrictEqual(pause.action, { type: "pause", previous_daily_budget_minor: null, new_daily_budget_minor: null })
        assert.strictEqual(pause.rule.inputs.spend, 350)
        assert.strictEqual(pause.rule.inputs.outcomes, 0)
      }))

    it.effect("reading again yields the same ids and no second row", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const first = yield* list(f.key)
        const second = yield* list(f.key)
        assert.deepStrictEqual(second.data.map((r: any) => r.id).sort(), first.data.map((r: any) => r.id).sort())
        assert.deepStrictEqual(second.data.map((r: any) => r.updated_at).sort(), first.data.map((r: any) => r.updated_at).sort())
        assert.strictEqual(yield* rowCount(f.profileId), 3)
      }))

    it.effect("an open recommendation the data no longer supports expires", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const sql = yield* SqlClient
        yield* list(f.key)
        yield* sql`DELETE FROM ad_spend WHERE profile_id = ${f.profileId} AND ad_external_id = 'a2'`
        const page = yield* list(f.key)
        assert.strictEqual(byRule(page.data, "ad.pause_no_outcomes").status, "expired")
        const open = yield* list(f.key, "?status=open")
        assert.isFalse(open.data.some((r: any) => r.rule.id === "ad.pause_no_outcomes"))
      }))

    it.effect("keyset pages: limit, has_next and the cursor", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const first = yield* list(f.key, "?limit=2")
        assert.strictEqual(first.data.length, 2)
        assert.strictEqual(first.pagination.has_next, true)
        const next = yield* list(f.key, `?limit=2&cursor=${first.pagination.cursor}`)
        assert.strictEqual(next.data.length, 1)
        assert.strictEqual(next.pagination.has_next, false)
        const all = [...first.data, ...next.data].map((r: any) => r.id)
        assert.strictEqual(new Set(all).size, 3)
      }))
  })

  describe("tiers", () => {
    it.effect("an app-provisioned profile with the attribution add-on off lists nothing and generates nothing", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Recommendations app")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `rec-${crypto.randomUUID().slice(0, 8)}` })
        assert.strictEqual(created.status, 201, created.text)
        const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
        yield* seedWorld(profile)
        const { key } = yield* seedApiKey(profile, { scopes: ["campaigns:read"] })
        const page = yield* list(key)
        assert.deepStrictEqual(page, { data: [], pagination: { has_next: false, cursor: null } })
        assert.strictEqual(yield* rowCount(profile.profileId), 0)
      }))
  })

  describe("dismiss", () => {
    it.effect("an open one is dismissed, stays dismissed on the next generation, and a repeat answers it unchanged", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const target = byRule((yield* list(f.key)).data, "adset.budget_decrease")
        const dismissed = yield* send(f.key, "POST", `/api/v1/recommendations/${target.id}/dismiss`)
        assert.strictEqual(dismissed.status, 200, dismissed.text)
        assert.strictEqual(dismissed.json.data.status, "dismissed")
        assert.isString(dismissed.json.data.dismissed_at)
        const again = byRule((yield* list(f.key)).data, "adset.budget_decrease")
        assert.strictEqual(again.id, target.id)
        assert.strictEqual(again.status, "dismissed")
        const repeat = yield* send(f.key, "POST", `/api/v1/recommendations/${target.id}/dismiss`)
        assert.strictEqual(repeat.status, 200)
        assert.strictEqual(repeat.json.data.dismissed_at, dismissed.json.data.dismissed_at)
      }))

    it.effect("an applied one (marked by the ad actions) cannot be dismissed: 409 invalid_state", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const target = byRule((yield* list(f.key)).data, "ad.pause_no_outcomes")
        const applied = yield* Effect.provide(
          Effect.flatMap(RecommendationsRepo, (repo) => repo.markApplied(f.profileId, target.id, "act_123")),
          RecommendationsRepo.layer
        )
        assert.strictEqual(applied._tag, "Some")
        const refused = yield* send(f.key, "POST", `/api/v1/recommendations/${target.id}/dismiss`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        const after = byRule((yield* list(f.key)).data, "ad.pause_no_outcomes")
        assert.strictEqual(after.status, "applied")
        assert.strictEqual(after.action_id, "act_123")
      }))

    it.effect("404 for another profile's recommendation and for a malformed id; 403 without campaigns:apply", () =>
      Effect.gen(function*() {
        const f = yield* fixture
        const other = yield* fixture
        const theirs = (yield* list(other.key)).data[0]
        const foreign = yield* send(f.key, "POST", `/api/v1/recommendations/${theirs.id}/dismiss`)
        assert.strictEqual(foreign.status, 404, foreign.text)
        assert.strictEqual(foreign.json.error.code, "not_found")
        assert.strictEqual((yield* send(f.key, "POST", "/api/v1/recommendations/not-an-id/dismiss")).status, 404)
        const { key: readOnly } = yield* seedApiKey(f, { scopes: ["campaigns:read"] })
        const mine = (yield* list(f.key)).data[0]
        const refused = yield* send(readOnly, "POST", `/api/v1/recommendations/${mine.id}/dismiss`)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual((yield* list(f.key)).data.find((r: any) => r.id === mine.id).status, "open")
        const { key: noRead } = yield* seedApiKey(f, { scopes: ["campaigns:apply"] })
        assert.strictEqual((yield* send(noRead, "GET", "/api/v1/recommendations")).status, 403)
      }))
  })
})

/**
 * The synced copy of a connected sandbox account's campaign 2, with a week that makes the rules
 * propose a +20 % on ad set 1 (daily budget `budget`, 95 % used, 10 conversions) and a pause of
 * ad 2.1 (ad set 2 spends 50.00 a day with none; profile cost per outcome well under a third of
 * its 350).
 */
const seedSynced = (f: AdFixture, budget: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [campaign] = yield* sql<{ id: string }>`
      INSERT INTO ad_campaigns (id, profile_id, connection_id, platform_id, name, currency)
      VALUES (${crypto.randomUUID()}, ${f.profileId}, ${f.connectionId}, ${`cmp_${f.n}_2`}, 'Generated 2', 'USD')
      ON CONFLICT (profile_id, platform_id) DO UPDATE SET currency = 'USD' RETURNING id`
    const sets = [
      { set: `as_${f.n}_2_1`, ad: `ad_${f.n}_2_1_1`, budget, spend: (0.95 * budget / 100).toFixed(2), conversions: 10 },
      { set: `as_${f.n}_2_2`, ad: `ad_${f.n}_2_2_1`, budget: null, spend: "50.00", conversions: 0 }
    ]
    for (const s of sets) {
      const [set] = yield* sql<{ id: string }>`
        INSERT INTO ad_sets (id, profile_id, connection_id, campaign_id, platform_id, name, currency, daily_budget_minor)
        VALUES (${crypto.randomUUID()}, ${f.profileId}, ${f.connectionId}, ${campaign?.id}, ${s.set}, ${`Set ${s.set}`}, 'USD', ${s.budget})
        ON CONFLICT (profile_id, platform_id) DO UPDATE SET daily_budget_minor = EXCLUDED.daily_budget_minor, status = 'active'
        RETURNING id`
      yield* sql`
        INSERT INTO ads (id, profile_id, connection_id, ad_set_id, platform_id, name)
        VALUES (${crypto.randomUUID()}, ${f.profileId}, ${f.connectionId}, ${set?.id}, ${s.ad}, ${`Ad ${s.ad}`})
        ON CONFLICT (profile_id, platform_id) DO UPDATE SET status = 'active'`
      for (let offset = -6; offset <= 0; offset++) {
        yield* sql`
          INSERT INTO ad_spend (profile_id, platform, day, campaign_external_id, ad_set_external_id, ad_external_id, currency, amount,
                                source, impressions, clicks, reported_conversions, reported_chats)
          VALUES (${f.profileId}, 'adplatform', ${day(offset)}::date, ${`cmp_${f.n}_2`}, ${s.set}, ${s.ad}, 'USD', ${s.spend}, 'sync',
                  1000, 20, 0, 0)`
      }
      if (s.conversions > 0) {
        for (const [level, platformId] of [["ad_set", s.set], ["ad", s.ad]] as const) {
          yield* sql`
            INSERT INTO analytics_campaign_days (profile_id, model, level, platform_id, day, conversion_key, currency, conversions,
                                                 cash_payments, first_payments, credited_conversions, credited_revenue, outcome_value)
            VALUES (${f.profileId}, 'last_touch', ${level}, ${platformId}, ${day(-1)}::date, 'purchase', 'USD', ${s.conversions},
                    0, 0, ${s.conversions}, 0, 0)`
        }
      }
    }
  })

/** A connected sandbox account with its synced copy and the open recommendations it yields. */
const applyFixture = Effect.gen(function*() {
  const f = yield* adFixture()
  const budget = (yield* objectOf(f.key, `as_${f.n}_2_1`)).daily_budget_minor as number
  yield* seedSynced(f, budget)
  const page = yield* list(f.key)
  return { f, budget, increase: byRule(page.data, "adset.budget_increase"), pause: byRule(page.data, "ad.pause_no_outcomes") }
})

const actionRow = (profileId: string, id: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<any>`SELECT action, state, level, object_id, applied_by, applied_by_basis, written_daily_budget_minor::float8 AS written_daily,
                      written_status
               FROM ad_actions WHERE profile_id = ${profileId} AND id = ${id}`,
      (rows) => rows[0]
    ))

layer(serveAppOnOwnPort(), { timeout: "180 seconds", excludeTestServices: true })("recommendation apply", (it) => {
  it.effect("a budget increase applies through the ad actions: sandbox changed, ledger row, applied with action_id; replay; rollback restores", () =>
    Effect.gen(function*() {
      const { budget, f, increase } = yield* applyFixture
      const set = `as_${f.n}_2_1`
      assert.strictEqual(increase.action.new_daily_budget_minor, Math.round(budget * 1.2))
      const path = `/api/v1/recommendations/${increase.id}/apply`
      const before = yield* writeCount(f.key)
      // A plain profile key names no person: the person on record is required (decision 0069).
      const nobody = yield* sendKeyed(f.key, "POST", path, {})
      assert.strictEqual(nobody.status, 400, nobody.text)
      assert.strictEqual(nobody.json.error.code, "validation_error")
      const missingKey = yield* sendKeyed(f.key, "POST", path, {}, null)
      assert.strictEqual(missingKey.status, 400, missingKey.text)
      assert.strictEqual(yield* writeCount(f.key), before)
      const owner = yield* seedMemberSession(f, "owner")
      const idem = crypto.randomUUID()
      const applied = yield* sendKeyed(f.key, "POST", path, { applied_by: owner.userId }, idem)
      assert.strictEqual(applied.status, 200, applied.text)
      const { action, recommendation } = applied.json.data
      assert.strictEqual(action.action, "budget")
      assert.strictEqual(action.outcome, "applied")
      assert.strictEqual(action.level, "ad_set")
      assert.strictEqual(action.object_id, set)
      assert.strictEqual(action.applied_by_basis, "applied_by")
      assert.strictEqual(action.rollback_of, null)
      assert.strictEqual(action.pre_state.daily_budget_minor, budget)
      assert.deepStrictEqual(action.undo, { method: "POST", path: `/api/v1/conversion-sync/actions/${action.action_id}/rollback` })
      assert.strictEqual(recommendation.status, "applied")
      assert.strictEqual(recommendation.action_id, action.action_id)
      assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, Math.round(budget * 1.2))
      assert.strictEqual(yield* writeCount(f.key), before + 1)
      const row = yield* actionRow(f.profileId, action.action_id)
      assert.deepStrictEqual(row, {
        action: "budget",
        state: "applied",
        level: "ad_set",
        object_id: set,
        applied_by: owner.userId,
        applied_by_basis: "applied_by",
        written_daily: Math.round(budget * 1.2),
        written_status: null
      })
      // The same key and body replays the first answer without touching the platform.
      const replay = yield* sendKeyed(f.key, "POST", path, { applied_by: owner.userId }, idem)
      assert.strictEqual(replay.status, 200, replay.text)
      assert.deepStrictEqual(replay.json, applied.json)
      assert.strictEqual(yield* writeCount(f.key), before + 1)
      const conflict = yield* sendKeyed(f.key, "POST", path, {}, idem)
      assert.strictEqual(conflict.status, 409, conflict.text)
      assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
      // A new key on an applied recommendation: 409, nothing written.
      const again = yield* sendKeyed(f.key, "POST", path, { applied_by: owner.userId })
      assert.strictEqual(again.status, 409, again.text)
      assert.strictEqual(again.json.error.code, "invalid_state")
      assert.strictEqual(yield* writeCount(f.key), before + 1)
      const rolled = yield* sendKeyed(f.key, "POST", `/api/v1/conversion-sync/actions/${action.action_id}/rollback`)
      assert.strictEqual(rolled.status, 200, rolled.text)
      assert.strictEqual(rolled.json.data.outcome, "applied")
      assert.strictEqual(rolled.json.data.rollback_of, action.action_id)
      assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, budget)
    }))

  it.effect("a pause with a provisioning-app key is on record as the owner (app_shadow_owner); a dismissed one is 409 invalid_state", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const { f, increase, pause } = yield* applyFixture
      const ad = `ad_${f.n}_2_2_1`
      const owner = yield* seedMemberSession(f, "owner")
      const app = yield* registerApp("Recommendation apply app")
      const { id, key } = yield* seedApiKey(f, { scopes: WRITE_SCOPES, rateLimitPerMinute: 10_000 })
      yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${id}`
      const applied = yield* sendKeyed(key, "POST", `/api/v1/recommendations/${pause.id}/apply`, {})
      assert.strictEqual(applied.status, 200, applied.text)
      assert.strictEqual(applied.json.data.action.action, "pause")
      assert.strictEqual(applied.json.data.action.applied_by_basis, "app_shadow_owner")
      assert.strictEqual((yield* objectOf(f.key, ad)).status, "paused")
      const row = yield* actionRow(f.profileId, applied.json.data.action.action_id)
      assert.strictEqual(row.applied_by, owner.userId)
      assert.strictEqual(row.applied_by_basis, "app_shadow_owner")
      const dismissed = yield* sendKeyed(f.key, "POST", `/api/v1/recommendations/${increase.id}/dismiss`)
      assert.strictEqual(dismissed.status, 200, dismissed.text)
      const before = yield* writeCount(f.key)
      const refused = yield* sendKeyed(key, "POST", `/api/v1/recommendations/${increase.id}/apply`, {})
      assert.strictEqual(refused.status, 409, refused.text)
      assert.strictEqual(refused.json.error.code, "invalid_state")
      assert.strictEqual(yield* writeCount(f.key), before)
      const unknown = yield* sendKeyed(key, "POST", `/api/v1/recommendations/${crypto.randomUUID()}/apply`, {})
      assert.strictEqual(unknown.status, 404, unknown.text)
    }))
  it.effect("after the ad-platform connection is disconnected, applying a budget or a pause is 409 adplatform_connection_required: nothing written, still open", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const { f, increase, pause } = yield* applyFixture
      const owner = yield* seedMemberSession(f, "owner")
      const gone = yield* sendKeyed(f.key, "POST", `/api/v1/connections/${f.connectionId}/disconnect`)
      assert.strictEqual(gone.status, 200, gone.text)
      const before = yield* writeCount(f.key)
      for (const recommendation of [increase, pause]) {
        const refused = yield* sendKeyed(f.key, "POST", `/api/v1/recommendations/${recommendation.id}/apply`, { applied_by: owner.userId })
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "adplatform_connection_required")
      }
      assert.strictEqual(yield* writeCount(f.key), before)
      const rows = yield* sql<{ ledger: number; audit: number; open: number }>`
        SELECT (SELECT count(*)::int FROM ad_actions WHERE profile_id = ${f.profileId}) AS ledger,
               (SELECT count(*)::int FROM audit_events WHERE profile_id = ${f.profileId} AND action LIKE 'ad_action.%') AS audit,
               (SELECT count(*)::int FROM recommendations WHERE profile_id = ${f.profileId} AND id IN (${increase.id}, ${pause.id})
                  AND status = 'open') AS open`
      assert.deepStrictEqual(rows[0], { ledger: 0, audit: 0, open: 2 })
    }))
})
