/**
 * Group commit of POST /api/v1/events (decision 0036): concurrent ingests share transactions,
 * and every one of them still answers exactly what recording it alone would have.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { serveApp, testSettings } from "../support/app.ts"
import { defineConversion, eventTables, firstPaymentOf, ingest, seedEventsProfile } from "../support/events.ts"

interface Answer {
  readonly status: number
  readonly json: any
}

const inParallel = <A, E, R>(effects: ReadonlyArray<Effect.Effect<A, E, R>>) => Effect.all(effects, { concurrency: "unbounded" })

const okId = (answer: Answer) => {
  assert.strictEqual(answer.status, 200, JSON.stringify(answer.json))
  return answer.json.data.outcome_event_id as string
}

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("POST /api/v1/events under concurrency", (it) => {
  describe("group commit", () => {
    it.effect("concurrent ingests share transactions, and each answers and stores what it would alone", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true, isDefault: true })
        yield* defineConversion(profile.profileId, "lead", ["signup"])

        // Twenty people known only by one email, ten by one external id, payments of one customer
        // eight days apart, events no definition lists, and two requests under one key with equal bodies.
        const byEmail = Array.from({ length: 20 }, (_, i) => ({
          event_name: "signup",
          idempotency_key: `email-${i}`,
          user_traits: { email: " Shared@Example.com " }
        }))
        const byKey = Array.from({ length: 10 }, (_, i) => ({
          event_name: "signup",
          idempotency_key: `key-${i}`,
          user_traits: { external_id: "cust-1", phone: "+34600111222" }
        }))
        const deposit = {
          event_name: "purchase",
          idempotency_key: "pay-deposit",
          occurred_at: "2026-03-01T10:00:00Z",
          properties: { value: "50.10", currency: "EUR" },
          user_traits: { external_id: "payer" }
        }
        const later = { ...deposit, idempotency_key: "pay-later", occurred_at: "2026-03-09T10:00:01Z" }
        const unlisted = Array.from({ length: 5 }, (_, i) => ({ event_name: "page_seen", idempotency_key: `seen-${i}` }))
        const twin = { event_name: "signup", idempotency_key: "twin", user_traits: { external_id: "cust-2" } }
        const bodies = [...byEmail, ...byKey, later, deposit, ...unlisted, twin, twin]

        const answers: ReadonlyArray<Answer> = yield* inParallel(bodies.map((body) => ingest(profile.key, body)))
        const ids = answers.map(okId)
        const twins = answers.slice(-2)
        assert.deepStrictEqual(twins[0]!.json, twins[1]!.json, "one key, one body: the same answer")
        const unlistedAnswers = answers.slice(32, 37)
        for (const answer of unlistedAnswers) assert.isNull(answer.json.data.conversion_id)

        const tables = (yield* eventTables(profile.profileId))!
        // 20 + 10 + 2 + 5 + 1 events; customers: the email's one, cust-1, payer, cust-2.
        assert.strictEqual(tables.events, 38)
        assert.strictEqual(tables.conversions, 33)
        assert.strictEqual(tables.outbox, 38)
        assert.strictEqual(tables.customers, 4)
        const identifiers = yield* sql<{ kind: string; value: string; holders: number }>`
          SELECT kind, value, count(*)::int AS holders FROM customer_identifiers
          WHERE profile_id = ${profile.profileId} GROUP BY kind, value ORDER BY kind`
        assert.deepStrictEqual(identifiers.map((row) => ({ ...row })), [
          { kind: "email", value: "shared@example.com", holders: 1 },
          { kind: "phone", value: "+34600111222", holders: 1 }
        ])
        const emailCustomers = yield* sql<{ customers: number }>`
          SELECT count(DISTINCT customer_id)::int AS customers FROM outcome_events
          WHERE profile_id = ${profile.profileId} AND idempotency_key LIKE 'email-%'`
        assert.strictEqual(emailCustomers[0]!.customers, 1, "one email, one customer, however the requests were batched")

        // Eight days apart: the later payment is a repeat, whichever arrived first.
        assert.strictEqual(yield* firstPaymentOf(ids[30]!), false)
        assert.strictEqual(yield* firstPaymentOf(ids[31]!), true)

        const outbox = yield* sql<{ customer_key: string | null; conversion_id: string | null; outcome_event_id: string }>`
          SELECT payload->'data'->>'customer_key' AS customer_key, payload->'data'->>'conversion_id' AS conversion_id,
                 payload->'data'->>'outcome_event_id' AS outcome_event_id
          FROM outbox WHERE profile_id = ${profile.profileId}`
        const byEvent = new Map(outbox.map((row) => [row.outcome_event_id, row] as const))
        for (const [index, answer] of answers.entries()) {
          const row = byEvent.get(answer.json.data.outcome_event_id)
          assert.isDefined(row, `outbox row of answer ${index}`)
          assert.strictEqual(row!.conversion_id, answer.json.data.conversion_id)
        }
        assert.isNull(byEvent.get(ids[0]!)!.customer_key, "a customer known by email only has no customer_key")
        assert.strictEqual(byEvent.get(ids[20]!)!.customer_key, "cust-1")

        // Rows written by one transaction share its id: fewer transactions than events. Embedded
        // PGlite runs statements on this thread, one session, so requests there rarely overlap.
        const transactions = yield* sql<{ count: number }>`
          SELECT count(DISTINCT xmin::text)::int AS count FROM outcome_events WHERE profile_id = ${profile.profileId}`
        if (process.env["DATABASE_URL"] !== undefined) assert.isBelow(transactions[0]!.count, 38)
      }))

    it.effect("one key twice in the same instant with different bodies: one is recorded, the other is 409 and changes nothing", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "lead", ["signup"])
        const first = { event_name: "signup", idempotency_key: "contested", user_traits: { external_id: "a" } }
        const second = { event_name: "signup", idempotency_key: "contested", user_traits: { external_id: "b" } }
        const answers: ReadonlyArray<Answer> = yield* inParallel([ingest(profile.key, first), ingest(profile.key, second)])
        const statuses = answers.map((answer) => answer.status).sort()
        assert.deepStrictEqual(statuses, [200, 409])
        const conflict = answers.find((answer) => answer.status === 409)!
        assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
        const tables = (yield* eventTables(profile.profileId))!
        assert.strictEqual(tables.events, 1)
        assert.strictEqual(tables.conversions, 1)
        assert.strictEqual(tables.outbox, 1)
        assert.strictEqual(tables.customers, 1, "the refused body created no customer")
      }))
  })
})
