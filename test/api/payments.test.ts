/**
 * Payments (decision 0032) through real HTTP: the list with the merchant's actions applied,
 * installment marks, payer assignment (first payments and attribution follow the payer), manual
 * refunds and their undo, linkage, card-gateway payments, the one 404 for payments that are not
 * the caller's, the add-on gate and validation. Payments are ingested with POST /api/v1/events
 * under a cash definition written by SQL; touches are written by SQL; the attribution worker is
 * stepped by hand with `drainOnce`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { defineConversion, type EventsFixture, ingest, retract, seedEventsProfile } from "../support/events.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession } from "../support/tenancy.ts"

const FIELDS = [
  "payment_id",
  "outcome_event_id",
  "occurred_at",
  "amount",
  "currency",
  "customer_key",
  "is_first_payment",
  "installment",
  "payer_customer_key",
  "refunded",
  "status"
].sort()

const day = (n: number, time = "10:00:00") => {
  const date = new Date(Date.UTC(2026, 2, 1) + n * 86_400_000)
  return `${date.toISOString().slice(0, 10)}T${time}Z`
}

const send = (key: string, method: string, path: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

const listPayments = (key: string, query: Record<string, string> = {}) => {
  const search = new URLSearchParams(query).toString()
  return send(key, "GET", `/api/v1/payments${search === "" ? "" : `?${search}`}`)
}

const linkage = (key: string, query: Record<string, string> = {}) => {
  const search = new URLSearchParams(query).toString()
  return send(key, "GET", `/api/v1/payments/linkage${search === "" ? "" : `?${search}`}`)
}

const installment = (key: string, id: string, value: unknown) =>
  send(key, "PUT", `/api/v1/payments/${id}/installment`, { installment: value })
const payer = (key: string, id: string, customerKey: unknown) =>
  send(key, "PUT", `/api/v1/payments/${id}/payer`, { customer_key: customerKey })
const refund = (key: string, id: string, body: unknown = {}) => send(key, "POST", `/api/v1/payments/${id}/refund`, body)
const undoRefund = (key: string, id: string) => send(key, "DELETE", `/api/v1/payments/${id}/refund`)
const cardgw = (key: string, body: unknown) => send(key, "POST", "/api/v1/payments/cardgw", body)

interface Recorded {
  readonly outcome_event_id: string
  readonly conversion_id: string
}

/** A cash payment (event `purchase`) of a customer at a day offset; answers the ids. */
const pay = (
  profile: EventsFixture,
  customer: string | undefined,
  n: number,
  properties: Record<string, unknown> = { value: 10, currency: "EUR" }
) =>
  Effect.gen(function*() {
    const response = yield* ingest(profile.key, {
      event_name: "purchase",
      idempotency_key: crypto.randomUUID(),
      occurred_at: day(n),
      properties,
      ...(customer === undefined ? {} : { user_traits: { external_id: customer } })
    })
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data as Recorded
  })

/** A profile with a cash definition (`purchase`) and a non-cash one (`form`). */
const seedShop = Effect.gen(function*() {
  const profile = yield* seedEventsProfile()
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  yield* defineConversion(profile.profileId, "lead", ["form"])
  return profile
})

/** `payment_id -> is_first_payment` from the list. */
const flagsOf = (key: string) =>
  Effect.map(listPayments(key, { limit: "200" }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return Object.fromEntries(response.json.data.map((row: any) => [row.payment_id, row.is_first_payment])) as Record<
      string,
      boolean | null
    >
  })

const customerId = (profileId: string, customerKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ id: string }>`
      SELECT id::text AS id FROM customers WHERE profile_id = ${profileId} AND customer_key = ${customerKey}`
    if (row === undefined) return yield* Effect.die(`no customer ${customerKey}`)
    return row.id
  })

/** Everything a merchant action writes, for one profile. */
const actionTables = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ actions: number; audits: number; refunded: number; installments: number; payers: number }>`
      SELECT (SELECT count(*)::int FROM payment_actions WHERE profile_id = ${profileId}) AS actions,
             (SELECT count(*)::int FROM audit_events WHERE profile_id = ${profileId} AND action LIKE 'payment.%') AS audits,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId} AND refunded_at IS NOT NULL) AS refunded,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId} AND installment) AS installments,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId} AND payer_customer_id IS NOT NULL) AS payers`
    return row
  })

interface TouchOptions {
  readonly customerId: string
  readonly at: string
  readonly channel: string
  readonly source?: string
  readonly medium?: string
  readonly campaign?: readonly [string, string]
  readonly adSet?: readonly [string, string]
  readonly ad?: readonly [string, string]
  readonly clickIdKind?: string
  readonly clickId?: string
  readonly joinMethod?: string
}

const touch = (profileId: string, options: TouchOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, source, medium, customer_id, campaign_external_id,
                           campaign_name, ad_set_external_id, ad_set_name, ad_external_id, ad_name, click_id_kind, click_id,
                           join_method)
      VALUES (${id}, ${profileId}, 'web_touch', ${options.at}::timestamptz, ${options.channel}, ${options.source ?? null},
              ${options.medium ?? null}, ${options.customerId}, ${options.campaign?.[0] ?? null}, ${options.campaign?.[1] ?? null},
              ${options.adSet?.[0] ?? null}, ${options.adSet?.[1] ?? null}, ${options.ad?.[0] ?? null}, ${options.ad?.[1] ?? null},
              ${options.clickIdKind ?? null}, ${options.clickId ?? null}, ${options.joinMethod ?? null})`
    return id
  })

const drain = Effect.flatMap(AttributionWorker, (worker) => worker.drainOnce)

const creditState = (paymentId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ credited: boolean; rows: number; last_touch: string | null }>`
      SELECT NOT EXISTS (SELECT 1 FROM credit_queue q WHERE q.profile_id = c.profile_id AND q.conversion_id = c.id) AS credited,
             (SELECT count(*)::int FROM attribution_credits a WHERE a.conversion_id = c.id) AS rows,
             (SELECT a.touch_id::text FROM attribution_credits a
              WHERE a.conversion_id = c.id AND a.model = 'last_touch' AND a.is_credited) AS last_touch
      FROM conversions c WHERE c.id = ${paymentId}`
    return row
  })

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings()).pipe(Layer.provide(manual)), { timeout: "180 seconds", excludeTestServices: true })("payments", (it) => {
  describe("GET /api/v1/payments", () => {
    it.effect("only cash conversions, newest first, exactly the fields; money exact as decimal strings; no subject_ref or contact", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        // A JSON number with more digits than a double holds: sent as raw text to keep its literal.
        const big = yield* ingest(
          profile.key,
          `{"event_name":"purchase","idempotency_key":"big-1","occurred_at":"${day(0)}",` +
            `"properties":{"value":12345678901234.123456,"currency":"EUR","subject_ref":"secret-subject"},` +
            `"user_traits":{"external_id":"alice","email":"alice@example.com"}}`
        )
        assert.strictEqual(big.status, 200, big.text)
        const seven = yield* pay(profile, "bob", 1, { value: "7.50", currency: "USD" })
        const lead = yield* ingest(profile.key, { event_name: "form", occurred_at: day(2), user_traits: { external_id: "bob" } })
        assert.strictEqual(lead.status, 200)
        const bare = yield* pay(profile, undefined, 3, {})

        const response = yield* listPayments(profile.key)
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(Object.keys(response.json).sort(), ["data", "pagination"])
        assert.deepStrictEqual(
          response.json.data.map((row: any) => row.payment_id),
          [bare.conversion_id, seven.conversion_id, big.json.data.conversion_id]
        )
        for (const row of response.json.data) assert.deepStrictEqual(Object.keys(row).sort(), FIELDS)
        assert.deepStrictEqual(response.json.data[2], {
          payment_id: big.json.data.conversion_id,
          outcome_event_id: big.json.data.outcome_event_id,
          occurred_at: "2026-03-01T10:00:00.000000Z",
          amount: "12345678901234.123456",
          currency: "EUR",
          customer_key: "alice",
          is_first_payment: true,
          installment: false,
          payer_customer_key: null,
          refunded: null,
          status: "paid"
        })
        assert.deepStrictEqual(
          response.json.data.map((row: any) => [row.amount, row.currency, row.customer_key, row.is_first_payment]),
          [[null, null, null, true], ["7.5", "USD", "bob", true], ["12345678901234.123456", "EUR", "alice", true]]
        )
        assert.deepStrictEqual(response.json.pagination, { has_next: false, cursor: null })
        for (const secret of ["secret-subject", "alice@example.com"]) assert.notInclude(response.text, secret)
      }))

    it.effect("keyset pages, filters (customer_key, start, end, status); bad parameters are 400 naming them", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const a = yield* pay(profile, "alice", 0)
        const b = yield* pay(profile, "bob", 1)
        const c = yield* pay(profile, "alice", 2)
        const d = yield* pay(profile, "carol", 3)
        const ids = (response: { readonly json: any }) => response.json.data.map((row: any) => row.payment_id)

        const seen: Array<string> = []
        let cursor: string | null = null
        let pages = 0
        do {
          const page: { readonly status: number; readonly json: any } = yield* listPayments(profile.key, {
            limit: "3",
            ...(cursor === null ? {} : { cursor })
          })
          assert.strictEqual(page.status, 200)
          seen.push(...ids(page))
          cursor = page.json.pagination.cursor
          assert.strictEqual(page.json.pagination.has_next, cursor !== null)
          pages++
        } while (cursor !== null && pages < 5)
        assert.strictEqual(pages, 2)
        assert.deepStrictEqual(seen, [d, c, b, a].map((row) => row.conversion_id))

        assert.deepStrictEqual(ids(yield* listPayments(profile.key, { customer_key: "alice" })), [c, a].map((row) => row.conversion_id))
        assert.deepStrictEqual(
          ids(yield* listPayments(profile.key, { start: day(1).slice(0, 10), end: day(2).slice(0, 10) })),
          [c, b].map((row) => row.conversion_id)
        )
        assert.strictEqual((yield* refund(profile.key, b.conversion_id)).status, 200)
        assert.deepStrictEqual(ids(yield* listPayments(profile.key, { status: "refunded" })), [b.conversion_id])
        assert.deepStrictEqual(ids(yield* listPayments(profile.key, { status: "paid" })), [d, c, a].map((row) => row.conversion_id))

        for (
          const [name, value] of [
            ["limit", "0"],
            ["limit", "201"],
            ["limit", "x"],
            ["status", "pending"],
            ["start", "yesterday"],
            ["customer_key", ""],
            ["cursor", "garbage"]
          ] as const
        ) {
          const bad = yield* listPayments(profile.key, { [name]: value })
          assert.strictEqual(bad.status, 400, `${name}=${value}`)
          assert.strictEqual(bad.json.error.code, "invalid_parameter")
          assert.include(bad.json.error.message, name)
        }
        const range = yield* listPayments(profile.key, { start: day(3).slice(0, 10), end: day(1).slice(0, 10) })
        assert.strictEqual(range.status, 400)
        assert.strictEqual(range.json.error.code, "invalid_date_range")
      }))
  })

  describe("PUT /api/v1/payments/{payment_id}/installment", () => {
    it.effect("a later installment is never first; the customer's flags are recomputed; the same value again changes nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedShop
        const deposit = yield* pay(profile, "ana", 0)
        const later = yield* pay(profile, "ana", 10)
        assert.deepStrictEqual(yield* flagsOf(profile.key), { [deposit.conversion_id]: true, [later.conversion_id]: false })

        const marked = yield* installment(profile.key, deposit.conversion_id, true)
        assert.strictEqual(marked.status, 200, marked.text)
        assert.deepStrictEqual(Object.keys(marked.json).sort(), ["data", "meta"])
        assert.deepStrictEqual(marked.json.meta, { changed: true })
        assert.strictEqual(marked.json.data.payment_id, deposit.conversion_id)
        assert.strictEqual(marked.json.data.installment, true)
        assert.strictEqual(marked.json.data.is_first_payment, false)
        // The deposit no longer anchors the stream: the next payment is the first one.
        assert.deepStrictEqual(yield* flagsOf(profile.key), { [deposit.conversion_id]: false, [later.conversion_id]: true })

        const again = yield* installment(profile.key, deposit.conversion_id, true)
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json.meta, { changed: false })
        assert.deepStrictEqual(again.json.data, marked.json.data)
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 1, audits: 1, refunded: 0, installments: 1, payers: 0 })
        const [history] = yield* sql<{ action: string; actor_kind: string; actor_id: string; details: any; request_id: string | null }>`
          SELECT action, actor_kind, actor_id, details, request_id FROM payment_actions WHERE payment_id = ${deposit.conversion_id}`
        assert.strictEqual(history?.action, "installment_marked")
        assert.strictEqual(history?.actor_kind, "api_key")
        assert.strictEqual(history?.details.installment, true)
        assert.strictEqual(history?.request_id, marked.headers.get("x-request-id"))
        const [audit] = yield* sql<{ target_kind: string; target_id: string }>`
          SELECT target_kind, target_id FROM audit_events WHERE profile_id = ${profile.profileId} AND action = 'payment.installment_marked'`
        assert.deepStrictEqual(audit, { target_kind: "payment", target_id: deposit.conversion_id })

        const unmarked = yield* installment(profile.key, deposit.conversion_id, false)
        assert.deepStrictEqual(unmarked.json.meta, { changed: true })
        assert.deepStrictEqual(yield* flagsOf(profile.key), { [deposit.conversion_id]: true, [later.conversion_id]: false })
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 2, audits: 2, refunded: 0, installments: 0, payers: 0 })

        // A payment with no customer: first unless marked.
        const lone = yield* pay(profile, undefined, 20)
        assert.strictEqual((yield* installment(profile.key, lone.conversion_id, true)).json.data.is_first_payment, false)
        assert.strictEqual((yield* installment(profile.key, lone.conversion_id, false)).json.data.is_first_payment, true)
      }))
  })

  describe("PUT /api/v1/payments/{payment_id}/payer", () => {
    it.effect("moves the payment to the payer: both customers' first payments recomputed, crediting queued again with the payer's touches", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const first = yield* pay(profile, "ana", 0)
        const second = yield* pay(profile, "ana", 10)
        const bobs = yield* pay(profile, "bob", 20)
        const ana = yield* customerId(profile.profileId, "ana")
        const bob = yield* customerId(profile.profileId, "bob")
        const anaTouch = yield* touch(profile.profileId, { customerId: ana, at: day(-1), channel: "email" })
        const bobTouch = yield* touch(profile.profileId, { customerId: bob, at: day(-2), channel: "paid_social" })
        yield* drain
        assert.deepStrictEqual(yield* creditState(first.conversion_id), { credited: true, rows: 6, last_touch: anaTouch })

        const moved = yield* payer(profile.key, first.conversion_id, "bob")
        assert.strictEqual(moved.status, 200, moved.text)
        assert.deepStrictEqual(moved.json.meta, { changed: true })
        assert.strictEqual(moved.json.data.customer_key, "ana")
        assert.strictEqual(moved.json.data.payer_customer_key, "bob")
        // Ana's other payment is now her first; bob's earlier payment is his first and his own is a repeat.
        assert.deepStrictEqual(yield* flagsOf(profile.key), {
          [first.conversion_id]: true,
          [second.conversion_id]: true,
          [bobs.conversion_id]: false
        })
        // Crediting starts again: no rows until the worker runs, then bob's touches.
        assert.deepStrictEqual(yield* creditState(first.conversion_id), { credited: false, rows: 0, last_touch: null })
        const waiting = yield* linkage(profile.key, { customer_key: "bob" })
        assert.deepStrictEqual(
          waiting.json.data.map((row: any) => [row.payment_id, row.linked, row.reason]),
          [[bobs.conversion_id, true, null], [first.conversion_id, false, "not_credited_yet"]]
        )
        yield* drain
        assert.deepStrictEqual(yield* creditState(first.conversion_id), { credited: true, rows: 6, last_touch: bobTouch })
        // customer_key finds a payment by its own customer or its payer.
        assert.deepStrictEqual(
          (yield* listPayments(profile.key, { customer_key: "ana" })).json.data.map((row: any) => row.payment_id),
          [second.conversion_id, first.conversion_id]
        )

        const again = yield* payer(profile.key, first.conversion_id, "bob")
        assert.deepStrictEqual(again.json.meta, { changed: false })
        assert.isTrue((yield* creditState(first.conversion_id))?.credited)

        // An unknown customer: 404 customer_not_found, nothing written.
        const before = yield* actionTables(profile.profileId)
        const unknown = yield* payer(profile.key, second.conversion_id, "nobody")
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual(unknown.json.error.code, "customer_not_found")
        assert.deepStrictEqual(yield* actionTables(profile.profileId), before)
        // Another profile's customer is unknown here too.
        const other = yield* seedShop
        yield* pay(other, "zed", 0)
        assert.strictEqual((yield* payer(profile.key, second.conversion_id, "zed")).json.error.code, "customer_not_found")

        // null gives it back to the customer it was recorded for.
        const cleared = yield* payer(profile.key, first.conversion_id, null)
        assert.deepStrictEqual(cleared.json.meta, { changed: true })
        assert.strictEqual(cleared.json.data.payer_customer_key, null)
        assert.deepStrictEqual(yield* flagsOf(profile.key), {
          [first.conversion_id]: true,
          [second.conversion_id]: false,
          [bobs.conversion_id]: true
        })
        yield* drain
        assert.deepStrictEqual(yield* creditState(first.conversion_id), { credited: true, rows: 6, last_touch: anaTouch })
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 2, audits: 2, refunded: 0, installments: 0, payers: 0 })
      }))

    it.effect("retracting a payment that was moved to a payer recomputes the payer's first payments", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const moved = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: "to-retract",
          occurred_at: day(0),
          properties: { value: 5, currency: "EUR" },
          user_traits: { external_id: "ana" }
        })
        const bobs = yield* pay(profile, "bob", 20)
        assert.strictEqual((yield* payer(profile.key, moved.json.data.conversion_id, "bob")).status, 200)
        assert.isFalse((yield* flagsOf(profile.key))[bobs.conversion_id])
        const retracted = yield* retract(profile.key, { idempotency_key: "to-retract", reason: "test" })
        assert.strictEqual(retracted.status, 200)
        assert.deepStrictEqual(yield* flagsOf(profile.key), { [bobs.conversion_id]: true })
        // The history outlives the retracted conversion.
        assert.strictEqual((yield* actionTables(profile.profileId))?.actions, 1)
      }))
  })

  describe("POST and DELETE /api/v1/payments/{payment_id}/refund", () => {
    it.effect("records a manual refund (default whole), answers it on the row, a repeat changes nothing, another is 409; DELETE undoes it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedShop
        const sale = yield* pay(profile, "ana", 0, { value: "99.90", currency: "EUR" })

        const recorded = yield* refund(profile.key, sale.conversion_id, { reason: "returned by post" })
        assert.strictEqual(recorded.status, 200, recorded.text)
        assert.deepStrictEqual(recorded.json.meta, { changed: true })
        assert.strictEqual(recorded.json.data.status, "refunded")
        assert.deepStrictEqual(Object.keys(recorded.json.data.refunded).sort(), ["amount", "at", "manual"])
        assert.strictEqual(recorded.json.data.refunded.amount, "99.9")
        assert.strictEqual(recorded.json.data.refunded.manual, true)
        assert.match(recorded.json.data.refunded.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
        assert.notInclude(recorded.text, "returned by post")

        const repeat = yield* refund(profile.key, sale.conversion_id, { reason: "returned by post", amount: "99.9" })
        assert.strictEqual(repeat.status, 200)
        assert.deepStrictEqual(repeat.json.meta, { changed: false })
        assert.deepStrictEqual(repeat.json.data, recorded.json.data)
        const another = yield* refund(profile.key, sale.conversion_id, { amount: "10" })
        assert.strictEqual(another.status, 409)
        assert.strictEqual(another.json.error.code, "invalid_state")
        assert.strictEqual(another.json.error.reason, "already_refunded")
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 1, audits: 1, refunded: 1, installments: 0, payers: 0 })

        const undone = yield* undoRefund(profile.key, sale.conversion_id)
        assert.strictEqual(undone.status, 200)
        assert.deepStrictEqual(undone.json.meta, { changed: true })
        assert.strictEqual(undone.json.data.status, "paid")
        assert.strictEqual(undone.json.data.refunded, null)
        const none = yield* undoRefund(profile.key, sale.conversion_id)
        assert.strictEqual(none.status, 404)
        assert.strictEqual(none.json.error.code, "not_found")

        // A part, sent as a JSON number whose literal is kept exactly.
        const part = yield* refund(profile.key, sale.conversion_id, "{\"amount\": 12.345678}")
        assert.strictEqual(part.status, 200, part.text)
        assert.strictEqual(part.json.data.refunded.amount, "12.345678")
        const [stored] = yield* sql<{ amount: string }>`SELECT refund_amount::text AS amount FROM conversions WHERE id = ${sale.conversion_id}`
        assert.strictEqual(stored?.amount, "12.345678")
        const history = yield* sql<{ action: string; details: any }>`
          SELECT action, details FROM payment_actions WHERE payment_id = ${sale.conversion_id} ORDER BY created_at, id`
        assert.deepStrictEqual(history.map((row) => row.action), ["refund_recorded", "refund_undone", "refund_recorded"])
        assert.deepStrictEqual(history[0]?.details, { amount: "99.9", currency: "EUR", full: true, reason: "returned by post" })
        assert.deepStrictEqual(history[2]?.details, { amount: "12.345678", currency: "EUR", full: false, reason: null })
        assert.strictEqual((yield* actionTables(profile.profileId))?.audits, 3)
      }))

    it.effect("an amount over what was paid, not more than 0 or malformed: 400 validation_error, nothing written", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const sale = yield* pay(profile, "ana", 0, { value: "20", currency: "EUR" })
        const bare = yield* pay(profile, "ana", 1, {})
        for (const body of [{ amount: "20.000001" }, { amount: "0" }, { amount: -1 }, { amount: "abc" }, { amount: "1.1234567" }, { reason: " " }]) {
          const bad = yield* refund(profile.key, sale.conversion_id, body)
          assert.strictEqual(bad.status, 400, JSON.stringify(body))
          assert.strictEqual(bad.json.error.code, "validation_error")
        }
        const noAmount = yield* refund(profile.key, bare.conversion_id, { amount: "1" })
        assert.strictEqual(noAmount.status, 400)
        assert.include(noAmount.json.error.message, "body.amount")
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 0, audits: 0, refunded: 0, installments: 0, payers: 0 })
        // A payment with no amount is refunded whole.
        const whole = yield* refund(profile.key, bare.conversion_id)
        assert.deepStrictEqual(whole.json.data.refunded, { amount: null, at: whole.json.data.refunded.at, manual: true })
        // The whole amount is fine.
        assert.strictEqual((yield* refund(profile.key, sale.conversion_id, { amount: 20 })).json.data.refunded.amount, "20")
      }))
  })

  describe("GET /api/v1/payments/linkage", () => {
    it.effect("per payment the credited touch under the model (ad entities, join method, click id kind, never its value), or why none", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const ana = yield* pay(profile, "ana", 10, { value: "50", currency: "EUR" })
        const lonely = yield* pay(profile, "lonely", 11)
        const nobody = yield* pay(profile, undefined, 12)
        const anaId = yield* customerId(profile.profileId, "ana")
        const early = yield* touch(profile.profileId, { customerId: anaId, at: day(2), channel: "organic_search", source: "search" })
        const click = yield* touch(profile.profileId, {
          customerId: anaId,
          at: day(9),
          channel: "paid_social",
          source: "adplatform",
          medium: "cpc",
          campaign: ["cmp-1", "Spring"],
          adSet: ["set-1", "Lookalikes"],
          ad: ["ad-1", "Video A"],
          clickIdKind: "fbclid",
          clickId: "SECRET-CLICK-VALUE",
          joinMethod: "click_id"
        })

        const before = yield* linkage(profile.key)
        assert.strictEqual(before.status, 200)
        assert.deepStrictEqual(before.json.data.map((row: any) => [row.linked, row.reason]), [
          [false, "not_credited_yet"],
          [false, "not_credited_yet"],
          [false, "not_credited_yet"]
        ])

        yield* drain
        const response = yield* linkage(profile.key)
        assert.strictEqual(response.status, 200)
        assert.notInclude(response.text, "SECRET-CLICK-VALUE")
        const [n, l, a] = response.json.data
        assert.deepStrictEqual(n, {
          payment_id: nobody.conversion_id,
          outcome_event_id: nobody.outcome_event_id,
          occurred_at: "2026-03-13T10:00:00.000000Z",
          amount: "10",
          currency: "EUR",
          customer_key: null,
          status: "paid",
          credit_model: "last_touch",
          linked: false,
          reason: "no_customer",
          touch: null,
          credited_touches: 0
        })
        assert.strictEqual(l.payment_id, lonely.conversion_id)
        assert.deepStrictEqual([l.linked, l.reason, l.touch], [false, "no_touch_in_window", null])
        assert.strictEqual(a.payment_id, ana.conversion_id)
        assert.deepStrictEqual([a.linked, a.reason, a.credited_touches], [true, null, 1])
        assert.deepStrictEqual(a.touch, {
          touch_id: click,
          kind: "web_touch",
          at: "2026-03-10T10:00:00.000000Z",
          channel: "paid_social",
          source: "adplatform",
          medium: "cpc",
          campaign: { external_id: "cmp-1", name: "Spring" },
          ad_set: { external_id: "set-1", name: "Lookalikes" },
          ad: { external_id: "ad-1", name: "Video A" },
          join_method: "click_id",
          click_id_kind: "fbclid",
          credit_share: "1.0000000000"
        })

        const first = yield* linkage(profile.key, { model: "first_touch", customer_key: "ana" })
        assert.deepStrictEqual(first.json.data.map((row: any) => [row.credit_model, row.touch.touch_id]), [["first_touch", early]])
        assert.deepStrictEqual(first.json.data[0].touch.campaign, null)
        const linear = yield* linkage(profile.key, { model: "linear", customer_key: "ana" })
        assert.strictEqual(linear.json.data[0].credited_touches, 2)
        // Equal shares: the later touch.
        assert.deepStrictEqual([linear.json.data[0].touch.touch_id, linear.json.data[0].touch.credit_share], [click, "0.5000000000"])

        const paged = yield* linkage(profile.key, { limit: "2" })
        assert.strictEqual(paged.json.data.length, 2)
        const rest = yield* linkage(profile.key, { limit: "2", cursor: paged.json.pagination.cursor })
        assert.deepStrictEqual(rest.json.data.map((row: any) => row.payment_id), [ana.conversion_id])
        assert.isFalse(rest.json.pagination.has_next)

        const bad = yield* linkage(profile.key, { model: "u_shaped" })
        assert.strictEqual(bad.status, 400)
        assert.strictEqual(bad.json.error.code, "invalid_parameter")
        assert.include(bad.json.error.message, "model")
      }))
  })

  describe("POST /api/v1/payments/cardgw", () => {
    const body = (id: string, extra: Record<string, unknown> = {}) => ({
      gateway_payment_id: id,
      amount: "42.50",
      currency: "EUR",
      occurred_at: day(0),
      customer: { external_id: "ana", email: "Ana@Example.com" },
      description: "Order 77",
      ...extra
    })

    it.effect("records a cardgw payment event and its conversion, creating the built-in cash definition on first use; outbox row", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const response = yield* cardgw(profile.key, body("ch_1"))
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(Object.keys(response.json.data).sort(), ["outcome_event_id", "payment_id"])
        const { outcome_event_id, payment_id } = response.json.data
        const [event] = yield* sql<{ source: string; event_name: string; idempotency_key: string; value: string }>`
          SELECT source, event_name, idempotency_key, value_amount::text AS value FROM outcome_events WHERE id = ${outcome_event_id}`
        assert.deepStrictEqual(event, { source: "cardgw", event_name: "payment", idempotency_key: "cardgw:ch_1", value: "42.500000" })
        const definitions = yield* sql<{ conversion_key: string; event_names: Array<string>; counts_as_cash: boolean }>`
          SELECT conversion_key, event_names, counts_as_cash FROM conversion_definitions WHERE profile_id = ${profile.profileId}`
        assert.deepStrictEqual(definitions, [{ conversion_key: "cardgw_payment", event_names: ["payment"], counts_as_cash: true }])
        const [audit] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM audit_events WHERE profile_id = ${profile.profileId} AND action = 'conversion_definition.created'`
        assert.strictEqual(audit?.n, 1)
        const [outbox] = yield* sql<{ payload: any }>`SELECT payload FROM outbox WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(outbox?.payload.data.provider, "cardgw")
        assert.strictEqual(outbox?.payload.data.outcome_type, "payment")
        assert.strictEqual(outbox?.payload.data.value, "42.5")
        assert.strictEqual(outbox?.payload.data.conversion_id, payment_id)
        assert.strictEqual(outbox?.payload.data.customer_key, "ana")
        assert.notInclude(JSON.stringify(outbox?.payload), "Order 77")

        const listed = yield* listPayments(profile.key)
        assert.deepStrictEqual(
          listed.json.data.map((row: any) => [row.payment_id, row.amount, row.currency, row.customer_key, row.is_first_payment]),
          [[payment_id, "42.5", "EUR", "ana", true]]
        )
        // A second payment reuses the definition.
        const second = yield* cardgw(profile.key, body("ch_2", { occurred_at: day(30) }))
        assert.strictEqual(second.status, 200)
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM conversion_definitions WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(count?.n, 1)
        assert.deepStrictEqual(yield* flagsOf(profile.key), { [payment_id]: true, [second.json.data.payment_id]: false })
      }))

    it.effect("idempotent on gateway_payment_id: the same body answers the same bytes; another body is 409 idempotency_key_conflict", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const first = yield* cardgw(profile.key, body("ch_9"))
        assert.strictEqual(first.status, 200)
        // The same request: keys reordered, the amount written otherwise, the email's case.
        const same = yield* cardgw(profile.key, {
          ...body("ch_9"),
          amount: 42.5,
          customer: { email: "ana@example.com", external_id: "ana" }
        })
        assert.strictEqual(same.status, 200, same.text)
        assert.strictEqual(same.text, first.text)
        const conflicts = yield* Effect.all([
          cardgw(profile.key, body("ch_9", { amount: "42.51" })),
          cardgw(profile.key, body("ch_9", { description: "Order 78" })),
          cardgw(profile.key, body("ch_9", { customer: { external_id: "bob" } }))
        ])
        for (const conflict of conflicts) {
          assert.strictEqual(conflict.status, 409)
          assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
          assert.include(conflict.json.error.message, "gateway_payment_id")
        }
        const [row] = yield* sql<{ events: number; conversions: number; outbox: number }>`
          SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profile.profileId}) AS events,
                 (SELECT count(*)::int FROM conversions WHERE profile_id = ${profile.profileId}) AS conversions,
                 (SELECT count(*)::int FROM outbox WHERE profile_id = ${profile.profileId}) AS outbox`
        assert.deepStrictEqual(row, { events: 1, conversions: 1, outbox: 1 })
        // Parallel first calls: one payment.
        const parallel = yield* Effect.all(Array.from({ length: 8 }, () => cardgw(profile.key, body("ch_10"))), { concurrency: "unbounded" })
        assert.deepStrictEqual([...new Set(parallel.map((response) => response.status))], [200])
        assert.strictEqual(new Set(parallel.map((response) => response.text)).size, 1)
        // The key is the cardgw's own: POST /api/v1/events cannot take it.
        const reserved = yield* ingest(profile.key, { event_name: "payment", idempotency_key: "cardgw:ch_9" })
        assert.strictEqual(reserved.status, 400)
        assert.strictEqual(reserved.json.error.code, "validation_error")
        assert.include(reserved.json.error.message, "idempotency_key")
      }))

    it.effect("a definition listing payment is used; a JSON number amount is exact; validation 400s write nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "card_sale", ["payment"], { countsAsCash: true })
        const exact = yield* cardgw(
          profile.key,
          `{"gateway_payment_id":"ch_x","amount":12345678901234.123456,"currency":"USD","customer":{"external_id":"ana"}}`
        )
        assert.strictEqual(exact.status, 200, exact.text)
        const [row] = yield* sql<{ conversion_key: string; value: string; keys: number }>`
          SELECT c.conversion_key, trim_scale(c.value_amount)::text AS value,
                 (SELECT count(*)::int FROM conversion_definitions d WHERE d.profile_id = ${profile.profileId}) AS keys
          FROM conversions c WHERE c.id = ${exact.json.data.payment_id}`
        assert.deepStrictEqual(row, { conversion_key: "card_sale", value: "12345678901234.123456", keys: 1 })

        const fresh = yield* seedEventsProfile()
        const cases: Array<[unknown, string, string]> = [
          [body("ch_1", { amount: "0" }), "validation_error", "amount"],
          [body("ch_1", { amount: -5 }), "validation_error", "amount"],
          [body("ch_1", { amount: "1.1234567" }), "validation_error", "amount"],
          [body("ch_1", { currency: "eur" }), "validation_error", "currency"],
          [body("ch_1", { gateway_payment_id: " " }), "validation_error", "gateway_payment_id"],
          [body("ch_1", { occurred_at: "yesterday" }), "validation_error", "occurred_at"],
          [body("ch_1", { customer: { external_id: "" } }), "validation_error", "external_id"],
          [body("ch_1", { subject_ref: "ana@example.com" }), "invalid_parameter", "subject_ref"],
          [body("ch_1", { subject_ref: "x".repeat(40) }), "validation_error", "subject_ref"],
          [{ amount: "1", currency: "EUR", customer: {} }, "validation_error", "gateway_payment_id"]
        ]
        for (const [request, code, field] of cases) {
          const bad = yield* cardgw(fresh.key, request)
          assert.strictEqual(bad.status, 400, JSON.stringify(request))
          assert.strictEqual(bad.json.error.code, code, JSON.stringify(request))
          assert.include(bad.json.error.message, field)
        }
        assert.notInclude((yield* cardgw(fresh.key, body("ch_1", { subject_ref: "ana@example.com" }))).text, "ana@example.com")
        const [counts] = yield* sql<{ events: number; definitions: number; outbox: number }>`
          SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${fresh.profileId}) AS events,
                 (SELECT count(*)::int FROM conversion_definitions WHERE profile_id = ${fresh.profileId}) AS definitions,
                 (SELECT count(*)::int FROM outbox WHERE profile_id = ${fresh.profileId}) AS outbox`
        assert.deepStrictEqual(counts, { events: 0, definitions: 0, outbox: 0 })
      }))

    it.effect("the built-in key taken by a definition that does not list payment: 409 invalid_state, nothing recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "cardgw_payment", ["charge"], { countsAsCash: true })
        const refused = yield* cardgw(profile.key, body("ch_1"))
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        assert.strictEqual(refused.json.error.reason, "payment_definition_conflict")
        const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outcome_events WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(row?.n, 0)
      }))
  })

  describe("access", () => {
    it.effect("another profile's payment, an unknown or malformed id, and a non-cash conversion: one identical 404 on every route", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const other = yield* seedShop
        const foreign = yield* pay(other, "ana", 0)
        const lead = yield* ingest(profile.key, { event_name: "form", user_traits: { external_id: "ana" } })
        yield* pay(profile, "ana", 0)
        const ids = [foreign.conversion_id, crypto.randomUUID(), "not-a-uuid", lead.json.data.conversion_id]
        const routes = [
          (id: string) => installment(profile.key, id, true),
          (id: string) => payer(profile.key, id, "ana"),
          (id: string) => refund(profile.key, id),
          (id: string) => undoRefund(profile.key, id)
        ]
        let reference: string | undefined
        for (const route of routes) {
          for (const id of ids) {
            const response = yield* route(id)
            assert.strictEqual(response.status, 404, id)
            assert.strictEqual(response.json.error.code, "not_found")
            reference ??= withoutRequestId(response.text)
            assert.strictEqual(withoutRequestId(response.text), reference)
          }
        }
        assert.deepStrictEqual(yield* actionTables(other.profileId), { actions: 0, audits: 0, refunded: 0, installments: 0, payers: 0 })
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 0, audits: 0, refunded: 0, installments: 0, payers: 0 })
      }))

    it.effect("an app-provisioned profile with the add-on off: writes answer 409 entitlement_required, reads answer empty", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp("Payments partner")
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })).json.data
        const profile = { profileId: created.profile_id as string, workspaceId: created.workspace_id as string }
        const { key } = yield* seedApiKey(profile, { scopes: ["events:write", "conversions:read"], rateLimitPerMinute: 10_000 })
        // A payment written by SQL (ingest itself is gated too).
        const eventId = crypto.randomUUID()
        const paymentId = crypto.randomUUID()
        yield* sql`
          WITH e AS (
            INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, value_amount, currency)
            VALUES (${eventId}, ${profile.profileId}, 'k', 'h', 'purchase', now(), 10, 'EUR')
            RETURNING profile_id, idempotency_key, id, occurred_at)
          INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
        yield* sql`
          INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, value_amount, currency,
                                   counts_as_cash, attribution_eligible, is_first_payment)
          VALUES (${paymentId}, ${profile.profileId}, ${eventId}, 'sale', (SELECT occurred_at FROM outcome_events WHERE id = ${eventId}),
                  10, 'EUR', true, true, true)`
        const writes = [
          installment(key, paymentId, true),
          payer(key, paymentId, null),
          refund(key, paymentId),
          undoRefund(key, paymentId),
          cardgw(key, { gateway_payment_id: "ch_1", amount: "1", currency: "EUR", customer: {} })
        ]
        for (const write of writes) {
          const refused = yield* write
          assert.strictEqual(refused.status, 409)
          assert.strictEqual(refused.json.error.code, "entitlement_required")
          assert.include(refused.json.error.message, "svc_attribution")
        }
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 0, audits: 0, refunded: 0, installments: 0, payers: 0 })
        for (const read of [listPayments(key), linkage(key)]) {
          const response = yield* read
          assert.strictEqual(response.status, 200)
          assert.deepStrictEqual(response.json, { data: [], pagination: { has_next: false, cursor: null } })
        }
      }))

    it.effect("scopes: reads need conversions:read, writes events:write (403 insufficient_scope); no credential 401", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const sale = yield* pay(profile, "ana", 0)
        const reader = yield* seedApiKey(profile, { scopes: ["conversions:read"], rateLimitPerMinute: 10_000 })
        const writer = yield* seedApiKey(profile, { scopes: ["events:write"], rateLimitPerMinute: 10_000 })
        assert.strictEqual((yield* listPayments(reader.key)).status, 200)
        for (const response of [yield* listPayments(writer.key), yield* linkage(writer.key)]) {
          assert.strictEqual(response.status, 403)
          assert.include(response.json.error.message, "conversions:read")
        }
        const refused = yield* installment(reader.key, sale.conversion_id, true)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.include(refused.json.error.message, "events:write")
        assert.strictEqual((yield* installment(writer.key, sale.conversion_id, true)).status, 200)
        assert.strictEqual((yield* call("/api/v1/payments")).status, 401)
      }))

    it.effect("a signed-in session reads with ?profile_id= and acts with its CSRF token; the history names the person", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedShop
        const sale = yield* pay(profile, "ana", 0)
        const owner = yield* seedMemberSession(profile, "owner")
        const listed = yield* call(`/api/v1/payments?profile_id=${profile.profileId}`, { headers: owner.headers })
        assert.strictEqual(listed.status, 200, listed.text)
        assert.deepStrictEqual(listed.json.data.map((row: any) => row.payment_id), [sale.conversion_id])
        const path = `/api/v1/payments/${sale.conversion_id}/installment?profile_id=${profile.profileId}`
        const withoutCsrf = yield* call(path, {
          method: "PUT",
          headers: { cookie: owner.cookie, "content-type": "application/json" },
          body: JSON.stringify({ installment: true })
        })
        assert.strictEqual(withoutCsrf.status, 403)
        const marked = yield* call(path, {
          method: "PUT",
          headers: { ...owner.headers, "content-type": "application/json" },
          body: JSON.stringify({ installment: true })
        })
        assert.strictEqual(marked.status, 200, marked.text)
        const [history] = yield* sql<{ actor_kind: string; actor_user_id: string }>`
          SELECT actor_kind, actor_user_id::text AS actor_user_id FROM payment_actions WHERE payment_id = ${sale.conversion_id}`
        assert.deepStrictEqual(history, { actor_kind: "session", actor_user_id: owner.userId })
      }))

    it.effect("body validation: 400 validation_error naming the field, nothing written", () =>
      Effect.gen(function*() {
        const profile = yield* seedShop
        const sale = yield* pay(profile, "ana", 0)
        const cases: Array<[Effect.Effect<{ readonly status: number; readonly json: any }, unknown, any>, string]> = [
          [installment(profile.key, sale.conversion_id, "yes"), "installment"],
          [send(profile.key, "PUT", `/api/v1/payments/${sale.conversion_id}/installment`, {}), "installment"],
          [payer(profile.key, sale.conversion_id, ""), "customer_key"],
          [payer(profile.key, sale.conversion_id, " "), "customer_key"],
          [payer(profile.key, sale.conversion_id, 7), "customer_key"],
          [refund(profile.key, sale.conversion_id, { amount: true }), "amount"],
          [send(profile.key, "POST", `/api/v1/payments/${sale.conversion_id}/refund`, "{not json"), ""]
        ]
        for (const [request, field] of cases) {
          const bad = yield* request
          assert.strictEqual(bad.status, 400, field)
          assert.strictEqual(bad.json.error.code, "validation_error", field)
          assert.include(bad.json.error.message, field)
        }
        assert.deepStrictEqual(yield* actionTables(profile.profileId), { actions: 0, audits: 0, refunded: 0, installments: 0, payers: 0 })
      }))
  })
})
