/**
 * Journeys, the customer and visitor lists, and erasure through HTTP (decision 0038), on the
 * PostgreSQL of DATABASE_URL or embedded PGlite.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { defineConversion, ingest, retract } from "../support/events.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const PROJECTED_KEYS = [
  "ad", "ad_set", "at", "campaign", "channel", "click_id_kind", "credit_model", "credit_share", "in_window", "is_credited",
  "join_method", "kind", "medium", "source", "touch_id"
]
const CONVERSION_META_KEYS = ["conversion_key", "credit_model", "currency", "customer_key", "occurred_at", "outcome_event_id", "value_amount"]

const get = (key: string, path: string) => call(path, { headers: { authorization: `Bearer ${key}` } })
const post = (key: string, path: string, body: unknown) =>
  call(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })

interface World extends SeededProfile {
  /** conversions:read, events:write, attribution:write */
  readonly projectedKey: string
  /** the same plus customers:read and visitors:read */
  readonly personKey: string
  readonly customerId: string
  readonly outcomeEventId: string
  readonly conversionId: string
  readonly touches: ReadonlyArray<string>
}

/** A customer with three touches (the third after the purchase), one purchase, and last_touch credit rows. */
const seedWorld = Effect.fn("test.seedWorld")(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const base = ["conversions:read", "events:write", "attribution:write"]
  const { key: projectedKey } = yield* seedApiKey(profile, { scopes: base, rateLimitPerMinute: 10_000 })
  const { key: personKey } = yield* seedApiKey(profile, {
    scopes: [...base, "customers:read", "visitors:read"],
    rateLimitPerMinute: 10_000
  })
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  const answer = yield* ingest(projectedKey, {
    event_name: "purchase",
    idempotency_key: "order/7 x",
    occurred_at: "2026-03-10T12:00:00Z",
    properties: { value: "42.50", currency: "EUR", subject_ref: "pet-1" },
    user_traits: { external_id: "cust-1", email: "ana@example.com" }
  })
  assert.strictEqual(answer.status, 200, JSON.stringify(answer.json))
  const { outcome_event_id: outcomeEventId, conversion_id: conversionId } = answer.json.data
  const [customer] = yield* sql<{ id: string }>`SELECT customer_id AS id FROM outcome_events WHERE id = ${outcomeEventId}`
  const customerId = customer!.id
  const adSetId = crypto.randomUUID()
  const campaignId = crypto.randomUUID()
  yield* sql`INSERT INTO ad_campaigns (id, profile_id, platform_id, name) VALUES (${campaignId}, ${profile.profileId}, 'cmp-1', 'Spring')`
  yield* sql`INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name) VALUES (${adSetId}, ${profile.profileId}, ${campaignId}, 'set-1', 'Set')`
  yield* sql`
    INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name, creative_thumbnail_url)
    VALUES (${crypto.randomUUID()}, ${profile.profileId}, ${adSetId}, 'ad-1', 'Ad one', 'https://cdn.example/ad-1.jpg')`
  const touches: Array<string> = []
  const rows = [
    { at: "2026-03-01T09:00:00Z", channel: "organic_search", ad: null },
    { at: "2026-03-08T09:00:00Z", channel: "paid_search", ad: "ad-1" },
    { at: "2026-03-12T09:00:00Z", channel: "direct", ad: null }
  ]
  for (const row of rows) {
    const id = crypto.randomUUID()
    touches.push(id)
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, source, medium, customer_id, anonymous_id, session_id,
                           join_method, campaign_external_id, campaign_name, ad_set_external_id, ad_set_name, ad_external_id,
                           ad_name, click_id_kind, click_id, url, path, device, browser, os, country, city)
      VALUES (${id}, ${profile.profileId}, 'web_touch', ${row.at}::timestamptz, ${row.channel}, 'google', 'cpc', ${customerId},
              'anon-1', 'sess-1', 'anonymous_id', ${row.ad === null ? null : "cmp-1"}, ${row.ad === null ? null : "Spring"},
              ${row.ad === null ? null : "set-1"}, ${row.ad === null ? null : "Set"}, ${row.ad}, ${row.ad === null ? null : "Ad one"},
              ${row.ad === null ? null : "gclid"}, ${row.ad === null ? null : "SECRET-CLICK-VALUE"},
              'https://shop.example/p?email=ana@example.com', '/p', 'desktop', 'Firefox', 'Linux', 'ES', 'Madrid')`
  }
  // last_touch: the paid touch holds the credit; the organic one is on the path with no weight.
  // Credit rows sit in their conversion's month (migration 0073).
  // Each names its touch's time (migration 0075).
  yield* sql`
    INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited,
                                     in_window)
    SELECT c.profile_id, c.id, c.occurred_at, 'last_touch', t.id, t.occurred_at, r.position, r.share, r.credited, true
    FROM (VALUES (${touches[0]!}::uuid, 0, 0, false), (${touches[1]!}::uuid, 1, 1, true)) AS r(touch_id, position, share, credited)
    JOIN conversions c ON c.id = ${conversionId}
    JOIN touches t ON t.id = r.touch_id`
  return { ...profile, projectedKey, personKey, customerId, outcomeEventId, conversionId, touches } satisfies World
})

/** The fixtures write credit rows themselves: the background worker must not credit the same conversions meanwhile. */
const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings()).pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })("customers and journeys", (it) => {
  describe("GET /api/v1/conversions/:id/journey", () => {
    it.effect("projected rows: exactly the spec's fields, the conversion's credit, touches up to the conversion and its outcome row", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const response = yield* get(world.projectedKey, `/api/v1/conversions/${world.outcomeEventId}/journey`)
        assert.strictEqual(response.status, 200, response.text)
        const { data, meta, pagination } = response.json
        assert.deepStrictEqual(Object.keys(meta.conversion).sort(), CONVERSION_META_KEYS)
        assert.deepStrictEqual(meta.conversion, {
          outcome_event_id: world.outcomeEventId,
          conversion_key: "sale",
          occurred_at: "2026-03-10T12:00:00.000000Z",
          value_amount: "42.5",
          currency: "EUR",
          credit_model: "last_touch",
          customer_key: "cust-1"
        })
        assert.deepStrictEqual(data.map((row: any) => row.touch_id), [world.touches[0], world.touches[1], world.outcomeEventId])
        for (const row of data) assert.deepStrictEqual(Object.keys(row).sort(), PROJECTED_KEYS)
        assert.deepStrictEqual(data[1], {
          touch_id: world.touches[1],
          kind: "web_touch",
          at: "2026-03-08T09:00:00.000000Z",
          channel: "paid_search",
          source: "google",
          medium: "cpc",
          campaign: { external_id: "cmp-1", name: "Spring" },
          ad_set: { external_id: "set-1", name: "Set" },
          ad: { external_id: "ad-1", name: "Ad one", creative_thumbnail_url: "https://cdn.example/ad-1.jpg" },
          click_id_kind: "gclid",
          join_method: "anonymous_id",
          is_credited: true,
          credit_share: 1,
          credit_model: "last_touch",
          in_window: true
        })
        assert.include(data[0], { is_credited: false, credit_share: 0, in_window: true })
        assert.include(data[2], { kind: "outcome", channel: null, is_credited: false, credit_share: 0, in_window: false })
        assert.deepStrictEqual(pagination, { has_next: false, cursor: null })
        for (const secret of ["SECRET-CLICK-VALUE", "ana@example.com", "anon-1", "Madrid", world.customerId]) {
          assert.notInclude(response.text, secret)
        }
      }))

    it.effect("found by conversion_id and by the URL-encoded idempotency key; other models read their own rows", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const byConversion = yield* get(world.projectedKey, `/api/v1/conversions/${world.conversionId}/journey`)
        const byKey = yield* get(world.projectedKey, `/api/v1/conversions/${encodeURIComponent("order/7 x")}/journey`)
        assert.strictEqual(byConversion.status, 200)
        assert.deepStrictEqual(byKey.json, byConversion.json)
        const linear = yield* get(world.projectedKey, `/api/v1/conversions/${world.conversionId}/journey?model=linear`)
        assert.strictEqual(linear.json.meta.conversion.credit_model, "linear")
        for (const row of linear.json.data) assert.include(row, { credit_model: "linear", is_credited: false, credit_share: 0 })
      }))

    it.effect("with customers:read: full rows and customer_profile_id, and the read is in the PII access log", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const response = yield* get(world.personKey, `/api/v1/conversions/${world.outcomeEventId}/journey`)
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.json.meta.conversion.customer_profile_id, world.customerId)
        assert.include(response.json.data[0], { anonymous_id: "anon-1", city: "Madrid", customer_profile_id: world.customerId })
        assert.notInclude(response.text, "SECRET-CLICK-VALUE")
        const logged = yield* sql<{ route: string; result: string }>`
          SELECT route, result FROM pii_access_log WHERE profile_id = ${world.profileId}`
        assert.deepStrictEqual(logged.map((row) => ({ ...row })), [{ route: "GET /api/v1/conversions/:id/journey", result: "allowed" }])
      }))

    it.effect("no identity: 200 with no rows under conversions:read, 409 invalid_state with customers:read; unknown and retracted: 404", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const anonymous = yield* ingest(world.projectedKey, { event_name: "purchase", idempotency_key: "nobody" })
        const id = anonymous.json.data.outcome_event_id
        const projected = yield* get(world.projectedKey, `/api/v1/conversions/${id}/journey`)
        assert.strictEqual(projected.status, 200)
        assert.deepStrictEqual(projected.json.data, [])
        assert.isNull(projected.json.meta.conversion.customer_key)
        const full = yield* get(world.personKey, `/api/v1/conversions/${id}/journey`)
        assert.strictEqual(full.status, 409)
        assert.strictEqual(full.json.error.code, "invalid_state")
        const unknown = yield* get(world.projectedKey, `/api/v1/conversions/${crypto.randomUUID()}/journey`)
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.json.error.code, "conversion_not_found")
        assert.strictEqual((yield* retract(world.projectedKey, { idempotency_key: "nobody", reason: "test" })).status, 200)
        const retracted = yield* get(world.projectedKey, `/api/v1/conversions/${id}/journey`)
        assert.strictEqual(retracted.status, 404)
        assert.strictEqual(retracted.json.error.code, "conversion_not_found")
      }))

    it.effect("pages with cursor and limit; bad limit, model and cursor are 400 invalid_parameter naming them", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const path = `/api/v1/conversions/${world.outcomeEventId}/journey`
        const first = yield* get(world.projectedKey, `${path}?limit=2`)
        assert.strictEqual(first.json.data.length, 2)
        assert.isTrue(first.json.pagination.has_next)
        const second = yield* get(world.projectedKey, `${path}?limit=2&cursor=${first.json.pagination.cursor}`)
        assert.deepStrictEqual(second.json.data.map((row: any) => row.touch_id), [world.outcomeEventId])
        assert.deepStrictEqual(second.json.pagination, { has_next: false, cursor: null })
        for (const [query, name] of [["limit=0", "limit"], ["limit=101", "limit"], ["model=best", "model"], ["cursor=zzz", "cursor"]]) {
          const response = yield* get(world.projectedKey, `${path}?${query}`)
          assert.strictEqual(response.status, 400, query)
          assert.strictEqual(response.json.error.code, "invalid_parameter")
          assert.include(response.json.error.message, name)
        }
      }))
  })

  describe("GET /api/v1/customers/journey", () => {
    it.effect("every touch and outcome of the person, oldest first, with meta.person; merged customers resolve to the survivor", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const merged = crypto.randomUUID()
        yield* sql`INSERT INTO customers (id, profile_id, customer_key, merged_into_id) VALUES (${merged}, ${world.profileId}, 'old-1', ${world.customerId})`
        const inherited = crypto.randomUUID()
        yield* sql`
          INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id)
          VALUES (${inherited}, ${world.profileId}, 'web_touch', '2026-02-01T00:00:00Z', 'email', ${merged})`
        const response = yield* get(world.projectedKey, "/api/v1/customers/journey?customer_key=cust-1")
        assert.strictEqual(response.status, 200, response.text)
        const { data, meta } = response.json
        assert.deepStrictEqual(
          data.map((row: any) => [row.touch_id, row.kind]),
          [[inherited, "inherited"], [world.touches[0], "web_touch"], [world.touches[1], "web_touch"], [world.outcomeEventId, "outcome"], [world.touches[2], "web_touch"]]
        )
        for (const row of data) assert.deepStrictEqual(Object.keys(row).sort(), PROJECTED_KEYS)
        assert.deepStrictEqual(meta.person, {
          customer_key: "cust-1",
          conversion_count: 1,
          touch_count: 4,
          first_touch_at: "2026-02-01T00:00:00.000000Z",
          last_touch_at: "2026-03-12T09:00:00.000000Z",
          conversions: [{
            outcome_event_id: world.outcomeEventId,
            conversion_id: world.conversionId,
            conversion_key: "sale",
            occurred_at: "2026-03-10T12:00:00.000000Z",
            value_amount: "42.5",
            currency: "EUR",
            is_first_payment: true
          }]
        })
        const bySurvivor = yield* get(world.projectedKey, "/api/v1/customers/journey?customer_key=old-1")
        assert.strictEqual(bySurvivor.status, 200)
        assert.deepStrictEqual(bySurvivor.json, response.json)
      }))

    it.effect("email and phone need customers:read; with it meta.person carries names and identifiers; unknown or foreign: 404", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const other = yield* seedWorld()
        const refused = yield* get(world.projectedKey, "/api/v1/customers/journey?email=ana@example.com")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const byEmail = yield* get(world.personKey, `/api/v1/customers/journey?email=${encodeURIComponent(" ANA@example.com")}`)
        assert.strictEqual(byEmail.status, 200, byEmail.text)
        assert.strictEqual(byEmail.json.meta.person.customer_profile_id, world.customerId)
        assert.deepStrictEqual(byEmail.json.meta.person.identifiers, [{ type: "email", value: "ana@example.com" }])
        assert.include(byEmail.json.meta.person, { first_name: null, last_name: null })
        for (const query of ["customer_key=nobody", `customer_key=cust-1&email=x@example.com`, ""]) {
          const response = yield* get(world.projectedKey, `/api/v1/customers/journey?${query}`)
          assert.include([404, 400], response.status, query)
        }
        // Another profile's person with the same key is not this profile's.
        yield* get(other.projectedKey, "/api/v1/customers/journey?customer_key=cust-1")
        const foreign = yield* get(world.projectedKey, `/api/v1/conversions/${other.outcomeEventId}/journey`)
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.json.error.code, "conversion_not_found")
        const unknown = yield* get(world.projectedKey, "/api/v1/customers/journey?customer_key=nobody")
        assert.strictEqual(unknown.json.error.code, "customer_not_found")
      }))
  })

  describe("person lists", () => {
    it.effect("GET /api/v1/customers and /visitors need their scopes, cost 3 units, and are logged", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const customers = yield* get(world.personKey, "/api/v1/customers")
        assert.strictEqual(customers.status, 200, customers.text)
        assert.strictEqual(customers.json.data.length, 1)
        assert.include(customers.json.data[0], { customer_profile_id: world.customerId, customer_key: "cust-1", touch_count: 3, conversion_count: 1 })
        const visitors = yield* get(world.personKey, "/api/v1/visitors")
        assert.strictEqual(visitors.status, 200, visitors.text)
        assert.deepStrictEqual(visitors.json.data.map((row: any) => [row.anonymous_id, row.touch_count, row.customer_key]), [["anon-1", 3, "cust-1"]])
        const journey = yield* get(world.personKey, `/api/v1/customers/${world.customerId}/journey`)
        assert.strictEqual(journey.status, 200)
        assert.strictEqual(journey.json.data.length, 4)
        for (const path of ["/api/v1/customers", "/api/v1/visitors", `/api/v1/customers/${world.customerId}/journey`]) {
          const refused = yield* get(world.projectedKey, path)
          assert.strictEqual(refused.status, 403, path)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
        }
        const logged = yield* sql<{ route: string }>`
          SELECT route FROM pii_access_log WHERE profile_id = ${world.profileId} AND result = 'allowed' ORDER BY occurred_at`
        assert.deepStrictEqual(logged.map((row) => row.route), [
          "GET /api/v1/customers",
          "GET /api/v1/visitors",
          "GET /api/v1/customers/:id/journey"
        ])
        // Heavy reads cost 3 units: two calls in one rate window differ by 3. Measured on a key of
        // 120 a minute (a unit back every 0.5 s), so a loaded machine's slow pair still sees the
        // difference; a pair split by a refill is measured again.
        const { key: meteredKey } = yield* seedApiKey(world, {
          scopes: ["conversions:read", "customers:read", "visitors:read"],
          rateLimitPerMinute: 120
        })
        for (const path of ["/api/v1/customers", "/api/v1/visitors", `/api/v1/customers/${world.customerId}/journey`]) {
          let cost: number | undefined
          for (let attempt = 0; attempt < 3 && cost === undefined; attempt++) {
            const a = yield* get(meteredKey, path)
            const b = yield* get(meteredKey, path)
            const spent = Number(a.headers.get("x-ratelimit-remaining")) - Number(b.headers.get("x-ratelimit-remaining"))
            if (spent > 0) cost = spent
          }
          assert.strictEqual(cost, 3, path)
        }
      }))

    it.effect("healthcare family (S5.5): person reads answer 403 whatever the scopes; projected journeys still work", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        yield* sql`UPDATE workspaces SET is_healthcare_agency = true WHERE id = ${world.workspaceId}`
        for (const path of ["/api/v1/customers", "/api/v1/visitors", `/api/v1/customers/${world.customerId}/journey`]) {
          const refused = yield* get(world.personKey, path)
          assert.strictEqual(refused.status, 403, path)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
        }
        const journey = yield* get(world.personKey, `/api/v1/conversions/${world.outcomeEventId}/journey`)
        assert.strictEqual(journey.status, 200)
        assert.notProperty(journey.json.meta.conversion, "customer_profile_id")
        for (const row of journey.json.data) assert.deepStrictEqual(Object.keys(row).sort(), PROJECTED_KEYS)
        const byEmail = yield* get(world.personKey, "/api/v1/customers/journey?email=ana@example.com")
        assert.strictEqual(byEmail.status, 403)
      }))
  })

  describe("erasure", () => {
    it.effect("erases the person: receipt, personal data deleted, conversions kept without a person; a repeat answers the same receipt", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const body = { request_ref: "gdpr-1", customer_key: "cust-1", reason: "data subject request" }
        const first = yield* post(world.projectedKey, "/api/v1/customers/erasures", body)
        assert.strictEqual(first.status, 200, first.text)
        const receipt = first.json.data
        assert.deepStrictEqual(Object.keys(receipt).sort(), ["completed_at", "customer_key", "erasure_id", "reason", "request_ref", "requested_at", "status"])
        assert.include(receipt, { request_ref: "gdpr-1", status: "completed", customer_key: "cust-1", reason: "data subject request" })
        assert.isString(receipt.completed_at)
        assert.notInclude(first.text, world.customerId)

        const [customer] = yield* sql<any>`SELECT customer_key, erased_at IS NOT NULL AS erased FROM customers WHERE id = ${world.customerId}`
        assert.deepStrictEqual({ ...customer }, { customer_key: null, erased: true })
        const [left] = yield* sql<any>`
          SELECT (SELECT count(*)::int FROM customer_identifiers WHERE customer_id = ${world.customerId}) AS identifiers,
                 (SELECT count(*)::int FROM touches WHERE profile_id = ${world.profileId} AND (customer_id IS NOT NULL OR anonymous_id IS NOT NULL OR click_id IS NOT NULL OR url IS NOT NULL)) AS touches,
                 (SELECT count(*)::int FROM conversions WHERE id = ${world.conversionId} AND customer_id IS NULL AND subject_ref IS NULL) AS personless,
                 (SELECT count(*)::int FROM attribution_credits WHERE conversion_id = ${world.conversionId}) AS credits`
        assert.deepStrictEqual({ ...left }, { identifiers: 0, touches: 0, personless: 1, credits: 2 })

        const journey = yield* get(world.projectedKey, "/api/v1/customers/journey?customer_key=cust-1")
        assert.strictEqual(journey.status, 404)
        assert.strictEqual(journey.json.error.code, "customer_not_found")
        const conversionJourney = yield* get(world.projectedKey, `/api/v1/conversions/${world.outcomeEventId}/journey`)
        assert.deepStrictEqual(conversionJourney.json.data, [])

        const repeat = yield* post(world.projectedKey, "/api/v1/customers/erasures", body)
        assert.deepStrictEqual(repeat.json, first.json)
        const reused = yield* post(world.projectedKey, "/api/v1/customers/erasures", { request_ref: "gdpr-1", customer_key: "someone-else" })
        assert.strictEqual(reused.status, 400)
        assert.strictEqual(reused.json.error.code, "invalid_parameter")
        const again = yield* post(world.projectedKey, "/api/v1/customers/erasures", { request_ref: "gdpr-2", customer_key: "cust-1" })
        assert.strictEqual(again.status, 404)
        assert.strictEqual(again.json.error.code, "customer_not_found")

        const read = yield* get(world.projectedKey, `/api/v1/customers/erasures/${receipt.erasure_id}`)
        assert.deepStrictEqual(read.json, first.json)
        const unknown = yield* get(world.projectedKey, `/api/v1/customers/erasures/${crypto.randomUUID()}`)
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.json.error.code, "erasure_not_found")
        const receipts = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM customer_erasures WHERE profile_id = ${world.profileId}`
        assert.strictEqual(receipts[0]!.count, 1)
      }))

    it.effect("works without the attribution add-on (an app-provisioned profile on the connect-broker tier)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const appId = crypto.randomUUID()
        yield* sql`
          INSERT INTO oauth_apps (id, name, client_id, client_secret_hash, jwt_secret_encrypted)
          VALUES (${appId}, 'Partner', ${`client-${appId}`}, 'x', 'x')`
        yield* sql`UPDATE profiles SET provisioned_by_app_id = ${appId} WHERE id = ${world.profileId}`
        const { key } = yield* seedApiKey(world, { scopes: ["attribution:write"], rateLimitPerMinute: 1000 })
        const erased = yield* post(key, "/api/v1/customers/erasures", { request_ref: "broker-1", customer_key: "cust-1" })
        assert.strictEqual(erased.status, 200, erased.text)
        const [customer] = yield* sql<{ erased: boolean }>`SELECT erased_at IS NOT NULL AS erased FROM customers WHERE id = ${world.customerId}`
        assert.isTrue(customer!.erased)
      }))

    it.effect("a session gets 403 api_key_required; no selector, two selectors, or an unknown person change nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const session = yield* seedMemberSession(world, "owner")
        const bySession = yield* call(`/api/v1/customers/erasures?profile_id=${world.profileId}`, {
          method: "POST",
          headers: { ...session.headers, "content-type": "application/json" },
          body: JSON.stringify({ request_ref: "s-1", customer_key: "cust-1" })
        })
        assert.strictEqual(bySession.status, 403, bySession.text)
        assert.strictEqual(bySession.json.error.code, "api_key_required")
        for (const body of [
          { request_ref: "bad-1" },
          { request_ref: "bad-2", customer_key: "cust-1", email: "ana@example.com" },
          { request_ref: "bad-3", identifier: { type: "passport", value: "X" } }
        ]) {
          const response = yield* post(world.projectedKey, "/api/v1/customers/erasures", body)
          assert.strictEqual(response.status, 400, JSON.stringify(body))
        }
        const unknown = yield* post(world.projectedKey, "/api/v1/customers/erasures", { request_ref: "u-1", email: "nobody@example.com" })
        assert.strictEqual(unknown.status, 404)
        const [state] = yield* sql<any>`
          SELECT (SELECT count(*)::int FROM customer_erasures WHERE profile_id = ${world.profileId}) AS receipts,
                 (SELECT count(*)::int FROM customers WHERE profile_id = ${world.profileId} AND erased_at IS NOT NULL) AS erased`
        assert.deepStrictEqual({ ...state }, { receipts: 0, erased: 0 })
      }))
  })

  describe("object-level authorization", () => {
    it.effect("another profile's conversion, customer, key and receipt answer exactly what unknown ones do, and nothing changes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const mine = yield* seedWorld()
        const theirs = yield* seedWorld()
        yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${crypto.randomUUID()}, ${theirs.profileId}, 'only-theirs')`
        const theirReceipt = yield* post(theirs.projectedKey, "/api/v1/customers/erasures", { request_ref: "r-1", customer_key: "cust-1" })
        assert.strictEqual(theirReceipt.status, 200)
        const unknown = crypto.randomUUID()
        const pairs: ReadonlyArray<readonly [string, string]> = [
          [`/api/v1/conversions/${theirs.conversionId}/journey`, `/api/v1/conversions/${unknown}/journey`],
          [`/api/v1/customers/${theirs.customerId}/journey`, `/api/v1/customers/${unknown}/journey`],
          [`/api/v1/customers/erasures/${theirReceipt.json.data.erasure_id}`, `/api/v1/customers/erasures/${unknown}`],
          ["/api/v1/customers/journey?customer_key=only-theirs", "/api/v1/customers/journey?customer_key=nobody-at-all"]
        ]
        for (const [foreign, missing] of pairs) {
          const a = yield* get(mine.personKey, foreign)
          const b = yield* get(mine.personKey, missing)
          assert.strictEqual(a.status, 404, foreign)
          assert.strictEqual(withoutRequestId(a.text), withoutRequestId(b.text), foreign)
        }
        const erase = yield* post(mine.projectedKey, "/api/v1/customers/erasures", { request_ref: "x-1", customer_key: "only-theirs" })
        assert.strictEqual(erase.status, 404)
        const [state] = yield* sql<any>`
          SELECT count(*)::int AS live FROM customers WHERE profile_id = ${theirs.profileId} AND customer_key = 'only-theirs' AND erased_at IS NULL`
        assert.strictEqual(state.live, 1)
      }))
  })
})
