import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveApp, testSettings } from "../support/app.ts"
import {
  defineConversion,
  type EventsFixture,
  ingest,
  listConversions,
  retract,
  seedEventsProfile
} from "../support/events.ts"
import { seedMemberSession } from "../support/tenancy.ts"

const FIELDS = [
  "outcome_event_id",
  "conversion_id",
  "conversion_key",
  "occurred_at",
  "value_amount",
  "currency",
  "credit_model",
  "customer_key",
  "is_first_payment"
].sort()

interface Recorded {
  readonly outcome_event_id: string
  readonly conversion_id: string
}

const record = (profile: EventsFixture, body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const response = yield* ingest(profile.key, body)
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data as Recorded
  })

/** Five conversions: three sales of two customers (one with subject and email) and two leads. */
const seedFive = Effect.gen(function*() {
  const profile = yield* seedEventsProfile()
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  yield* defineConversion(profile.profileId, "lead", ["form"])
  const a = yield* record(profile, {
    event_name: "purchase",
    occurred_at: "2026-03-01T09:00:00Z",
    properties: { value: 100.5, currency: "EUR", subject_ref: "secret-subject" },
    user_traits: { external_id: "alice", email: "alice@example.com", phone: "+34 600 000 001" }
  })
  const b = yield* record(profile, { event_name: "form", occurred_at: "2026-03-02T09:00:00Z", user_traits: { external_id: "bob" } })
  const c = yield* record(profile, {
    event_name: "purchase",
    occurred_at: "2026-03-03T23:59:59.999999Z",
    properties: { value: "7", currency: "USD" },
    user_traits: { external_id: "bob" }
  })
  const d = yield* record(profile, { event_name: "form", occurred_at: "2026-03-04T00:00:00Z" })
  const e = yield* record(profile, {
    event_name: "purchase",
    occurred_at: "2026-03-20T09:00:00+01:00",
    properties: { value: 3, currency: "EUR" },
    user_traits: { external_id: "alice" }
  })
  return { profile, a, b, c, d, e }
})

const ids = (response: { readonly json: any }) => response.json.data.map((row: any) => row.conversion_id)

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("GET /api/v1/conversions", (it) => {
  describe("rows", () => {
    it.effect("newest first, exactly the nine fields; money as decimal strings; no subject_ref, email or phone", () =>
      Effect.gen(function*() {
        const { profile, a, b, c, d, e } = yield* seedFive
        const response = yield* listConversions(profile.key)
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(Object.keys(response.json).sort(), ["data", "pagination"])
        assert.deepStrictEqual(ids(response), [e, d, c, b, a].map((row) => row.conversion_id))
        for (const row of response.json.data) assert.deepStrictEqual(Object.keys(row).sort(), FIELDS)
        assert.deepStrictEqual(response.json.data[0], {
          outcome_event_id: e.outcome_event_id,
          conversion_id: e.conversion_id,
          conversion_key: "sale",
          occurred_at: "2026-03-20T08:00:00.000000Z",
          value_amount: "3",
          currency: "EUR",
          credit_model: "last_touch",
          customer_key: "alice",
          is_first_payment: false
        })
        assert.deepStrictEqual(response.json.data[1], {
          outcome_event_id: d.outcome_event_id,
          conversion_id: d.conversion_id,
          conversion_key: "lead",
          occurred_at: "2026-03-04T00:00:00.000000Z",
          value_amount: null,
          currency: null,
          credit_model: "last_touch",
          customer_key: null,
          is_first_payment: null
        })
        assert.deepStrictEqual(response.json.data.map((row: any) => [row.value_amount, row.is_first_payment]), [
          ["3", false],
          [null, null],
          ["7", true],
          [null, null],
          ["100.5", true]
        ])
        assert.deepStrictEqual(response.json.pagination, { has_next: false, cursor: null })
        for (const personal of ["secret-subject", "alice@example.com", "600 000"]) assert.notInclude(response.text, personal)
      }))

    it.effect("?model= names the credit model of every row; an unknown one is 400 invalid_parameter naming model", () =>
      Effect.gen(function*() {
        const { profile } = yield* seedFive
        for (const model of ["last_touch", "first_touch", "last_non_direct", "linear", "time_decay", "svc_model"]) {
          const response = yield* listConversions(profile.key, { model })
          assert.strictEqual(response.status, 200)
          assert.deepStrictEqual([...new Set(response.json.data.map((row: any) => row.credit_model))], [model])
        }
        const bad = yield* listConversions(profile.key, { model: "u_shaped" })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.code, "invalid_parameter")
        assert.include(bad.json.error.message, "model")
      }))

    it.effect("retracted events' conversions are gone; another profile's conversions never show", () =>
      Effect.gen(function*() {
        const { profile, a, b, c, d, e } = yield* seedFive
        const sale = yield* ingest(profile.key, { event_name: "purchase", idempotency_key: "to-retract", occurred_at: "2026-04-01T00:00:00Z" })
        assert.strictEqual((yield* listConversions(profile.key)).json.data[0].conversion_id, sale.json.data.conversion_id)
        assert.strictEqual((yield* retract(profile.key, { idempotency_key: "to-retract", reason: "test" })).status, 200)
        assert.deepStrictEqual(ids(yield* listConversions(profile.key)), [e, d, c, b, a].map((row) => row.conversion_id))
        const other = yield* seedEventsProfile()
        const empty = yield* listConversions(other.key)
        assert.deepStrictEqual(empty.json, { data: [], pagination: { has_next: false, cursor: null } })
      }))
  })

  describe("pagination", () => {
    it.effect("keyset: limit=2 walks all five rows in three pages, no duplicates, then has_next false", () =>
      Effect.gen(function*() {
        const { profile, a, b, c, d, e } = yield* seedFive
        const seen: Array<string> = []
        let cursor: string | null = null
        let pages = 0
        do {
          const query: Record<string, string> = { limit: "2", ...(cursor === null ? {} : { cursor }) }
          const page = yield* listConversions(profile.key, query)
          assert.strictEqual(page.status, 200)
          assert.isAtMost(page.json.data.length, 2)
          seen.push(...ids(page))
          cursor = page.json.pagination.cursor
          assert.strictEqual(page.json.pagination.has_next, cursor !== null)
          pages++
        } while (cursor !== null && pages < 10)
        assert.strictEqual(pages, 3)
        assert.deepStrictEqual(seen, [e, d, c, b, a].map((row) => row.conversion_id))
      }))

    it.effect("limit outside 1 to 200 (or not an integer): 400 invalid_parameter naming limit; 200 and 1 are fine", () =>
      Effect.gen(function*() {
        const { profile } = yield* seedFive
        for (const limit of ["0", "201", "-1", "abc", "1.5", "", "1e2"]) {
          const bad = yield* listConversions(profile.key, { limit })
          assert.strictEqual(bad.status, 400, limit)
          assert.strictEqual(bad.json.error.code, "invalid_parameter", limit)
          assert.include(bad.json.error.message, "limit")
        }
        assert.strictEqual((yield* listConversions(profile.key, { limit: "200" })).json.data.length, 5)
        assert.strictEqual((yield* listConversions(profile.key, { limit: "1" })).json.data.length, 1)
        // Default 50.
        const many = yield* seedEventsProfile()
        yield* defineConversion(many.profileId, "lead", ["form"])
        yield* Effect.all(Array.from({ length: 55 }, () => ingest(many.key, { event_name: "form" })), { concurrency: 10 })
        const first = yield* listConversions(many.key)
        assert.strictEqual(first.json.data.length, 50)
        assert.isTrue(first.json.pagination.has_next)
        const rest = yield* listConversions(many.key, { cursor: first.json.pagination.cursor })
        assert.strictEqual(rest.json.data.length, 5)
        assert.strictEqual(new Set([...ids(first), ...ids(rest)]).size, 55)
      }))

    it.effect("a cursor this list did not answer: 400 invalid_parameter naming cursor", () =>
      Effect.gen(function*() {
        const { profile } = yield* seedFive
        const forged = Buffer.from(JSON.stringify(["not a time", "x"]), "utf8").toString("base64url")
        for (const cursor of ["garbage", forged]) {
          const bad = yield* listConversions(profile.key, { cursor })
          assert.strictEqual(bad.status, 400)
          assert.strictEqual(bad.json.error.code, "invalid_parameter")
          assert.include(bad.json.error.message, "cursor")
        }
      }))
  })

  describe("filters", () => {
    it.effect("customer_key, conversion_key, start and end (dates are whole UTC days, date-times inclusive)", () =>
      Effect.gen(function*() {
        const { profile, a, b, c, d, e } = yield* seedFive
        const list = (query: Record<string, string>) => Effect.map(listConversions(profile.key, query), ids)
        assert.deepStrictEqual(yield* list({ customer_key: "alice" }), [e, a].map((row) => row.conversion_id))
        assert.deepStrictEqual(yield* list({ customer_key: "bob" }), [c, b].map((row) => row.conversion_id))
        assert.deepStrictEqual(yield* list({ customer_key: "nobody" }), [])
        assert.deepStrictEqual(yield* list({ conversion_key: "lead" }), [d, b].map((row) => row.conversion_id))
        assert.deepStrictEqual(yield* list({ conversion_key: "sale", customer_key: "bob" }), [c.conversion_id])
        assert.deepStrictEqual(yield* list({ start: "2026-03-02", end: "2026-03-03" }), [c, b].map((row) => row.conversion_id))
        assert.deepStrictEqual(yield* list({ start: "2026-03-04" }), [e, d].map((row) => row.conversion_id))
        assert.deepStrictEqual(yield* list({ end: "2026-03-01" }), [a.conversion_id])
        assert.deepStrictEqual(
          yield* list({ start: "2026-03-02T09:00:00Z", end: "2026-03-04T00:00:00Z" }),
          [d, c, b].map((row) => row.conversion_id)
        )
        assert.deepStrictEqual(yield* list({ start: "2026-03-20T09:00:00+01:00", end: "2026-03-20T09:00:00+01:00" }), [e.conversion_id])
      }))

    it.effect("a bad start or end is 400 invalid_parameter naming it; start after end is 400 invalid_date_range", () =>
      Effect.gen(function*() {
        const { profile } = yield* seedFive
        for (const [name, value] of [
          ["start", "yesterday"],
          ["start", "2026-02-30"],
          ["end", "2026-13-01"],
          ["end", "2026-03-01T25:00:00Z"],
          ["start", "2026-03-01T10:00:00"],
          ["customer_key", ""],
          ["conversion_key", ""]
        ] as const) {
          const bad = yield* listConversions(profile.key, { [name]: value })
          assert.strictEqual(bad.status, 400, `${name}=${value}`)
          assert.strictEqual(bad.json.error.code, "invalid_parameter", `${name}=${value}`)
          assert.include(bad.json.error.message, name)
        }
        const inverted = yield* listConversions(profile.key, { start: "2026-03-05", end: "2026-03-01" })
        assert.strictEqual(inverted.status, 400)
        assert.strictEqual(inverted.json.error.code, "invalid_date_range")
      }))
  })

  describe("access", () => {
    it.effect("needs conversions:read (403 otherwise); a console session names the profile with ?profile_id=", () =>
      Effect.gen(function*() {
        const { profile, e } = yield* seedFive
        const writer = yield* seedEventsProfile(["events:write"])
        const refused = yield* listConversions(writer.key)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.include(refused.json.error.message, "conversions:read")
        const analyst = yield* seedMemberSession(profile, "analyst")
        const viaSession = yield* call(`/api/v1/conversions?profile_id=${profile.profileId}&limit=1`, { headers: analyst.headers })
        assert.strictEqual(viaSession.status, 200)
        assert.deepStrictEqual(ids(viaSession), [e.conversion_id])
        const missing = yield* call("/api/v1/conversions", { headers: analyst.headers })
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.json.error.code, "invalid_request")
      }))
  })
})
