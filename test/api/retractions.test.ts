import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { serveApp, testSettings } from "../support/app.ts"
import {
  defineConversion,
  type EventsFixture,
  eventTables,
  firstPaymentOf,
  ingest,
  listConversions,
  retract,
  seedEventsProfile
} from "../support/events.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey } from "../support/tenancy.ts"

const ZERO = { events: 0, conversions: 0, credits: 0, first_payment_flags: 0 }

/** A payment recorded under `key` for customer `customer`, on 2026-03-01 plus `days`. */
const pay = (profile: EventsFixture, key: string, customer: string, days: number) =>
  Effect.gen(function*() {
    const response = yield* ingest(profile.key, {
      event_name: "purchase",
      idempotency_key: key,
      occurred_at: new Date(Date.UTC(2026, 2, 1) + days * 86_400_000).toISOString(),
      properties: { value: 25, currency: "EUR" },
      user_traits: { external_id: customer }
    })
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data as { outcome_event_id: string; conversion_id: string }
  })

/** Credit rows for a conversion under two models, as the attribution worker would write them. */
const credit = (profileId: string, conversionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const touches = [crypto.randomUUID(), crypto.randomUUID()]
    for (const touch of touches) {
      yield* sql`INSERT INTO touches (id, profile_id, kind, occurred_at, channel) VALUES (${touch}, ${profileId}, 'web_touch', now(), 'paid_social')`
    }
    // Credit rows sit in their conversion's month (migration 0073) and name their touch's time (0075).
    yield* sql`
      INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited,
                                       in_window)
      SELECT c.profile_id, c.id, c.occurred_at, r.model, t.id, t.occurred_at, r.position, r.share, true, true
      FROM (VALUES ('last_touch', ${touches[1]!}::uuid, 2, 1), ('linear', ${touches[0]!}::uuid, 1, 0.5), ('linear', ${touches[1]!}::uuid, 2, 0.5))
             AS r(model, touch_id, position, share)
      JOIN conversions c ON c.id = ${conversionId}
      JOIN touches t ON t.id = r.touch_id`
    yield* sql`DELETE FROM credit_queue WHERE conversion_id = ${conversionId}`
  })

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("POST /api/v1/events/retractions", (it) => {
  describe("the server-side event state table", () => {
    it.effect("ingested -> retracted: conversions and credit deleted, flags recomputed, replay queued, audited; counts only", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const first = yield* pay(profile, "order-1", "cust-1", 0)
        const second = yield* pay(profile, "order-2", "cust-1", 30)
        yield* credit(profile.profileId, first.conversion_id)
        assert.isFalse(yield* firstPaymentOf(second.outcome_event_id))
        const before = yield* eventTables(profile.profileId)

        const response = yield* retract(profile.key, { idempotency_key: "order-1", reason: "duplicate sale from the POS" })
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json, {
          data: { status: "retracted", counts: { events: 1, conversions: 1, credits: 3, first_payment_flags: 1 } }
        })
        // The customer's other payment is now the first one.
        assert.isTrue(yield* firstPaymentOf(second.outcome_event_id))
        const [gone] = yield* sql<{ conversions: number; credits: number }>`
          SELECT (SELECT count(*)::int FROM conversions WHERE id = ${first.conversion_id}) AS conversions,
                 (SELECT count(*)::int FROM attribution_credits WHERE conversion_id = ${first.conversion_id}) AS credits`
        assert.deepStrictEqual({ ...gone }, { conversions: 0, credits: 0 })
        const [event] = yield* sql<any>`
          SELECT retracted_at IS NOT NULL AS retracted, retraction_reason, value_amount, customer_id, subject_ref
          FROM outcome_events WHERE id = ${first.outcome_event_id}`
        assert.deepStrictEqual({ ...event }, {
          retracted: true,
          retraction_reason: "duplicate sale from the POS",
          value_amount: null,
          customer_id: null,
          subject_ref: null
        })
        const jobs = yield* sql<{ kind: string; reason: string; state: string }>`
          SELECT kind, reason, state FROM work_jobs WHERE profile_id = ${profile.profileId}`
        // Queued by the retraction; the app's attribution worker may already have taken it (a race CI saw).
        assert.deepStrictEqual(jobs.map((row) => ({ kind: row.kind, reason: row.reason })), [{ kind: "attribution_replay", reason: "retraction" }])
        assert.include(["queued", "running", "succeeded"], jobs[0]?.state)
        const audits = yield* sql<{ actor_kind: string; target_kind: string; target_id: string; details: any }>`
          SELECT actor_kind, target_kind, target_id, details FROM audit_events
          WHERE profile_id = ${profile.profileId} AND action = 'event.retracted'`
        assert.strictEqual(audits.length, 1)
        assert.deepStrictEqual({ ...audits[0] }, {
          actor_kind: "api_key",
          target_kind: "outcome_event",
          target_id: first.outcome_event_id,
          details: {
            idempotency_key: "order-1",
            reason: "duplicate sale from the POS",
            counts: { events: 1, conversions: 1, credits: 3, first_payment_flags: 1 }
          }
        })
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          ...before!,
          conversions: before!.conversions - 1,
          jobs: 1,
          audits: 1
        })
        // Its conversion is gone from the list.
        const listed = yield* listConversions(profile.key)
        assert.deepStrictEqual(listed.json.data.map((row: any) => row.conversion_id), [second.conversion_id])
      }))

    it.effect("retracted -> retraction again: 200 already_retracted, zero counts, nothing more written", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* pay(profile, "order-1", "cust-1", 0)
        assert.strictEqual((yield* retract(profile.key, { idempotency_key: "order-1", reason: "first" })).status, 200)
        const before = yield* eventTables(profile.profileId)
        const again = yield* retract(profile.key, { idempotency_key: "order-1", reason: "second" })
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json, { data: { status: "already_retracted", counts: ZERO } })
        assert.deepStrictEqual(yield* eventTables(profile.profileId), before)
      }))

    it.effect("unknown key: 404 event_not_found; another profile's key is unknown too", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const missing = yield* retract(profile.key, { idempotency_key: "never-sent", reason: "x" })
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(missing.json.error.code, "event_not_found")
        const other = yield* seedEventsProfile()
        yield* defineConversion(other.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* pay(other, "theirs", "c", 0)
        const foreign = yield* retract(profile.key, { idempotency_key: "theirs", reason: "x" })
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.json.error.code, "event_not_found")
        assert.deepStrictEqual(yield* eventTables(profile.profileId), {
          events: 0, conversions: 0, customers: 0, identifiers: 0, outbox: 0, jobs: 0, audits: 0
        })
        assert.strictEqual((yield* eventTables(other.profileId))?.conversions, 1)
      }))

    it.effect("a conversion export exists in any status: 409 event_already_exported, nothing changes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        for (const status of ["pending", "failed", "delivered"]) {
          const key = `exported-${status}`
          const event = yield* pay(profile, key, "cust-1", 0)
          yield* sql`
            INSERT INTO conversion_exports (id, profile_id, outcome_event_id, destination, status)
            VALUES (${crypto.randomUUID()}, ${profile.profileId}, ${event.outcome_event_id}, 'adplatform_capi', ${status})`
          const before = yield* eventTables(profile.profileId)
          const refused = yield* retract(profile.key, { idempotency_key: key, reason: "x" })
          assert.strictEqual(refused.status, 409, status)
          assert.strictEqual(refused.json.error.code, "event_already_exported")
          assert.deepStrictEqual(yield* eventTables(profile.profileId), before)
          const [row] = yield* sql<{ retracted: boolean }>`
            SELECT retracted_at IS NOT NULL AS retracted FROM outcome_events WHERE id = ${event.outcome_event_id}`
          assert.isFalse(row?.retracted)
        }
      }))

    it.effect("a conversation recorded it as its lead: 409 event_linked_to_conversation, nothing changes", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "lead", ["lead"])
        const response = yield* ingest(profile.key, { event_name: "lead", idempotency_key: "lead-1" })
        yield* sql`
          INSERT INTO conversation_leads (conversation_id, profile_id, outcome_event_id)
          VALUES (${crypto.randomUUID()}, ${profile.profileId}, ${response.json.data.outcome_event_id})`
        const before = yield* eventTables(profile.profileId)
        const refused = yield* retract(profile.key, { idempotency_key: "lead-1", reason: "x" })
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "event_linked_to_conversation")
        assert.deepStrictEqual(yield* eventTables(profile.profileId), before)
      }))
  })

  describe("first payments after a retraction", () => {
    it.effect("retracting the first payment promotes the next one; a balance of the retracted deposit becomes the deposit", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const deposit = yield* pay(profile, "p-0", "ivy", 0)
        const balance = yield* pay(profile, "p-5", "ivy", 5)
        const next = yield* pay(profile, "p-10", "ivy", 10)
        const later = yield* pay(profile, "p-40", "ivy", 40)
        assert.deepStrictEqual(
          [
            yield* firstPaymentOf(deposit.outcome_event_id),
            yield* firstPaymentOf(balance.outcome_event_id),
            yield* firstPaymentOf(next.outcome_event_id),
            yield* firstPaymentOf(later.outcome_event_id)
          ],
          [true, true, false, false]
        )
        const response = yield* retract(profile.key, { idempotency_key: "p-0", reason: "charged back" })
        // day 5 stays first; day 10 is now within 7 days of it.
        assert.deepStrictEqual(response.json.data.counts, { events: 1, conversions: 1, credits: 0, first_payment_flags: 1 })
        assert.deepStrictEqual(
          [yield* firstPaymentOf(balance.outcome_event_id), yield* firstPaymentOf(next.outcome_event_id), yield* firstPaymentOf(later.outcome_event_id)],
          [true, true, false]
        )
      }))

    it.effect("an event that never became a conversion retracts with zero conversions", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* ingest(profile.key, { event_name: "page_call", idempotency_key: "plain" })
        const response = yield* retract(profile.key, { idempotency_key: "plain", reason: "test" })
        assert.deepStrictEqual(response.json, {
          data: { status: "retracted", counts: { events: 1, conversions: 0, credits: 0, first_payment_flags: 0 } }
        })
      }))
  })

  describe("access and bodies", () => {
    it.effect("no add-on needed: an app-provisioned profile with the add-on off retracts", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp("Retraction partner")
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })).json.data
        const profile = { profileId: created.profile_id as string, workspaceId: created.workspace_id as string }
        const { key } = yield* seedApiKey(profile, { scopes: ["events:write"], rateLimitPerMinute: 10_000 })
        // Recorded while the add-on was on (written directly: ingest itself is gated).
        yield* sql`
          WITH e AS (
            INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
            VALUES (${crypto.randomUUID()}, ${profile.profileId}, 'old-1', 'h', 'purchase', now())
            RETURNING profile_id, idempotency_key, id, occurred_at)
          INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
        assert.strictEqual((yield* ingest(key, { event_name: "purchase" })).json.error.code, "entitlement_required")
        const response = yield* retract(key, { idempotency_key: "old-1", reason: "cleanup" })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.json.data.status, "retracted")
      }))

    it.effect("without events:write: 403; a body without idempotency_key or reason: 400 validation_error", () =>
      Effect.gen(function*() {
        const reader = yield* seedEventsProfile(["conversions:read"])
        const refused = yield* retract(reader.key, { idempotency_key: "x", reason: "y" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const profile = yield* seedEventsProfile()
        for (const [body, field] of [[{ reason: "y" }, "idempotency_key"], [{ idempotency_key: "x" }, "reason"], [{ idempotency_key: "", reason: "y" }, "idempotency_key"]] as const) {
          const bad = yield* retract(profile.key, body)
          assert.strictEqual(bad.status, 400)
          assert.strictEqual(bad.json.error.code, "validation_error")
          assert.include(bad.json.error.message, field)
        }
      }))

    it.effect("concurrent retractions of one event: one retracts, the others answer already_retracted", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        yield* pay(profile, "race-1", "cust", 0)
        const answers = yield* Effect.all(
          Array.from({ length: 10 }, () => retract(profile.key, { idempotency_key: "race-1", reason: "race" })),
          { concurrency: "unbounded" }
        )
        const statuses = answers.map((answer) => answer.json.data.status).sort()
        assert.deepStrictEqual(statuses, ["already_retracted", ...Array(8).fill("already_retracted"), "retracted"].sort())
        const tables = yield* eventTables(profile.profileId)
        assert.strictEqual(tables?.jobs, 1)
        assert.strictEqual(tables?.audits, 1)
      }))
  })
})
