/** `GET /api/v1/outcomes/recorded` through HTTP (decision 0044). */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings } from "../support/app.ts"
import { defineConversion, ingest } from "../support/events.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const get = (key: string, query = "") => call(`/api/v1/outcomes/recorded${query}`, { headers: { authorization: `Bearer ${key}` } })

/** A profile with three recorded outcomes whose outbox rows are settled, a minute apart, oldest first. */
const seedWorld = Effect.fn("test.seedReplayWorld")(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const { key: writer } = yield* seedApiKey(profile, { scopes: ["events:write", "attribution:write"], rateLimitPerMinute: 1000 })
  const { key: reader } = yield* seedApiKey(profile, { scopes: ["conversions:read"], rateLimitPerMinute: 1000 })
  const { key: personReader } = yield* seedApiKey(profile, { scopes: ["customers:read"], rateLimitPerMinute: 1000 })
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  const ids: Array<string> = []
  for (const [index, body] of [
    { event_name: "purchase", properties: { value: "12.50", currency: "EUR" }, user_traits: { external_id: "c-1", email: "ana@example.com" } },
    { event_name: "signup", user_traits: { external_id: "c-2" } },
    { event_name: "purchase", properties: { value: "3" } }
  ].entries()) {
    const answer = yield* ingest(writer, { ...body, occurred_at: `2026-03-0${index + 1}T10:00:00Z` })
    assert.strictEqual(answer.status, 200, answer.text)
    ids.push(answer.json.data.outcome_event_id)
    yield* sql`
      UPDATE outbox SET created_at = now() - make_interval(mins => ${10 - index})
      WHERE profile_id = ${profile.profileId} AND payload->'data'->>'outcome_event_id' = ${answer.json.data.outcome_event_id}`
  }
  return { ...profile, writer, reader, personReader, ids }
})

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("GET /api/v1/outcomes/recorded", (it) => {
  describe("replay", () => {
    it.effect("answers the events in order from a cursor; the cursor is where to continue, also at the end", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const first = yield* get(world.reader, "?limit=2")
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json.data.map((event: any) => event.data.outcome_event_id), world.ids.slice(0, 2))
        assert.isTrue(first.json.pagination.has_next)
        const event = first.json.data[0]
        assert.deepStrictEqual(Object.keys(event).sort(), ["created_at", "data", "id", "type"])
        assert.strictEqual(event.type, "outcome.recorded")
        assert.deepStrictEqual(Object.keys(event.data).sort(), [
          "conversion_id", "currency", "customer_key", "occurred_at", "outcome_event_id", "outcome_type", "provider", "value"
        ])
        assert.include(event.data, { provider: "svc", outcome_type: "purchase", customer_key: "c-1", value: "12.5", currency: "EUR" })
        const second = yield* get(world.reader, `?limit=2&cursor=${first.json.pagination.cursor}`)
        assert.deepStrictEqual(second.json.data.map((e: any) => e.data.outcome_event_id), world.ids.slice(2))
        assert.isFalse(second.json.pagination.has_next)
        const polled = yield* get(world.reader, `?cursor=${second.json.pagination.cursor}`)
        assert.deepStrictEqual(polled.json.data, [])
        assert.strictEqual(polled.json.pagination.cursor, second.json.pagination.cursor)
        // The same events again from the start: a replay is repeatable.
        const again = yield* get(world.reader)
        assert.deepStrictEqual(again.json.data.map((e: any) => e.id), [...first.json.data, ...second.json.data].map((e: any) => e.id))
      }))

    it.effect("events settle for 10 seconds before they are answered; the 90-day window bounds the replay", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const fresh = yield* ingest(world.writer, { event_name: "signup" })
        assert.strictEqual(fresh.status, 200)
        const now = yield* get(world.reader)
        assert.notInclude(now.json.data.map((e: any) => e.data.outcome_event_id), fresh.json.data.outcome_event_id)
        yield* sql`UPDATE outbox SET created_at = now() - interval '91 days' WHERE payload->'data'->>'outcome_event_id' = ${world.ids[0]!}`
        const windowed = yield* get(world.reader)
        assert.notInclude(windowed.json.data.map((e: any) => e.data.outcome_event_id), world.ids[0])
      }))

    it.effect("contact only with customers:read (and logged); erasure removes the key and the contact", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const withContact = yield* get(world.personReader)
        assert.strictEqual(withContact.status, 200, withContact.text)
        assert.deepStrictEqual(withContact.json.data[0].data.contact, {
          customer_key: "c-1",
          first_name: null,
          last_name: null,
          email: "ana@example.com",
          phone: null
        })
        assert.isNull(withContact.json.data[2].data.contact, "an outcome with no person")
        const [logged] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pii_access_log WHERE profile_id = ${world.profileId} AND route = 'GET /api/v1/outcomes/recorded'`
        assert.strictEqual(logged!.n, 1)
        const erased = yield* call("/api/v1/customers/erasures", {
          method: "POST",
          headers: { authorization: `Bearer ${world.writer}`, "content-type": "application/json" },
          body: JSON.stringify({ request_ref: "r-1", customer_key: "c-1" })
        })
        assert.strictEqual(erased.status, 200, erased.text)
        const after = yield* get(world.personReader)
        assert.include(after.json.data[0].data, { customer_key: null, contact: null })
      }))

    it.effect("healthcare family: only the provisioning app's keys replay (403 healthcare_scope_forbidden otherwise)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const appId = crypto.randomUUID()
        yield* sql`
          INSERT INTO oauth_apps (id, name, client_id, client_secret_hash, jwt_secret_encrypted)
          VALUES (${appId}, 'Clinic partner', ${`client-${appId}`}, 'x', 'x')`
        // The add-on on, as the provisioning app set it: the tier reads events, not an empty page.
        yield* sql`INSERT INTO entitlements (profile_id, feature, enabled) VALUES (${world.profileId}, 'svc_attribution', true)`
        yield* sql`UPDATE profiles SET provisioned_by_app_id = ${appId}, privacy_mode = 'hipaa' WHERE id = ${world.profileId}`
        const { id: appKeyId, key: appKey } = yield* seedApiKey(world, { scopes: ["conversions:read"], rateLimitPerMinute: 1000 })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${appId} WHERE id = ${appKeyId}`
        const refused = yield* get(world.reader)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "healthcare_scope_forbidden")
        const allowed = yield* get(appKey)
        assert.strictEqual(allowed.status, 200, allowed.text)
        assert.strictEqual(allowed.json.data.length, 3)
      }))

    it.effect("bad limit and cursor are 400 naming them; a key without either read scope is 403", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        for (const [query, name] of [["?limit=0", "limit"], ["?limit=201", "limit"], ["?cursor=%%%", "cursor"]] as const) {
          const answer = yield* get(world.reader, query)
          assert.strictEqual(answer.status, 400, query)
          assert.include(answer.json.error.message, name)
        }
        const refused = yield* get(world.writer)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }))
  })
})
