import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { changedFirstPaymentFlags, type FirstPaymentFacts, type NewPayments, paymentAnchors } from "../../src/attribution/conversions/first-payments.ts"
import { Conversions } from "../../src/attribution/conversions/service.ts"
import { serveApp, testSettings } from "../support/app.ts"
import {
  defineConversion,
  eventTables,
  firstPaymentOf,
  ingest,
  listConversions,
  retract,
  seedEventsProfile
} from "../support/events.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey } from "../support/tenancy.ts"

const day = (n: number, time = "10:00:00") => {
  const date = new Date(Date.UTC(2026, 2, 1) + n * 86_400_000)
  return `${date.toISOString().slice(0, 10)}T${time}Z`
}

/** A payment event for a customer at a day offset. */
const payment = (externalId: string | undefined, n: number, extra: Record<string, unknown> = {}) => ({
  event_name: "purchase",
  idempotency_key: crypto.randomUUID(),
  occurred_at: day(n),
  properties: { value: 10, currency: "EUR", ...extra },
  ...(externalId === undefined ? {} : { user_traits: { external_id: externalId } })
})

const outcomeIdOf = (response: { readonly status: number; readonly json: any }) => {
  assert.strictEqual(response.status, 200, JSON.stringify(response.json))
  return response.json.data.outcome_event_id as string
}

/**
 * Ingest is checked as it leaves a conversion (in the credit queue, for the worker): the worker is
 * off, else its 1 s poll can credit it before the test reads it on a loaded machine.
 */
const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings()).pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })("POST /api/v1/events", (it) => {
  describe("recording an event", () => {
    it.effect("answers outcome_event_id and conversion_id; stores the event, conversion, customer, identifiers and the outcome.recorded outbox row", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const definitionId = yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const response = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: "order-1001",
          occurred_at: "2026-03-01T12:30:00.123456+02:00",
          properties: { value: 19.99, currency: "EUR", subject_ref: "pet-7" },
          user_traits: { external_id: "cust-42", email: "  Ana@Example.COM ", phone: " +34 600 111 222 " },
          action_source: "physical_store",
          click_ids: { gclid: "abc" }
        })
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(Object.keys(response.json), ["data"])
        const { outcome_event_id, conversion_id } = response.json.data
        assert.deepStrictEqual(Object.keys(response.json.data).sort(), ["conversion_id", "outcome_event_id"])
        assert.isString(conversion_id)
        assert.notStrictEqual(conversion_id, outcome_event_id)

        const [event] = yield* sql<any>`
          SELECT e.idempotency_key, e.event_name, to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS occurred_at,
                 e.value_amount::text AS value, e.currency, e.subject_ref, e.action_source, e.click_ids, e.source,
                 c.customer_key
          FROM outcome_events e JOIN customers c ON c.id = e.customer_id WHERE e.id = ${outcome_event_id}`
        assert.deepStrictEqual(event, {
          idempotency_key: "order-1001",
          event_name: "purchase",
          occurred_at: "2026-03-01T10:30:00.123456",
          value: "19.990000",
          currency: "EUR",
          subject_ref: "pet-7",
          action_source: "physical_store",
          click_ids: { gclid: "abc" },
          source: "api",
          customer_key: "cust-42"
        })
        const [conversion] = yield* sql<any>`
          SELECT definition_id, conversion_key, value_amount::text AS value, currency, subject_ref, counts_as_cash,
                 attribution_eligible, is_first_payment, EXISTS (SELECT 1 FROM credit_queue q WHERE q.profile_id = c.profile_id AND q.conversion_id = c.id AND q.occurred_at = c.occurred_at) AS queued
          FROM conversions c WHERE id = ${conversion_id} AND outcome_event_id = ${outcome_event_id}`
        assert.deepStrictEqual(conversion, {
          definition_id: definitionId,
          conversion_key: "sale",
          value: "19.990000",
          currency: "EUR",
          subject_ref: "pet-7",
          counts_as_cash: true,
          attribution_eligible: true,
          is_first_payment: true,
          // Left for the attribution worker.
          queued: true
        })
        const identifiers = yield* sql<{ kind: string; value: string }>`
          SELECT kind, value FROM customer_identifiers WHERE profile_id = ${profile.profileId} ORDER BY kind`
        assert.deepStrictEqual(identifiers.map((row) => ({ ...row })), [
          { kind: "email", value: "ana@example.com" },
          { kind: "phone", value: "+34600111222" }
        ])

        const outbox = yield* sql<{ id: string; topic: string; payload: any; published_at: string | null }>`
          SELECT id, topic, payload, published_at FROM outbox WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(outbox.length, 1)
        const row = outbox[0]!
        assert.strictEqual(row.topic, "outcome.recorded")
        // published_at is the webhook worker's (decision 0078): set once the row is fanned out, whenever that is.
        assert.strictEqual(row.payload.id, row.id, "the event id is the outbox row id: stable across retries of delivery")
        assert.strictEqual(row.payload.type, "outcome.recorded")
        assert.deepStrictEqual(row.payload.data, {
          provider: "svc",
          outcome_type: "purchase",
          occurred_at: "2026-03-01T10:30:00.123456Z",
          customer_key: "cust-42",
          value: "19.99",
          currency: "EUR",
          outcome_event_id,
          conversion_id
        })
        assert.deepStrictEqual(row.payload.delivery, {
          profile_id: profile.profileId,
          provisioned_by_app_id: null,
          healthcare_family: false,
          customer_id: row.payload.delivery.customer_id
        })
        const text = JSON.stringify(row.payload)
        for (const secret of ["ana@example.com", "Ana@Example", "600 111", "pet-7", "gclid"]) assert.notInclude(text, secret)
        assert.notInclude(response.text, "ana@example.com")
      }))

    it.effect("an event no definition lists: conversion_id null, the outcome and its outbox row still recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "lead", ["form_submit"])
        const response = yield* ingest(profile.key, { event_name: "page_call", user_traits: { external_id: "c1" } })
        assert.strictEqual(response.status, 200)
        assert.isNull(response.json.data.conversion_id)
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 1, conversions: 0, customers: 1, identifiers: 0, outbox: 1, jobs: 0, audits: 0
        })
        const [row] = yield* sql<{ payload: any }>`SELECT payload FROM outbox WHERE profile_id = ${profile.profileId}`
        assert.isNull(row?.payload.data.conversion_id)
        assert.isNull(row?.payload.data.value)
        assert.strictEqual(row?.payload.data.outcome_event_id, response.json.data.outcome_event_id)
      }))

    it.effect("several definitions list the name: the default one wins, else the oldest", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "newer", ["signup"], { createdAt: "2026-02-01T00:00:00Z" })
        yield* defineConversion(profile.profileId, "older", ["signup", "x"], { createdAt: "2026-01-01T00:00:00Z" })
        yield* defineConversion(profile.profileId, "stage", ["signup"], { kind: "pipeline_stage", createdAt: "2025-01-01T00:00:00Z" })
        const first = yield* ingest(profile.key, { event_name: "signup" })
        const [a] = yield* sql<{ conversion_key: string }>`SELECT conversion_key FROM conversions WHERE id = ${first.json.data.conversion_id}`
        assert.strictEqual(a?.conversion_key, "older")
        yield* defineConversion(profile.profileId, "chosen", ["signup"], { isDefault: true, createdAt: "2026-03-01T00:00:00Z" })
        const second = yield* ingest(profile.key, { event_name: "signup" })
        const [b] = yield* sql<{ conversion_key: string }>`SELECT conversion_key FROM conversions WHERE id = ${second.json.data.conversion_id}`
        assert.strictEqual(b?.conversion_key, "chosen")
        // Names match exactly.
        const other = yield* ingest(profile.key, { event_name: "Signup" })
        assert.isNull(other.json.data.conversion_id)
      }))

    it.effect("occurred_at defaults to now; a value without currency takes the profile's currency", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* sql`UPDATE profiles SET currency = 'MXN' WHERE id = ${profile.profileId}`
        const before = Date.now()
        const response = yield* ingest(profile.key, { event_name: "sale", properties: { value: "5" } })
        const [row] = yield* sql<{ at: number; currency: string; value: string }>`
          SELECT (extract(epoch FROM occurred_at) * 1000)::float8 AS at, currency, value_amount::text AS value
          FROM outcome_events WHERE id = ${response.json.data.outcome_event_id}`
        assert.isAtLeast(row!.at, before - 1000)
        assert.isAtMost(row!.at, Date.now() + 1000)
        assert.strictEqual(row!.currency, "MXN")
        assert.strictEqual(row!.value, "5.000000")
      }))
  })

  describe("idempotency", () => {
    it.effect("the same key twice is one outcome and the same answer; without a key every call is a new event", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const body = { event_name: "purchase", idempotency_key: "k-1", properties: { value: 12.5, currency: "EUR" }, occurred_at: day(0) }
        const first = yield* ingest(profile.key, body)
        // Same body with its keys in another order, and the amount as a decimal string: the same request.
        const again = yield* ingest(profile.key, JSON.stringify({ properties: { currency: "EUR", value: "12.50" }, occurred_at: day(0), idempotency_key: "k-1", event_name: "purchase" }))
        assert.strictEqual(first.status, 200)
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.text, first.text)
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 1, conversions: 1, customers: 0, identifiers: 0, outbox: 1, jobs: 0, audits: 0
        })
        const a = yield* ingest(profile.key, { event_name: "purchase" })
        const b = yield* ingest(profile.key, { event_name: "purchase" })
        assert.notStrictEqual(a.json.data.outcome_event_id, b.json.data.outcome_event_id)
        assert.strictEqual((yield* eventTables(profile.profileId))?.conversions, 3)
      }))

    it.effect("the same key with a different body: 409 idempotency_key_conflict, the first event stands, nothing written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const first = yield* ingest(profile.key, { event_name: "purchase", idempotency_key: "k-2", properties: { value: 10 } })
        const before = yield* eventTables(profile.profileId)
        const conflict = yield* ingest(profile.key, { event_name: "purchase", idempotency_key: "k-2", properties: { value: 11 } })
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
        assert.deepStrictEqual(yield* eventTables(profile.profileId), before)
        const [row] = yield* sql<{ value: string }>`SELECT value_amount::text AS value FROM outcome_events WHERE id = ${first.json.data.outcome_event_id}`
        assert.strictEqual(row?.value, "10.000000")
        // The key is per profile: another profile may use it.
        const other = yield* seedEventsProfile()
        assert.strictEqual((yield* ingest(other.key, { event_name: "purchase", idempotency_key: "k-2" })).status, 200)
      }))

    it.effect("fifty parallel requests with one key: one outcome, one conversion, one outbox row, identical bodies", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const body = {
          event_name: "purchase",
          idempotency_key: "burst-1",
          properties: { value: 99.95, currency: "EUR" },
          user_traits: { external_id: "burst-customer", email: "burst@example.com" }
        }
        const answers = yield* Effect.all(Array.from({ length: 50 }, () => ingest(profile.key, body)), { concurrency: "unbounded" })
        assert.deepStrictEqual([...new Set(answers.map((answer) => answer.status))], [200])
        assert.strictEqual(new Set(answers.map((answer) => answer.text)).size, 1, answers[0]?.text)
        assert.isString(answers[0]?.json.data.conversion_id)
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 1, conversions: 1, customers: 1, identifiers: 1, outbox: 1, jobs: 0, audits: 0
        })
      }))

    it.effect("fifty parallel events of one new customer with different keys: one customer, one first payment", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) => ingest(profile.key, payment("crowd", i * 8))),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual([...new Set(answers.map((answer) => answer.status))], [200])
        const [row] = yield* sql<{ customers: number; first: number; repeat: number }>`
          SELECT (SELECT count(*)::int FROM customers WHERE profile_id = ${profile.profileId}) AS customers,
                 count(*) FILTER (WHERE is_first_payment)::int AS first,
                 count(*) FILTER (WHERE NOT is_first_payment)::int AS repeat
          FROM conversions WHERE profile_id = ${profile.profileId}`
        assert.deepStrictEqual({ ...row }, { customers: 1, first: 1, repeat: 49 })
      }))

    it.effect("first payments from each stream's first payment: the stored flags equal the rules over every payment, back-dated ones included (decision 0159)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* defineConversion(profile.profileId, "lead", ["signup"], { countsAsCash: false })
        // Three customers, streams untagged and tagged, order groups, a non-cash event, payments
        // in order and back-dated, sent one at a time and then in parallel (one batch or several).
        const plan = Array.from({ length: 60 }, (_, i) => {
          const customer = `fp-${i % 3}`
          const n = i % 7 === 3 ? i - 40 : i * 2
          const extra = {
            ...(i % 4 === 1 ? { subject_ref: `pet-${i % 2}` } : {}),
            ...(i % 5 === 2 ? { order_group: `og-${i % 3}` } : {})
          }
          return i % 9 === 4 ? { ...payment(customer, n), event_name: "signup" } : payment(customer, n, extra)
        })
        for (const body of plan.slice(0, 30)) assert.strictEqual((yield* ingest(profile.key, body)).status, 200)
        const parallel = yield* Effect.all(plan.slice(30).map((body) => ingest(profile.key, body)), { concurrency: "unbounded" })
        assert.deepStrictEqual([...new Set(parallel.map((answer) => answer.status))], [200])
        const rows = yield* sql<FirstPaymentFacts>`
          SELECT c.id, c.customer_id, to_char(c.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
                 to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at,
                 c.subject_ref, c.order_group, c.counts_as_cash, c.installment, c.is_first_payment
          FROM conversions c WHERE c.profile_id = ${profile.profileId}`
        assert.strictEqual(rows.length, 60)
        // Recomputed over each customer's whole set, no stored flag would change.
        assert.deepStrictEqual(changedFirstPaymentFlags(rows), { nowTrue: [], nowFalse: [], nowNull: [] })
        const customerIds = [...new Set(rows.map((row) => row.customer_id))]
        assert.strictEqual(customerIds.length, 3)
        // The statement answers what the rules make of the whole history: each stream's first payment
        // for payments after every stored one, every conversion for a customer with a back-dated one.
        const read = (asked: ReadonlyArray<NewPayments>) =>
          Effect.gen(function*() {
            const conversions = yield* Conversions
            return yield* conversions.paymentAnchorsOf(asked)
          }).pipe(Effect.provide(Conversions.layer))
        const byId = (list: ReadonlyArray<{ readonly id: string }>) => [...list].sort((a, b) => (a.id < b.id ? -1 : 1))
        const later = customerIds.map((customerId) => ({ customerId, earliest: "2027-01-01T00:00:00.000000Z" }))
        const anchors = yield* read(later)
        assert.deepStrictEqual(byId(anchors.map((anchor) => ({ ...anchor }))), byId(paymentAnchors(rows, later)))
        assert.isAbove(anchors.length, 3)
        assert.isBelow(anchors.length, 12)
        const backDated = [{ customerId: customerIds[0]!, earliest: "2026-03-05T00:00:00.000000Z" }, ...later.slice(1)]
        const whole = yield* read(backDated)
        assert.deepStrictEqual(byId(whole.map((anchor) => ({ ...anchor }))), byId(paymentAnchors(rows, backDated)))
        assert.strictEqual(whole.filter((row) => row.customer_id === customerIds[0]).length, 20)
      }))

    it.effect("a retracted key cannot record again: 409 invalid_state", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const body = { event_name: "purchase", idempotency_key: "gone-1" }
        assert.strictEqual((yield* ingest(profile.key, body)).status, 200)
        assert.strictEqual((yield* retract(profile.key, { idempotency_key: "gone-1", reason: "test" })).status, 200)
        const again = yield* ingest(profile.key, body)
        assert.strictEqual(again.status, 409)
        assert.strictEqual(again.json.error.code, "invalid_state")
        assert.strictEqual(again.json.error.reason, "event_retracted")
      }))
  })

  describe("subject_ref", () => {
    it.effect("personal data is 400 invalid_parameter, a malformed token 400 validation_error; nothing is written", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const send = (subjectRef: string) =>
          ingest(profile.key, {
            event_name: "purchase",
            properties: { value: 1, subject_ref: subjectRef },
            user_traits: { external_id: "c-1", email: "x@example.com" }
          })
        for (const personal of ["ana@example.com", "+34 600 111 222", "34600111222", "123-45-6789", "12345678Z", "123.456.789-09", "QQ123456C", "pet-600111222"]) {
          const refused = yield* send(personal)
          assert.strictEqual(refused.status, 400, personal)
          assert.strictEqual(refused.json.error.code, "invalid_parameter", personal)
          assert.include(refused.json.error.message, "subject_ref")
          assert.notInclude(refused.text, personal, "the personal data is not echoed")
        }
        for (const malformed of ["a".repeat(33), "pet 7", "pet.7", ""]) {
          const refused = yield* send(malformed)
          assert.strictEqual(refused.status, 400, malformed)
          assert.strictEqual(refused.json.error.code, "validation_error", malformed)
          assert.include(refused.json.error.message, "subject_ref")
        }
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 0, conversions: 0, customers: 0, identifiers: 0, outbox: 0, jobs: 0, audits: 0
        })
        for (const accepted of ["a".repeat(32), "pet_7-B", "00000000-1111-2222-3333-444444444444", "A1B2C3D4-E5F6-4A4B-8C8D-9E9F0A0B0C0D"]) {
          assert.strictEqual((yield* send(accepted)).status, 200, accepted)
        }
        const listed = yield* listConversions(profile.key)
        assert.strictEqual(listed.json.data.length, 4)
        for (const accepted of ["pet_7-B", "00000000-1111"]) assert.notInclude(listed.text, accepted, "subject_ref is never returned")
      }))
  })

  describe("bad bodies", () => {
    it.effect("each answers 400 validation_error naming the field, and writes nothing", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{}, "event_name"],
          [{ event_name: "" }, "event_name"],
          [{ event_name: "   " }, "event_name"],
          [{ event_name: "purchase", action_source: "fax" }, "action_source"],
          [{ event_name: "purchase", occurred_at: "2026-02-30T10:00:00Z" }, "occurred_at"],
          [{ event_name: "purchase", occurred_at: "2026-03-01T10:00:00" }, "occurred_at"],
          [{ event_name: "purchase", occurred_at: "yesterday" }, "occurred_at"],
          [{ event_name: "purchase", properties: { value: "abc" } }, "value"],
          [{ event_name: "purchase", properties: { value: "1.2345678" } }, "value"],
          [{ event_name: "purchase", properties: { value: 1.2345678 } }, "value"],
          [{ event_name: "purchase", properties: { value: 123456789012345 } }, "value"],
          [{ event_name: "purchase", properties: { value: true } }, "value"],
          [{ event_name: "purchase", properties: { value: 1, currency: "eur" } }, "currency"],
          [{ event_name: "purchase", user_traits: { email: "not-an-email" } }, "email"],
          [{ event_name: "purchase", user_traits: { phone: "call me" } }, "phone"],
          // E.164 needs the country code; a number impossible for its country is refused.
          [{ event_name: "purchase", user_traits: { phone: "600 111 222" } }, "phone"],
          [{ event_name: "purchase", user_traits: { phone: "+1 555 0100" } }, "phone"],
          [{ event_name: "purchase", user_traits: { external_id: " " } }, "external_id"],
          [{ event_name: "purchase", idempotency_key: "" }, "idempotency_key"],
          [{ event_name: "purchase", click_ids: { gclid: 5 } }, "click_ids"]
        ]
        for (const [body, field] of cases) {
          const refused = yield* ingest(profile.key, body)
          assert.strictEqual(refused.status, 400, JSON.stringify(body))
          assert.strictEqual(refused.json.error.code, "validation_error", JSON.stringify(body))
          assert.include(refused.json.error.message, field, JSON.stringify(body))
        }
        const notJson = yield* ingest(profile.key, "{\"event_name\": ")
        assert.strictEqual(notJson.status, 400)
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 0, conversions: 0, customers: 0, identifiers: 0, outbox: 0, jobs: 0, audits: 0
        })
      }))
  })

  describe("money", () => {
    it.effect("a JSON number keeps its literal: 12345678901234.123456 round-trips; 0.1 + 0.2 sums to exactly 0.3", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        // Raw JSON text: JSON.stringify would already have rounded the number.
        const big = yield* ingest(profile.key, "{\"event_name\":\"purchase\",\"properties\":{\"value\":12345678901234.123456,\"currency\":\"EUR\"}}")
        assert.strictEqual(big.status, 200, big.text)
        const [stored] = yield* sql<{ event: string; conversion: string }>`
          SELECT e.value_amount::text AS event, c.value_amount::text AS conversion
          FROM outcome_events e JOIN conversions c ON c.outcome_event_id = e.id WHERE e.id = ${big.json.data.outcome_event_id}`
        assert.deepStrictEqual({ ...stored }, { event: "12345678901234.123456", conversion: "12345678901234.123456" })
        const listed = yield* listConversions(profile.key)
        assert.include(listed.text, "\"value_amount\":\"12345678901234.123456\"")
        const [outbox] = yield* sql<{ value: string }>`SELECT payload->'data'->>'value' AS value FROM outbox WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(outbox?.value, "12345678901234.123456")

        const other = yield* seedEventsProfile()
        yield* defineConversion(other.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* ingest(other.key, "{\"event_name\":\"purchase\",\"properties\":{\"value\":0.1}}")
        yield* ingest(other.key, "{\"event_name\":\"purchase\",\"properties\":{\"value\":0.2}}")
        const [sum] = yield* sql<{ events: string; conversions: string; is_exact: boolean }>`
          SELECT (SELECT sum(value_amount)::text FROM outcome_events WHERE profile_id = ${other.profileId}) AS events,
                 (SELECT sum(value_amount)::text FROM conversions WHERE profile_id = ${other.profileId}) AS conversions,
                 (SELECT sum(value_amount) = 0.3 FROM conversions WHERE profile_id = ${other.profileId}) AS is_exact`
        assert.deepStrictEqual({ ...sum }, { events: "0.300000", conversions: "0.300000", is_exact: true })
        const [column] = yield* sql<{ type: string }>`
          SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
          WHERE attrelid = 'conversions'::regclass AND attname = 'value_amount'`
        assert.strictEqual(column?.type, "numeric(20,6)")
        // Exponent and string forms, and the answer's shortest exact text.
        const third = yield* seedEventsProfile()
        yield* defineConversion(third.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* ingest(third.key, "{\"event_name\":\"purchase\",\"occurred_at\":\"2026-03-01T00:00:00Z\",\"properties\":{\"value\":1.5e3}}")
        yield* ingest(third.key, "{\"event_name\":\"purchase\",\"occurred_at\":\"2026-03-02T00:00:00Z\",\"properties\":{\"value\":\"0.000001\"}}")
        yield* ingest(third.key, "{\"event_name\":\"purchase\",\"occurred_at\":\"2026-03-03T00:00:00Z\",\"properties\":{\"value\":-19.90}}")
        const amounts = (yield* listConversions(third.key)).json.data.map((row: any) => row.value_amount)
        assert.deepStrictEqual(amounts, ["-19.9", "0.000001", "1500"])
      }))
  })

  describe("first payments", () => {
    it.effect("per customer: the first payment is first, a later one (after 7 days) is not; a non-payment is null", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* defineConversion(profile.profileId, "lead", ["signup"])
        const first = outcomeIdOf(yield* ingest(profile.key, payment("alice", 0)))
        const repeat = outcomeIdOf(yield* ingest(profile.key, payment("alice", 10)))
        const otherCustomer = outcomeIdOf(yield* ingest(profile.key, payment("bob", 10)))
        const lead = outcomeIdOf(yield* ingest(profile.key, { event_name: "signup", user_traits: { external_id: "alice" } }))
        const anonymous = outcomeIdOf(yield* ingest(profile.key, payment(undefined, 20)))
        assert.isTrue(yield* firstPaymentOf(first))
        assert.isFalse(yield* firstPaymentOf(repeat))
        assert.isTrue(yield* firstPaymentOf(otherCustomer))
        assert.isNull(yield* firstPaymentOf(lead))
        assert.isTrue(yield* firstPaymentOf(anonymous), "with no customer there is nothing to repeat")
      }))

    it.effect("per subject_ref: each distinct value under one customer has its own first payment", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const a1 = outcomeIdOf(yield* ingest(profile.key, payment("owner", 0, { subject_ref: "pet-a" })))
        const b1 = outcomeIdOf(yield* ingest(profile.key, payment("owner", 10, { subject_ref: "pet-b" })))
        const a2 = outcomeIdOf(yield* ingest(profile.key, payment("owner", 20, { subject_ref: "pet-a" })))
        const b2 = outcomeIdOf(yield* ingest(profile.key, payment("owner", 30, { subject_ref: "pet-b" })))
        const elsewhere = outcomeIdOf(yield* ingest(profile.key, payment("someone-else", 40, { subject_ref: "pet-a" })))
        assert.deepStrictEqual(
          [yield* firstPaymentOf(a1), yield* firstPaymentOf(b1), yield* firstPaymentOf(a2), yield* firstPaymentOf(b2), yield* firstPaymentOf(elsewhere)],
          [true, true, false, false, true]
        )
      }))

    it.effect("a balance within 7 days of the deposit is the same purchase; after 7 days it is a repeat", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const deposit = outcomeIdOf(yield* ingest(profile.key, payment("carla", 0)))
        const balance = outcomeIdOf(yield* ingest(profile.key, payment("carla", 7)))
        const late = outcomeIdOf(yield* ingest(profile.key, { ...payment("carla", 7), occurred_at: day(7, "10:00:01") }))
        const next = outcomeIdOf(yield* ingest(profile.key, payment("carla", 12)))
        assert.deepStrictEqual(
          [yield* firstPaymentOf(deposit), yield* firstPaymentOf(balance), yield* firstPaymentOf(late), yield* firstPaymentOf(next)],
          [true, true, false, false]
        )
      }))

    it.effect("another order of the same first purchase (same order_group) is not a repeat, however late", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const first = outcomeIdOf(yield* ingest(profile.key, payment("dora", 0, { order_group: "cart-9" })))
        const split = outcomeIdOf(yield* ingest(profile.key, payment("dora", 30, { order_group: "cart-9" })))
        const other = outcomeIdOf(yield* ingest(profile.key, payment("dora", 31, { order_group: "cart-10" })))
        assert.deepStrictEqual([yield* firstPaymentOf(first), yield* firstPaymentOf(split), yield* firstPaymentOf(other)], [true, true, false])
      }))

    it.effect("an untagged payment after a tagged one is never first; one before it is", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const untaggedBefore = outcomeIdOf(yield* ingest(profile.key, payment("eve", 0)))
        const tagged = outcomeIdOf(yield* ingest(profile.key, payment("eve", 2, { subject_ref: "kid-1" })))
        // Within 7 days of the untagged deposit, but after a tagged payment: never first.
        const untaggedAfter = outcomeIdOf(yield* ingest(profile.key, payment("eve", 3)))
        assert.deepStrictEqual(
          [yield* firstPaymentOf(untaggedBefore), yield* firstPaymentOf(tagged), yield* firstPaymentOf(untaggedAfter)],
          [true, true, false]
        )
        const solo = yield* seedEventsProfile()
        yield* defineConversion(solo.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* ingest(solo.key, payment("fred", 0, { subject_ref: "kid-2" }))
        const onlyUntagged = outcomeIdOf(yield* ingest(solo.key, payment("fred", 50)))
        assert.isFalse(yield* firstPaymentOf(onlyUntagged))
      }))

    it.effect("a back-dated payment that arrives late takes the first place; the others are recomputed", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const later = outcomeIdOf(yield* ingest(profile.key, payment("gina", 20)))
        assert.isTrue(yield* firstPaymentOf(later))
        const earlier = outcomeIdOf(yield* ingest(profile.key, payment("gina", 0)))
        assert.isTrue(yield* firstPaymentOf(earlier))
        assert.isFalse(yield* firstPaymentOf(later))
      }))

    it.effect("customers: by external_id, else by a known email or phone; identifiers are stored once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const keyed = outcomeIdOf(yield* ingest(profile.key, { ...payment("hugo", 0), user_traits: { external_id: "hugo", email: "Hugo@Example.com" } }))
        const byEmail = outcomeIdOf(yield* ingest(profile.key, { ...payment(undefined, 20), user_traits: { email: "hugo@example.com " } }))
        const byPhone = outcomeIdOf(yield* ingest(profile.key, { ...payment(undefined, 40), user_traits: { phone: "+1 202 555 0100" } }))
        const byPhoneAgain = outcomeIdOf(yield* ingest(profile.key, { ...payment(undefined, 60), user_traits: { phone: "+12025550100" } }))
        const rows = yield* sql<{ id: string; customer_id: string }>`
          SELECT id, customer_id FROM outcome_events WHERE id IN (${keyed}, ${byEmail}, ${byPhone}, ${byPhoneAgain})`
        const customerOf = new Map(rows.map((row) => [row.id, row.customer_id]))
        assert.strictEqual(customerOf.get(byEmail), customerOf.get(keyed))
        assert.notStrictEqual(customerOf.get(byPhone), customerOf.get(keyed))
        assert.strictEqual(customerOf.get(byPhoneAgain), customerOf.get(byPhone))
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 4, conversions: 4, customers: 2, identifiers: 2, outbox: 4, jobs: 0, audits: 0
        })
        assert.deepStrictEqual(
          [yield* firstPaymentOf(keyed), yield* firstPaymentOf(byEmail), yield* firstPaymentOf(byPhone), yield* firstPaymentOf(byPhoneAgain)],
          [true, false, true, false]
        )
      }))
  })

  describe("access", () => {
    it.effect("an app-provisioned profile with the add-on off: 409 entitlement_required, nothing written; on: recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp("Events partner")
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}`, privacy_mode: "hipaa" })).json.data
        const profile = { profileId: created.profile_id as string, workspaceId: created.workspace_id as string }
        const { key } = yield* seedApiKey(profile, { scopes: ["events:write", "conversions:read"], rateLimitPerMinute: 10_000 })
        const refused = yield* ingest(key, { event_name: "purchase" })
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "entitlement_required")
        assert.include(refused.json.error.message, "svc_attribution")
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 0, conversions: 0, customers: 0, identifiers: 0, outbox: 0, jobs: 0, audits: 0
        })
        // The read answers empty on the connect-broker tier, never a wall.
        const listed = yield* listConversions(key)
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(listed.json, { data: [], pagination: { has_next: false, cursor: null } })

        const on = yield* asApp(app, `/api/v1/profiles/${profile.profileId}/entitlements/svc_attribution`, "PUT", { enabled: true })
        assert.strictEqual(on.status, 200)
        // The tier travels with the cached credential (5 s): a fresh key sees it at once.
        const fresh = yield* seedApiKey(profile, { scopes: ["events:write"], rateLimitPerMinute: 10_000 })
        const recorded = yield* ingest(fresh.key, { event_name: "purchase", user_traits: { external_id: "p-1" } })
        assert.strictEqual(recorded.status, 200)
        const [row] = yield* sql<{ payload: any }>`SELECT payload FROM outbox WHERE profile_id = ${profile.profileId}`
        assert.deepStrictEqual(row?.payload.delivery, {
          profile_id: profile.profileId,
          provisioned_by_app_id: app.id,
          healthcare_family: true,
          customer_id: row?.payload.delivery.customer_id
        })
      }))

    it.effect("without events:write: 403 insufficient_scope; without a credential: 401", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile(["conversions:read"])
        const refused = yield* ingest(profile.key, { event_name: "purchase" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.include(refused.json.error.message, "events:write")
        const anonymous = yield* ingest("svc_live_nope", { event_name: "purchase" })
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual((yield* eventTables(profile.profileId))?.events, 0)
      }))
  })
})
