/**
 * Partner data (decision 0033) through real HTTP: ad referrals (touches bound by
 * `ctwa_referral`, idempotent, all-or-nothing `unknown_ad`, re-credit marks), the read-only
 * preview of re-credits per model, and declared source (customer rules, `wamid` idempotency,
 * first answer wins, the vocabulary, national ids refused). The synced ad structure, customers,
 * touches and conversions a test starts from are written by SQL (other domains' routes); the
 * attribution worker is stepped by hand so the credit queue holds still between assertions.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const DAY = 86_400_000
const SCOPES = ["attribution:write", "conversions:read"]

interface Fixture extends SeededProfile {
  readonly key: string
}

const seed = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

const post = (key: string, path: string, body: unknown) =>
  call(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

const referrals = (key: string, body: unknown) => post(key, "/api/v1/partner/ad-referrals", body)
const preview = (key: string, body: unknown) => post(key, "/api/v1/partner/ad-referrals/preview", body)
const declare = (key: string, body: unknown) => post(key, "/api/v1/partner/declared-source", body)

interface SyncedAd {
  readonly adId: string
  readonly adName: string
  readonly adSetId: string
  readonly adSetName: string
  readonly campaignId: string
  readonly campaignName: string
}

/** A campaign, an ad set and `count` ads of the profile, as the ad-platform sync writes them. */
const syncAds = (profileId: string, count = 1) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const tag = crypto.randomUUID().slice(0, 8)
    const campaignRow = crypto.randomUUID()
    const adSetRow = crypto.randomUUID()
    const campaignId = `c-${tag}`
    const adSetId = `s-${tag}`
    yield* sql`
      INSERT INTO ad_campaigns (id, profile_id, platform_id, name, status, objective, daily_budget_minor)
      VALUES (${campaignRow}, ${profileId}, ${campaignId}, ${`Campaign ${tag}`}, 'active', 'OUTCOME_ENGAGEMENT', 5000)`
    yield* sql`
      INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name, learning_stage_status, daily_budget_minor)
      VALUES (${adSetRow}, ${profileId}, ${campaignRow}, ${adSetId}, ${`Ad set ${tag}`}, 'LEARNING', 2500)`
    const ads: Array<SyncedAd> = []
    for (let i = 0; i < count; i++) {
      const adId = `a-${tag}-${i}`
      yield* sql`
        INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name, creative_thumbnail_url, destination_type, greeting, greeting_status)
        VALUES (${crypto.randomUUID()}, ${profileId}, ${adSetRow}, ${adId}, ${`Ad ${tag} ${i}`}, 'https://cdn.example/t.jpg',
                'chat_app_a', 'Hi! How can we help?', 'ACTIVE')`
      ads.push({
        adId,
        adName: `Ad ${tag} ${i}`,
        adSetId,
        adSetName: `Ad set ${tag}`,
        campaignId,
        campaignName: `Campaign ${tag}`
      })
    }
    return ads
  })

const firstAd = (ads: ReadonlyArray<SyncedAd>): SyncedAd => {
  const ad = ads[0]
  if (ad === undefined) throw new Error("no ad synced")
  return ad
}

/** A customer with a `customer_key` (as server-side ingest creates them). */
const customer = (profileId: string, customerKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${id}, ${profileId}, ${customerKey})`
    return id
  })

const webTouch = (profileId: string, customerId: string, at: number, channel: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id)
      VALUES (${id}, ${profileId}, 'web_touch', ${new Date(at)}, ${channel}, ${customerId})`
    return id
  })

/** An outcome event and its conversion (what ingest writes), marked credited unless `pending`. */
const conversion = (
  profileId: string,
  customerId: string,
  at: number,
  options: { readonly windowDays?: number; readonly pending?: boolean } = {}
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    let definitionId: string | null = null
    if (options.windowDays !== undefined) {
      definitionId = crypto.randomUUID()
      yield* sql`
        INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, event_names, lookback_window_days)
        VALUES (${definitionId}, ${profileId}, ${`k_${definitionId.slice(0, 8)}`}, 'Sale', ${[`e-${definitionId}`]}, ${options.windowDays})`
    }
    const eventId = crypto.randomUUID()
    const id = crypto.randomUUID()
    yield* sql`
      WITH e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
        VALUES (${eventId}, ${profileId}, ${crypto.randomUUID()}, 'test', 'purchase', ${new Date(at)}, ${customerId})
        RETURNING profile_id, idempotency_key, id, occurred_at)
      INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
    yield* sql`
      INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, customer_id,
                               counts_as_cash, attribution_eligible)
      VALUES (${id}, ${profileId}, ${eventId}, ${definitionId}, 'purchase', ${new Date(at)}, ${customerId}, false, true)`
    // Inserted conversions wait in the credit queue; one credited already is out of it.
    if (options.pending !== true) yield* sql`DELETE FROM credit_queue WHERE conversion_id = ${id}`
    return id
  })

const isPending = (conversionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ pending: boolean }>`SELECT EXISTS (SELECT 1 FROM credit_queue WHERE conversion_id = ${conversionId}) AS pending`
    return row?.pending
  })

/** Row counts of everything these routes could write (or must not), for one profile. */
const tables = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{
      touches: number
      customers: number
      identifiers: number
      answers: number
      events: number
      conversions: number
      pending: number
      credits: number
      outbox: number
      jobs: number
    }>`
      SELECT (SELECT count(*)::int FROM touches WHERE profile_id = ${profileId}) AS touches,
             (SELECT count(*)::int FROM customers WHERE profile_id = ${profileId}) AS customers,
             (SELECT count(*)::int FROM customer_identifiers WHERE profile_id = ${profileId}) AS identifiers,
             (SELECT count(*)::int FROM declared_sources WHERE profile_id = ${profileId}) AS answers,
             (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId}) AS events,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId}) AS conversions,
             (SELECT count(*)::int FROM credit_queue WHERE profile_id = ${profileId}) AS pending,
             (SELECT count(*)::int FROM attribution_credits a JOIN conversions c ON c.id = a.conversion_id
              WHERE c.profile_id = ${profileId}) AS credits,
             (SELECT count(*)::int FROM outbox WHERE profile_id = ${profileId}) AS outbox,
             (SELECT count(*)::int FROM work_jobs WHERE profile_id = ${profileId}) AS jobs`
    if (row === undefined) throw new Error("no counts")
    return row
  })

const drain = Effect.flatMap(AttributionWorker, (worker) => worker.drainOnce)

/** The credited touch ids of a conversion under a model. */
const creditedTouches = (conversionId: string, model: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ touch_id: string }>`
      SELECT touch_id::text AS touch_id FROM attribution_credits
      WHERE conversion_id = ${conversionId} AND model = ${model} AND is_credited ORDER BY position`
    return rows.map((row) => row.touch_id)
  })

const iso = (ms: number) => new Date(ms).toISOString()

const referral = (ad: SyncedAd, customerRef: Record<string, string>, at: number, extra: Record<string, unknown> = {}) => ({
  idempotency_key: `ref-${crypto.randomUUID()}`,
  occurred_at: iso(at),
  ad_id: ad.adId,
  customer: customerRef,
  ...extra
})

/** An app-provisioned profile with the add-on off (connect-broker tier) and a key holding the scope. */
const brokerProfile = Effect.gen(function*() {
  const app = yield* registerApp("Partner data app")
  const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
  assert.strictEqual(created.status, 201, created.text)
  const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(
  serveApp(testSettings({ maxBodyBytes: 1_048_576 })).pipe(Layer.provide(manual)),
  { timeout: "180 seconds", excludeTestServices: true }
)("partner data", (it) => {
  describe("POST /api/v1/partner/ad-referrals", () => {
    it.effect("each referral becomes one synthetic touch joined by ctwa_referral, with the synced ad's names; the click id is stored, never answered", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const clickId = `CLID-${crypto.randomUUID()}`
        const at = Date.now() - 3 * DAY
        const body = {
          referrals: [
            referral(ad, { external_ref: "cust-1" }, at, { conversation_id: "conv-9", ctwa_clid: clickId }),
            referral(ad, { wa_id: "34600111222" }, at + 1000)
          ]
        }
        const response = yield* referrals(fixture.key, body)
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json, { data: { created: 2, duplicates: 0, recredit_queued: 0 } })
        assert.notInclude(response.text, clickId)

        const rows = yield* sql<any>`
          SELECT t.kind, t.join_method, t.channel, t.source, t.medium, t.source_system, t.idempotency_key,
                 t.campaign_external_id, t.campaign_name, t.ad_set_external_id, t.ad_set_name, t.ad_external_id, t.ad_name,
                 t.click_id_kind, t.click_id, t.payload, to_char(t.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at,
                 c.customer_key
          FROM touches t JOIN customers c ON c.id = t.customer_id
          WHERE t.profile_id = ${fixture.profileId} ORDER BY t.occurred_at`
        assert.lengthOf(rows, 2)
        const [first, second] = rows
        assert.deepStrictEqual(first, {
          kind: "synthetic",
          join_method: "ctwa_referral",
          channel: "paid_social",
          source: "adplatform",
          medium: "messaging",
          source_system: "partner_ad_referral",
          idempotency_key: body.referrals[0]?.idempotency_key,
          campaign_external_id: ad.campaignId,
          campaign_name: ad.campaignName,
          ad_set_external_id: ad.adSetId,
          ad_set_name: ad.adSetName,
          ad_external_id: ad.adId,
          ad_name: ad.adName,
          click_id_kind: "ctwa_clid",
          click_id: clickId,
          payload: { conversation_id: "conv-9" },
          at: iso(at),
          customer_key: "cust-1"
        })
        assert.strictEqual(second.customer_key, null)
        assert.strictEqual(second.click_id, null)
        // The wa_id became the keyless customer's phone identifier.
        const identifiers = yield* sql<{ kind: string; value: string }>`
          SELECT kind, value FROM customer_identifiers WHERE profile_id = ${fixture.profileId}`
        assert.deepStrictEqual(identifiers, [{ kind: "phone", value: "+34600111222" }])
        // No lead, no outcome, nothing for the outbox (nothing is sent anywhere).
        assert.deepInclude(yield* tables(fixture.profileId), { touches: 2, customers: 2, events: 0, conversions: 0, outbox: 0, jobs: 0 })
      }))

    it.effect("idempotent on idempotency_key: a repeat is the same touch, counted as a duplicate (also twice in one batch)", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const one = referral(ad, { external_ref: "cust-2", email: "Ana@Example.com" }, Date.now() - DAY)
        const first = yield* referrals(fixture.key, { referrals: [one, one] })
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json.data, { created: 1, duplicates: 1, recredit_queued: 0 })
        const before = yield* tables(fixture.profileId)
        assert.deepInclude(before, { touches: 1, customers: 1, identifiers: 1 })

        const other = referral(ad, { external_ref: "cust-2" }, Date.now() - DAY)
        const again = yield* referrals(fixture.key, { referrals: [one, other] })
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.json.data, { created: 1, duplicates: 1, recredit_queued: 0 })
        assert.deepInclude(yield* tables(fixture.profileId), { touches: 2, customers: 1, identifiers: 1 })

        // The first body under a key stands (first wins): another ad under the same key is a duplicate.
        const repeat = yield* referrals(fixture.key, { referrals: [{ ...one, occurred_at: iso(Date.now() - 2 * DAY) }] })
        assert.deepStrictEqual(repeat.json.data, { created: 0, duplicates: 1, recredit_queued: 0 })
        assert.strictEqual((yield* tables(fixture.profileId)).touches, 2)
      }))

    it.effect("422 unknown_ad when any ad is not one of the profile's synced ads: nothing of the batch is written", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const other = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const foreign = firstAd(yield* syncAds(other.profileId))
        const customerId = yield* customer(fixture.profileId, "cust-3")
        const conversionId = yield* conversion(fixture.profileId, customerId, Date.now() - DAY)
        const before = yield* tables(fixture.profileId)
        for (const stranger of [{ ...ad, adId: "never-synced" }, foreign]) {
          const response = yield* referrals(fixture.key, {
            referrals: [
              referral(ad, { external_ref: "cust-3" }, Date.now() - 2 * DAY),
              referral(stranger, { external_ref: "new-person", email: "new@example.com" }, Date.now() - 2 * DAY)
            ]
          })
          assert.strictEqual(response.status, 422, response.text)
          assert.strictEqual(response.json.error.code, "unknown_ad")
          assert.include(response.json.error.message, "body.referrals.1.ad_id")
          assert.include(response.json.error.message, stranger.adId)
        }
        assert.deepStrictEqual(yield* tables(fixture.profileId), before)
        assert.isFalse(yield* isPending(conversionId))
      }))

    it.effect("conversions of the customer whose lookback window holds the new touch are queued for credit; the worker credits the touch", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const now = Date.now()
        const customerId = yield* customer(fixture.profileId, "cust-4")
        const someoneElse = yield* customer(fixture.profileId, "cust-5")
        const inWindow = yield* conversion(fixture.profileId, customerId, now - 2 * DAY)
        const shortWindow = yield* conversion(fixture.profileId, customerId, now - DAY, { windowDays: 1 })
        const before = yield* conversion(fixture.profileId, customerId, now - 6 * DAY)
        const alsoInWindow = yield* conversion(fixture.profileId, customerId, now - 3 * DAY, { pending: true })
        const otherCustomer = yield* conversion(fixture.profileId, someoneElse, now - 2 * DAY)
        const response = yield* referrals(fixture.key, { referrals: [referral(ad, { external_ref: "cust-4" }, now - 5 * DAY)] })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.data, { created: 1, duplicates: 0, recredit_queued: 2 })
        assert.isTrue(yield* isPending(inWindow))
        assert.isFalse(yield* isPending(shortWindow), "a 1-day window does not reach a touch 4 days before")
        assert.isFalse(yield* isPending(before), "a conversion before the touch")
        assert.isTrue(yield* isPending(alsoInWindow), "already waiting: stays waiting, counted")
        assert.isFalse(yield* isPending(otherCustomer), "another customer's conversion")

        yield* drain
        assert.isFalse(yield* isPending(inWindow))
        const sql = yield* SqlClient
        const [touch] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM touches WHERE profile_id = ${fixture.profileId} AND source_system = 'partner_ad_referral'`
        assert.deepStrictEqual(yield* creditedTouches(inWindow, "last_touch"), [touch?.id])
      }))

    it.effect("a conversion 35 days after the touch (30-day default window) is not marked", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const now = Date.now()
        const customerId = yield* customer(fixture.profileId, "cust-6")
        const late = yield* conversion(fixture.profileId, customerId, now - DAY)
        const response = yield* referrals(fixture.key, { referrals: [referral(ad, { external_ref: "cust-6" }, now - 36 * DAY)] })
        assert.deepStrictEqual(response.json.data, { created: 1, duplicates: 0, recredit_queued: 0 })
        assert.isFalse(yield* isPending(late))
      }))

    it.effect("400 validation_error: an empty or oversized batch, a customer naming nobody, wa_id and phone disagreeing, a future time", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const ok = referral(ad, { external_ref: "x" }, Date.now() - DAY)
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ referrals: [] }, "body.referrals"],
          [{ referrals: Array.from({ length: 501 }, () => ok) }, "body.referrals"],
          [{ referrals: [ok, { ...ok, customer: {} }] }, "body.referrals.1.customer"],
          [{ referrals: [{ ...ok, customer: { wa_id: "34600111222", phone: "+34 600 999 999" } }] }, "body.referrals.0.customer"],
          [{ referrals: [{ ...ok, occurred_at: iso(Date.now() + DAY) }] }, "body.referrals.0.occurred_at"],
          [{ referrals: [{ ...ok, occurred_at: "yesterday" }] }, "body.referrals.0.occurred_at"],
          [{ referrals: [{ ...ok, customer: { wa_id: "not-a-number" } }] }, "body.referrals.0.customer.wa_id"]
        ]
        for (const [body, field] of cases) {
          for (const route of [referrals, preview]) {
            const response = yield* route(fixture.key, body)
            assert.strictEqual(response.status, 400, response.text)
            assert.strictEqual(response.json.error.code, "validation_error")
            assert.include(response.json.error.message, field)
          }
        }
        assert.deepInclude(yield* tables(fixture.profileId), { touches: 0, customers: 0 })
      }))

    it.effect("500 referrals in one batch are recorded", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ads = yield* syncAds(fixture.profileId, 3)
        const at = Date.now() - DAY
        const batch = Array.from({ length: 500 }, (_, i) => {
          const ad = ads[i % ads.length]
          if (ad === undefined) throw new Error("no ad")
          return referral(ad, { external_ref: `bulk-${i % 50}` }, at - i * 1000)
        })
        const previewed = yield* preview(fixture.key, { referrals: batch })
        assert.strictEqual(previewed.status, 200, previewed.text)
        assert.deepInclude(previewed.json.data, { referrals: 500, new_touches: 500, duplicates: 0, conversions_in_window: 0 })
        const response = yield* referrals(fixture.key, { referrals: batch })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.data, { created: 500, duplicates: 0, recredit_queued: 0 })
        assert.deepInclude(yield* tables(fixture.profileId), { touches: 500, customers: 50 })
      }))
  })

  describe("POST /api/v1/partner/ad-referrals/preview", () => {
    it.effect("counts re-credits per model on a hand-built journey, writes nothing, and agrees with the worker afterwards", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const now = Date.now()
        const start = now - 10 * DAY
        const customerId = yield* customer(fixture.profileId, "journey-1")
        const web = yield* webTouch(fixture.profileId, customerId, start, "organic_search")
        const conversionId = yield* conversion(fixture.profileId, customerId, start + 2 * DAY, { pending: true })
        yield* drain
        assert.deepStrictEqual(yield* creditedTouches(conversionId, "last_touch"), [web])
        // A second customer with no conversion, and a person not known yet: neither affects a conversion.
        yield* customer(fixture.profileId, "journey-2")
        const body = {
          referrals: [
            referral(ad, { external_ref: "journey-1" }, start + DAY, { ctwa_clid: "CLID-PREVIEW" }),
            referral(ad, { external_ref: "journey-2" }, start + DAY),
            referral(ad, { external_ref: "nobody-yet", email: "x@example.com" }, start + DAY)
          ]
        }
        const before = yield* tables(fixture.profileId)
        const response = yield* preview(fixture.key, body)
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json, {
          data: {
            referrals: 3,
            new_touches: 3,
            duplicates: 0,
            conversions_in_window: 1,
            recredits: { last_touch: 1, first_touch: 0, last_non_direct: 1, linear: 1, time_decay: 1, svc_model: 1 }
          }
        })
        assert.notInclude(response.text, "CLID-PREVIEW")
        assert.deepStrictEqual(yield* tables(fixture.profileId), before, "the preview writes nothing")
        assert.isFalse(yield* isPending(conversionId))

        // The write then does what the preview said.
        const written = yield* referrals(fixture.key, body)
        assert.deepStrictEqual(written.json.data, { created: 3, duplicates: 0, recredit_queued: 1 })
        yield* drain
        const sql = yield* SqlClient
        const [touch] = yield* sql<{ id: string }>`
          SELECT t.id::text AS id FROM touches t JOIN customers c ON c.id = t.customer_id
          WHERE t.profile_id = ${fixture.profileId} AND t.source_system = 'partner_ad_referral' AND c.customer_key = 'journey-1'`
        assert.deepStrictEqual(yield* creditedTouches(conversionId, "last_touch"), [touch?.id])
        assert.deepStrictEqual(yield* creditedTouches(conversionId, "first_touch"), [web])

        // Already recorded: the same batch previews as duplicates and re-credits nothing.
        const again = yield* preview(fixture.key, body)
        assert.deepStrictEqual(again.json.data, {
          referrals: 3,
          new_touches: 0,
          duplicates: 3,
          conversions_in_window: 0,
          recredits: { last_touch: 0, first_touch: 0, last_non_direct: 0, linear: 0, time_decay: 0, svc_model: 0 }
        })
      }))

    it.effect("a referral before the first touch changes first_touch, not last_touch; 422 unknown_ad as the write", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const now = Date.now()
        const customerId = yield* customer(fixture.profileId, "journey-3")
        yield* webTouch(fixture.profileId, customerId, now - 5 * DAY, "direct")
        yield* webTouch(fixture.profileId, customerId, now - 3 * DAY, "email")
        yield* conversion(fixture.profileId, customerId, now - 2 * DAY)
        const response = yield* preview(fixture.key, { referrals: [referral(ad, { external_ref: "journey-3" }, now - 9 * DAY)] })
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.data.recredits, {
          last_touch: 0,
          first_touch: 1,
          last_non_direct: 0,
          linear: 1,
          time_decay: 1,
          svc_model: 1
        })
        const unknown = yield* preview(fixture.key, { referrals: [referral({ ...ad, adId: "nope" }, { external_ref: "journey-3" }, now - DAY)] })
        assert.strictEqual(unknown.status, 422, unknown.text)
        assert.strictEqual(unknown.json.error.code, "unknown_ad")
      }))
  })

  describe("POST /api/v1/partner/declared-source", () => {
    it.effect("an unknown external_ref with email creates the customer; the answer becomes an organic_interaction touch at the answer time (201)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* seed
        const answeredAt = "2026-03-01T10:00:00.000Z"
        const response = yield* declare(fixture.key, {
          customer: { external_ref: "ds-1", email: " Eva@Example.com " },
          answer_key: "walk_in",
          answer_text: "I walked past the shop",
          wamid: "wamid.A1",
          answered_at: answeredAt
        })
        assert.strictEqual(response.status, 201, response.text)
        const data = response.json.data
        assert.deepStrictEqual(response.json.meta, { replayed: false })
        assert.deepStrictEqual(
          { ...data, answer: { ...data.answer, answer_id: "-", touch_id: "-" } },
          {
            recorded: true,
            reason: null,
            recredit_queued: 0,
            answer: {
              answer_id: "-",
              customer_key: "ds-1",
              answer_key: "walk_in",
              channel: "direct",
              answered_at: "2026-03-01T10:00:00.000000Z",
              touch_id: "-"
            }
          }
        )
        assert.notInclude(response.text, "eva@example.com")
        assert.notInclude(response.text, "walked past")
        const [touch] = yield* sql<any>`
          SELECT t.kind, t.channel, t.source, t.medium, t.join_method, t.source_system, c.customer_key,
                 to_char(t.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at
          FROM touches t JOIN customers c ON c.id = t.customer_id WHERE t.id = ${data.answer.touch_id}`
        assert.deepStrictEqual(touch, {
          kind: "organic_interaction",
          channel: "direct",
          source: "walk_in",
          medium: "declared",
          join_method: null,
          source_system: "partner_declared_source",
          customer_key: "ds-1",
          at: "2026-03-01T10:00:00Z"
        })
        const identifiers = yield* sql<{ kind: string; value: string }>`
          SELECT kind, value FROM customer_identifiers WHERE profile_id = ${fixture.profileId}`
        assert.deepStrictEqual(identifiers, [{ kind: "email", value: "eva@example.com" }])
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 1, touches: 1, answers: 1, events: 0, conversions: 0 })
      }))

    it.effect("a ref alone never creates a customer: 422 unknown_customer_ref, nothing written; a known ref alone is recorded", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const refused = yield* declare(fixture.key, { customer: { external_ref: "ds-unknown" }, answer_key: "instagram" })
        assert.strictEqual(refused.status, 422, refused.text)
        assert.strictEqual(refused.json.error.code, "unknown_customer_ref")
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 0, touches: 0, answers: 0 })

        yield* customer(fixture.profileId, "ds-known")
        const recorded = yield* declare(fixture.key, { customer: { external_ref: "ds-known" }, answer_key: "instagram" })
        assert.strictEqual(recorded.status, 201, recorded.text)
        assert.strictEqual(recorded.json.data.answer.channel, "organic_social")
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 1, touches: 1, answers: 1 })
      }))

    it.effect("wa_id names the person by phone (created when new, found again after); exactly one of external_ref or wa_id", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* seed
        const created = yield* declare(fixture.key, { customer: { wa_id: "5215512345678" }, answer_key: "tiktok" })
        assert.strictEqual(created.status, 201, created.text)
        assert.strictEqual(created.json.data.answer.customer_key, null)
        const identifiers = yield* sql<{ kind: string; value: string }>`
          SELECT kind, value FROM customer_identifiers WHERE profile_id = ${fixture.profileId}`
        assert.deepStrictEqual(identifiers, [{ kind: "phone", value: "+5215512345678" }])
        // The same person again (another message): the first answer stands.
        const second = yield* declare(fixture.key, { customer: { wa_id: "5215512345678" }, answer_key: "radio", wamid: "wamid.B2" })
        assert.strictEqual(second.status, 200, second.text)
        assert.deepStrictEqual(second.json, {
          data: { recorded: false, reason: "already_answered", answer: created.json.data.answer, recredit_queued: 0 },
          meta: { replayed: false }
        })
        const before = yield* tables(fixture.profileId)
        assert.deepInclude(before, { customers: 1, touches: 1, answers: 1 })
        for (
          const customerField of [
            { external_ref: "ds-2", wa_id: "5215512345678" },
            {},
            { email: "a@example.com" },
            { wa_id: "5215512345678", email: "a@example.com" }
          ]
        ) {
          const response = yield* declare(fixture.key, { customer: customerField, answer_key: "walk_in" })
          assert.strictEqual(response.status, 400, response.text)
          assert.strictEqual(response.json.error.code, "validation_error")
          assert.include(response.json.error.message, "body.customer")
        }
        assert.deepStrictEqual(yield* tables(fixture.profileId), before)
      }))

    it.effect("idempotent on wamid: a repeat answers the same answer and writes nothing; the wamid with another answer is 409", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const body = { customer: { external_ref: "ds-3", phone: "+34 600 222 333" }, answer_key: "referral_friend", wamid: "wamid.C3" }
        const first = yield* declare(fixture.key, body)
        assert.strictEqual(first.status, 201, first.text)
        const before = yield* tables(fixture.profileId)
        const again = yield* declare(fixture.key, { answer_key: "referral_friend", wamid: "wamid.C3", customer: { phone: "+34 600 222 333", external_ref: "ds-3" } })
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.json, {
          data: { recorded: true, reason: null, answer: first.json.data.answer, recredit_queued: 0 },
          meta: { replayed: true }
        })
        assert.deepStrictEqual(yield* tables(fixture.profileId), before)
        const conflict = yield* declare(fixture.key, { ...body, answer_key: "billboard" })
        assert.strictEqual(conflict.status, 409, conflict.text)
        assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
        assert.deepStrictEqual(yield* tables(fixture.profileId), before)
      }))

    it.effect("one answer per customer, first wins: a different answer later is 200 recorded: false, reason already_answered", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const first = yield* declare(fixture.key, { customer: { external_ref: "ds-4", email: "d4@example.com" }, answer_key: "google_search", wamid: "w-1" })
        assert.strictEqual(first.status, 201, first.text)
        const second = yield* declare(fixture.key, { customer: { external_ref: "ds-4" }, answer_key: "facebook", wamid: "w-2" })
        assert.strictEqual(second.status, 200, second.text)
        assert.deepStrictEqual(second.json.data, {
          recorded: false,
          reason: "already_answered",
          answer: first.json.data.answer,
          recredit_queued: 0
        })
        assert.strictEqual(second.json.data.answer.answer_key, "google_search")
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 1, touches: 1, answers: 1 })
      }))

    it.effect("422 unknown_answer_key for an answer outside the vocabulary: no customer is created", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const response = yield* declare(fixture.key, { customer: { external_ref: "ds-5", email: "d5@example.com" }, answer_key: "carrier_pigeon" })
        assert.strictEqual(response.status, 422, response.text)
        assert.strictEqual(response.json.error.code, "unknown_answer_key")
        assert.include(response.json.error.message, "walk_in")
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 0, identifiers: 0, touches: 0, answers: 0 })
      }))

    it.effect("a national id anywhere in the body is 400 invalid_parameter and nothing is stored", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const base = { customer: { external_ref: "ds-6", email: "d6@example.com" }, answer_key: "other" }
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ ...base, national_id: "12345678Z" }, "body.national_id"],
          [{ ...base, customer: { ...base.customer, dni: "X1234567L" } }, "body.customer.dni"],
          [{ ...base, answer_text: "Me lo dijo un amigo, mi DNI es 12345678Z." }, "body.answer_text"],
          [{ ...base, answer_text: "ssn: 123-45-6789" }, "body.answer_text"],
          [{ ...base, answer_text: "CPF 123.456.789-09" }, "body.answer_text"]
        ]
        for (const [body, field] of cases) {
          const response = yield* declare(fixture.key, body)
          assert.strictEqual(response.status, 400, response.text)
          assert.strictEqual(response.json.error.code, "invalid_parameter")
          assert.include(response.json.error.message, field)
          assert.notInclude(response.text, "12345678Z")
        }
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 0, identifiers: 0, touches: 0, answers: 0 })
        const clean = yield* declare(fixture.key, { ...base, answer_text: "Saw you on Instagram in 2024, room 12" })
        assert.strictEqual(clean.status, 201, clean.text)
      }))

    it.effect("an answer before a conversion of the customer marks it for re-credit; the worker credits the declared touch", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const now = Date.now()
        const customerId = yield* customer(fixture.profileId, "ds-7")
        yield* webTouch(fixture.profileId, customerId, now - 6 * DAY, "paid_search")
        const conversionId = yield* conversion(fixture.profileId, customerId, now - DAY)
        const response = yield* declare(fixture.key, {
          customer: { external_ref: "ds-7" },
          answer_key: "referral_friend",
          answered_at: iso(now - 2 * DAY)
        })
        assert.strictEqual(response.status, 201, response.text)
        assert.strictEqual(response.json.data.recredit_queued, 1)
        assert.isTrue(yield* isPending(conversionId))
        yield* drain
        assert.deepStrictEqual(yield* creditedTouches(conversionId, "last_touch"), [response.json.data.answer.touch_id])
      }))
  })

  describe("access", () => {
    it.effect("connect-broker profile: the writes are 409 entitlement_required and write nothing; the preview answers empty", () =>
      Effect.gen(function*() {
        const fixture = yield* brokerProfile
        const ad = firstAd(yield* syncAds(fixture.profileId))
        const body = { referrals: [referral(ad, { external_ref: "b-1", email: "b@example.com" }, Date.now() - DAY)] }
        const refused = yield* referrals(fixture.key, body)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "entitlement_required")
        assert.include(refused.json.error.message, "svc_attribution")
        const declared = yield* declare(fixture.key, { customer: { external_ref: "b-1", email: "b@example.com" }, answer_key: "walk_in" })
        assert.strictEqual(declared.status, 409, declared.text)
        assert.strictEqual(declared.json.error.code, "entitlement_required")
        const previewed = yield* preview(fixture.key, body)
        assert.strictEqual(previewed.status, 200, previewed.text)
        assert.deepStrictEqual(previewed.json.data, {
          referrals: 1,
          new_touches: 0,
          duplicates: 0,
          conversions_in_window: 0,
          recredits: { last_touch: 0, first_touch: 0, last_non_direct: 0, linear: 0, time_decay: 0, svc_model: 0 }
        })
        assert.deepInclude(yield* tables(fixture.profileId), { customers: 0, identifiers: 0, touches: 0, answers: 0 })
      }))

    it.effect("without attribution:write: 403 insufficient_scope naming it; without a credential: 401", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["events:write", "conversions:read"], rateLimitPerMinute: 10_000 })
        const ad = firstAd(yield* syncAds(profile.profileId))
        const body = { referrals: [referral(ad, { external_ref: "s-1" }, Date.now() - DAY)] }
        for (
          const response of [
            yield* referrals(key, body),
            yield* preview(key, body),
            yield* declare(key, { customer: { wa_id: "34600111222" }, answer_key: "walk_in" })
          ]
        ) {
          assert.strictEqual(response.status, 403, response.text)
          assert.strictEqual(response.json.error.code, "insufficient_scope")
          assert.include(response.json.error.message, "attribution:write")
        }
        const anonymous = yield* referrals("svc_live_nope", body)
        assert.strictEqual(anonymous.status, 401)
        assert.deepInclude(yield* tables(profile.profileId), { customers: 0, touches: 0 })
      }))
  })
})
