/**
 * The identity graph at ingest (decisions 0029 and 0040): CRM contact ids, national ids (only as
 * a keyed hash), the tracker's anonymous id (its touches join the person), and proposals when
 * an identifier lands on a second customer.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { serveApp, testSettings } from "../support/app.ts"
import { eventTables, ingest, seedEventsProfile } from "../support/events.ts"

const customerOfEvent = (outcomeEventId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ customer_id: string | null }>`SELECT customer_id FROM outcome_events WHERE id = ${outcomeEventId}`
    return row?.customer_id ?? null
  })

const recorded = (answer: { readonly status: number; readonly json: any; readonly text: string }) => {
  assert.strictEqual(answer.status, 200, answer.text)
  return answer.json.data.outcome_event_id as string
}

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("identity graph at ingest", (it) => {
  describe("identifiers", () => {
    it.effect("a CRM contact id names the customer who holds it; another key with the same id raises a proposal", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const first = recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { external_id: "k1", crm_contact_id: " CRM-1 " } }))
        const byCrm = recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { crm_contact_id: "CRM-1" } }))
        assert.strictEqual(yield* customerOfEvent(byCrm), yield* customerOfEvent(first))
        recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { external_id: "k3", crm_contact_id: "CRM-1" } }))
        const proposals = yield* sql<{ evidence: unknown }>`SELECT evidence FROM merge_proposals WHERE profile_id = ${profile.profileId}`
        assert.deepStrictEqual(proposals.map((row) => row.evidence), [[{ type: "crm_contact_id", value: "CRM-1" }]])
      }))

    it.effect("a national id is stored and matched only as a keyed hash; spacing and case do not matter", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const first = recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { external_id: "n1", national_id: "12345678-z" } }))
        const again = recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { national_id: "12 345 678 Z" } }))
        assert.strictEqual(yield* customerOfEvent(again), yield* customerOfEvent(first))
        const [row] = yield* sql<{ value: string }>`
          SELECT value FROM customer_identifiers WHERE profile_id = ${profile.profileId} AND kind = 'national_id'`
        assert.match(row!.value, /^[0-9a-f]{64}$/)
        const leaks = yield* sql<{ n: number }>`
          SELECT (SELECT count(*) FROM customer_identifiers WHERE profile_id = ${profile.profileId} AND value ILIKE '%12345678%')
               + (SELECT count(*) FROM outcome_events WHERE profile_id = ${profile.profileId} AND request_hash ILIKE '%12345678%')
               + (SELECT count(*) FROM outbox WHERE profile_id = ${profile.profileId} AND payload::text ILIKE '%12345678%') AS n`
        assert.strictEqual(Number(leaks[0]!.n), 0)
      }))

    it.effect("the tracker's anonymous id joins the browser's unbound touches to the person (join_method anonymous_id)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        const other = crypto.randomUUID()
        yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${other}, ${profile.profileId}, 'someone-else')`
        for (const [at, customer] of [["2026-03-01T10:00:00Z", null], ["2026-03-02T10:00:00Z", null], ["2026-03-03T10:00:00Z", other]] as const) {
          yield* sql`
            INSERT INTO touches (id, profile_id, kind, occurred_at, channel, anonymous_id, customer_id, join_method)
            VALUES (${crypto.randomUUID()}, ${profile.profileId}, 'web_touch', ${at}::timestamptz, 'paid_search', 'anon-abcdef12',
                    ${customer}, ${customer === null ? null : "link_token"})`
        }
        const event = recorded(yield* ingest(profile.key, { event_name: "signup", user_traits: { external_id: "web-1", anonymous_id: "anon-abcdef12" } }))
        const customer = yield* customerOfEvent(event)
        const touches = yield* sql<{ customer_id: string; join_method: string }>`
          SELECT customer_id, join_method FROM touches WHERE profile_id = ${profile.profileId} ORDER BY occurred_at`
        assert.deepStrictEqual(touches.map((row) => ({ ...row })), [
          { customer_id: customer!, join_method: "anonymous_id" },
          { customer_id: customer!, join_method: "anonymous_id" },
          { customer_id: other, join_method: "link_token" }
        ])
        const [identifier] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM customer_identifiers WHERE customer_id = ${customer} AND kind = 'anonymous_id' AND value = 'anon-abcdef12'`
        assert.strictEqual(identifier!.n, 1)
      }))

    it.effect("bad identifiers are 400 validation_error and write nothing", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        for (const traits of [{ national_id: "x" }, { anonymous_id: "bad id!" }, { crm_contact_id: " " }, { national_id: "1-2" }]) {
          const answer = yield* ingest(profile.key, { event_name: "signup", user_traits: traits })
          assert.strictEqual(answer.status, 400, JSON.stringify(traits))
          assert.strictEqual(answer.json.error.code, "validation_error")
        }
        const tables = (yield* eventTables(profile.profileId))!
        assert.strictEqual(tables.events, 0)
        assert.strictEqual(tables.customers, 0)
      }))
  })
})
