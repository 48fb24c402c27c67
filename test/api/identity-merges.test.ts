/**
 * Merge review through HTTP (decision 0040): proposals raised by ingest and by the scan, the
 * queue, previews, decisions, merges, history and exact undo.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { defineConversion, firstPaymentOf, ingest } from "../support/events.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const get = (key: string, path: string) => call(path, { headers: { authorization: `Bearer ${key}` } })
const post = (key: string, path: string, body: unknown = {}) =>
  call(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })

interface World extends SeededProfile {
  readonly key: string
  readonly readOnlyKey: string
  readonly a: string
  readonly b: string
  readonly paymentA: string
  readonly paymentB: string
  readonly touchB: string
}

const customerOf = (profileId: string, customerKey: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ id: string }>`SELECT id FROM customers WHERE profile_id = ${profileId} AND customer_key = ${customerKey}`
    return row!.id
  })

/** Two customers with their own keys who share an email: ingest raises the proposal itself. */
const seedWorld = Effect.fn("test.seedMergeWorld")(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, {
    scopes: ["events:write", "conversions:read", "customers:read", "attribution:write"],
    rateLimitPerMinute: 10_000
  })
  const { key: readOnlyKey } = yield* seedApiKey(profile, { scopes: ["conversions:read", "attribution:write"], rateLimitPerMinute: 10_000 })
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  const pay = (customerKey: string, at: string) =>
    Effect.map(
      ingest(key, {
        event_name: "purchase",
        occurred_at: at,
        properties: { value: "10", currency: "EUR" },
        user_traits: { external_id: customerKey, email: "shared@example.com" }
      }),
      (answer) => {
        assert.strictEqual(answer.status, 200, answer.text)
        return answer.json.data.outcome_event_id as string
      }
    )
  const paymentA = yield* pay("cust-a", "2026-03-01T10:00:00Z")
  const paymentB = yield* pay("cust-b", "2026-03-20T10:00:00Z")
  const a = yield* customerOf(profile.profileId, "cust-a")
  const b = yield* customerOf(profile.profileId, "cust-b")
  const touchB = crypto.randomUUID()
  yield* sql`
    INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id)
    VALUES (${touchB}, ${profile.profileId}, 'web_touch', '2026-03-19T10:00:00Z', 'paid_social', ${b})`
  return { ...profile, key, readOnlyKey, a, b, paymentA, paymentB, touchB } satisfies World
})

/** Everything a merge moves, as rows: an undo must give back exactly this. */
const snapshot = (world: World) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ what: string }>`
      SELECT 'touch ' || id || ' ' || coalesce(customer_id::text, '-') AS what FROM touches WHERE profile_id = ${world.profileId}
      UNION ALL
      SELECT 'event ' || id || ' ' || coalesce(customer_id::text, '-') FROM outcome_events WHERE profile_id = ${world.profileId}
      UNION ALL
      SELECT 'conversion ' || id || ' ' || coalesce(customer_id::text, '-') || ' ' || coalesce(is_first_payment::text, '-')
      FROM conversions WHERE profile_id = ${world.profileId}
      UNION ALL
      SELECT 'identifier ' || id || ' ' || customer_id || ' ' || (removed_at IS NULL)::text FROM customer_identifiers
      WHERE profile_id = ${world.profileId}
      UNION ALL
      SELECT 'customer ' || id || ' ' || coalesce(merged_into_id::text, '-') FROM customers WHERE profile_id = ${world.profileId}
      ORDER BY 1`
    return rows.map((row) => row.what)
  })

// The attribution worker is stepped by hand, so what a merge hands back to it can be seen before it runs.
const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })
const drain = Effect.flatMap(AttributionWorker, (worker) => worker.drainOnce)
const queued = (world: World) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ id: string }>`
      SELECT c.outcome_event_id::text AS id
      FROM conversions c JOIN credit_queue q ON q.profile_id = c.profile_id AND q.conversion_id = c.id AND q.occurred_at = c.occurred_at
      WHERE c.profile_id = ${world.profileId} AND c.outcome_event_id IN (${world.paymentA}, ${world.paymentB})
      ORDER BY 1`)

layer(serveApp(testSettings()).pipe(Layer.provide(manual)), { timeout: "120 seconds", excludeTestServices: true })("identity: merge review", (it) => {
  describe("proposals", () => {
    it.effect("an identifier held by two customers raises one proposal at ingest, with both sides and the evidence", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const list = yield* get(world.key, "/api/v1/identity/merge-proposals")
        assert.strictEqual(list.status, 200, list.text)
        assert.strictEqual(list.json.data.length, 1)
        const proposal = list.json.data[0]
        assert.strictEqual(proposal.status, "open")
        assert.deepStrictEqual(proposal.evidence, [{ type: "email", value: "shared@example.com" }])
        assert.deepStrictEqual(
          proposal.customers.map((side: any) => side.customer_profile_id).sort(),
          [world.a, world.b].sort()
        )
        assert.deepStrictEqual(list.json.status_counts, { open: 1, snoozed: 0, merged: 0, dismissed: 0, superseded: 0 })
        assert.notProperty(list.json, "total")
        // The scan sees the same pair and writes nothing new.
        const scan = yield* post(world.key, "/api/v1/identity/merge-proposals/scan")
        assert.strictEqual(scan.status, 200, scan.text)
        assert.deepStrictEqual(scan.json.data, { pairs: 1, proposed: 0, customers_scanned: 2 })
      }))

    it.effect("the scan proposes pairs written behind the API's back; status filters leave status_counts whole; paging", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        for (let i = 0; i < 3; i++) {
          const id = crypto.randomUUID()
          yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${id}, ${world.profileId}, ${`extra-${i}`})`
          yield* sql`
            INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
            VALUES (${crypto.randomUUID()}, ${world.profileId}, ${id}, 'phone', '+34600000000')`
        }
        const scan = yield* post(world.key, "/api/v1/identity/merge-proposals/scan")
        assert.deepStrictEqual(scan.json.data, { pairs: 3, proposed: 2, customers_scanned: 5 })
        const first = yield* get(world.key, "/api/v1/identity/merge-proposals?limit=2")
        assert.strictEqual(first.json.data.length, 2)
        assert.isTrue(first.json.pagination.has_next)
        const second = yield* get(world.key, `/api/v1/identity/merge-proposals?limit=2&cursor=${first.json.pagination.cursor}`)
        assert.strictEqual(second.json.data.length, 1)
        const seen = new Set([...first.json.data, ...second.json.data].map((p: any) => p.id))
        assert.strictEqual(seen.size, 3)
        const refused = yield* get(world.key, "/api/v1/identity/merge-proposals?limit=2&cursor=not-a-cursor")
        assert.strictEqual(refused.status, 400, refused.text)
        assert.strictEqual(refused.json.error.reason, "invalid_parameter:cursor")
        const merged = yield* get(world.key, "/api/v1/identity/merge-proposals?status=merged")
        assert.deepStrictEqual(merged.json.data, [])
        assert.deepStrictEqual(merged.json.status_counts, { open: 3, snoozed: 0, merged: 0, dismissed: 0, superseded: 0 })
        for (const query of ["status=maybe", "limit=0", "limit=101"]) {
          const bad = yield* get(world.key, `/api/v1/identity/merge-proposals?${query}`)
          assert.strictEqual(bad.status, 400, query)
          assert.strictEqual(bad.json.error.code, "invalid_parameter")
        }
      }))

    it.effect("dismiss is for good, snooze comes back; a decided proposal takes no other decision; the same one again is 200 unchanged", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const [proposal] = (yield* get(world.key, "/api/v1/identity/merge-proposals")).json.data
        const path = `/api/v1/identity/merge-proposals/${proposal.id}/decide`
        const snoozed = yield* post(world.key, path, { decision: "snooze", snooze_until: "2099-01-01T00:00:00Z" })
        assert.strictEqual(snoozed.status, 200, snoozed.text)
        assert.include(snoozed.json.data, { status: "snoozed", snoozed_until: "2099-01-01T00:00:00.000000Z" })
        const past = yield* post(world.key, path, { decision: "snooze", snooze_until: "2001-01-01T00:00:00Z" })
        assert.strictEqual(past.status, 400)
        const dismissed = yield* post(world.key, path, { decision: "dismiss" })
        assert.strictEqual(dismissed.json.data.status, "dismissed")
        assert.isTrue(dismissed.json.meta.changed)
        const again = yield* post(world.key, path, { decision: "dismiss" })
        assert.strictEqual(again.status, 200)
        assert.isFalse(again.json.meta.changed)
        const merge = yield* post(world.key, path, { decision: "merge" })
        assert.strictEqual(merge.status, 409)
        assert.strictEqual(merge.json.error.code, "invalid_state")
        const scan = yield* post(world.key, "/api/v1/identity/merge-proposals/scan")
        assert.strictEqual(scan.json.data.proposed, 0)
        const list = yield* get(world.key, "/api/v1/identity/merge-proposals")
        assert.deepStrictEqual(list.json.data.map((p: any) => p.status), ["dismissed"])
        // Still apart: new events keep landing on each customer.
        const sql = yield* SqlClient
        const [count] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM customers WHERE profile_id = ${world.profileId} AND merged_into_id IS NULL`
        assert.strictEqual(count!.n, 2)
      }))
  })

  describe("merge and undo", () => {
    it.effect("preview, merge (older survives), history with the audit log id, then an undo that restores every row exactly", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        assert.strictEqual(yield* firstPaymentOf(world.paymentB), true, "two customers: two first payments")
        const before = yield* snapshot(world)
        const [proposal] = (yield* get(world.key, "/api/v1/identity/merge-proposals")).json.data
        const preview = yield* get(world.key, `/api/v1/identity/merge-proposals/${proposal.id}/preview`)
        assert.strictEqual(preview.status, 200, preview.text)
        assert.strictEqual(preview.json.data.survivor.customer_profile_id, world.a)
        assert.strictEqual(preview.json.data.merged.customer_profile_id, world.b)
        assert.deepStrictEqual(preview.json.data.moves, {
          touches: 1,
          outcome_events: 1,
          conversions: 1,
          payer_assignments: 0,
          identifiers: 0,
          duplicate_identifiers: 1,
          declared_sources: 0
        })
        const anyPair = yield* get(world.key, `/api/v1/identity/merge-preview?a=${world.b}&b=${world.a}`)
        assert.deepStrictEqual(anyPair.json, preview.json)

        // The worker credits both payments first, so that the merge handing them back shows.
        yield* drain
        assert.deepStrictEqual(yield* queued(world), [], "both payments credited before the merge")
        const decided = yield* post(world.key, `/api/v1/identity/merge-proposals/${proposal.id}/decide`, { decision: "merge" })
        assert.strictEqual(decided.status, 200, decided.text)
        assert.strictEqual(decided.json.data.status, "merged")
        const auditLogId = decided.json.data.merge_audit_log_id
        assert.isString(auditLogId)
        const [audit] = yield* sql<{ action: string }>`SELECT action FROM audit_events WHERE id = ${auditLogId}`
        assert.strictEqual(audit!.action, "customer.merged")
        const repeat = yield* post(world.key, `/api/v1/identity/merge-proposals/${proposal.id}/decide`, { decision: "merge" })
        assert.isFalse(repeat.json.meta.changed)

        // Nineteen days after the first payment of one person: a repeat.
        assert.strictEqual(yield* firstPaymentOf(world.paymentB), false)
        const journey = yield* get(world.key, "/api/v1/customers/journey?customer_key=cust-b")
        assert.strictEqual(journey.status, 200)
        assert.strictEqual(journey.json.meta.person.customer_key, "cust-a")
        assert.strictEqual(journey.json.meta.person.conversion_count, 2)
        const [moved] = yield* sql<{ customer_id: string }>`SELECT customer_id FROM touches WHERE id = ${world.touchB}`
        assert.strictEqual(moved!.customer_id, world.a)
        // Both conversions, now the survivor's, went back to the worker: each waits for credit.
        assert.deepStrictEqual((yield* queued(world)).map((row) => row.id), [world.paymentA, world.paymentB].sort())
        yield* drain
        assert.deepStrictEqual(yield* queued(world), [])

        const history = yield* get(world.key, "/api/v1/identity/merge-history?customer_key=cust-a")
        assert.strictEqual(history.status, 200, history.text)
        assert.strictEqual(history.json.data.length, 1)
        assert.include(history.json.data[0], {
          audit_log_id: auditLogId,
          survivor_customer_profile_id: world.a,
          merged_customer_profile_id: world.b,
          merged_customer_key: "cust-b",
          undone_at: null
        })

        const undo = yield* post(world.key, `/api/v1/identity/merges/${auditLogId}/undo`)
        assert.strictEqual(undo.status, 200, undo.text)
        assert.isTrue(undo.json.meta.changed)
        assert.isString(undo.json.data.undone_at)
        assert.deepStrictEqual(yield* snapshot(world), before)
        const undoAgain = yield* post(world.key, `/api/v1/identity/merges/${auditLogId}/undo`)
        assert.strictEqual(undoAgain.status, 200)
        assert.isFalse(undoAgain.json.meta.changed)
        const list = yield* get(world.key, "/api/v1/identity/merge-proposals")
        assert.deepStrictEqual(list.json.data.map((p: any) => p.status), ["dismissed"])
      }))

    it.effect("after a merge the merged customer's key lands on the survivor; erasure clears proposals' evidence", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld()
        const [proposal] = (yield* get(world.key, "/api/v1/identity/merge-proposals")).json.data
        yield* post(world.key, `/api/v1/identity/merge-proposals/${proposal.id}/decide`, { decision: "merge", survivor_customer_profile_id: world.b })
        const later = yield* ingest(world.key, { event_name: "purchase", user_traits: { external_id: "cust-a" } })
        const [row] = yield* sql<{ customer_id: string }>`SELECT customer_id FROM outcome_events WHERE id = ${later.json.data.outcome_event_id}`
        assert.strictEqual(row!.customer_id, world.b, "cust-a was merged into cust-b")
        const [customers] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM customers WHERE profile_id = ${world.profileId}`
        assert.strictEqual(customers!.n, 2, "no new customer for a merged key")
        const erased = yield* post(world.key, "/api/v1/customers/erasures", { request_ref: "e-1", customer_key: "cust-b" })
        assert.strictEqual(erased.status, 200, erased.text)
        const [evidence] = yield* sql<{ evidence: unknown }>`SELECT evidence FROM merge_proposals WHERE id = ${proposal.id}`
        assert.deepStrictEqual(evidence!.evidence, [])
      }))
  })

  describe("access", () => {
    it.effect("customers:read is needed; healthcare-family profiles answer 403; another profile's ids answer what unknown ids do", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const mine = yield* seedWorld()
        const theirs = yield* seedWorld()
        const refused = yield* get(mine.readOnlyKey, "/api/v1/identity/merge-proposals")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const [theirProposal] = (yield* get(theirs.key, "/api/v1/identity/merge-proposals")).json.data
        const decided = yield* post(theirs.key, `/api/v1/identity/merge-proposals/${theirProposal.id}/decide`, { decision: "merge" })
        const theirMerge = decided.json.data.merge_audit_log_id
        const unknown = crypto.randomUUID()
        const pairs: ReadonlyArray<readonly [string, string, string]> = [
          ["GET", `/api/v1/identity/merge-proposals/${theirProposal.id}/preview`, `/api/v1/identity/merge-proposals/${unknown}/preview`],
          ["POST", `/api/v1/identity/merge-proposals/${theirProposal.id}/decide`, `/api/v1/identity/merge-proposals/${unknown}/decide`],
          ["POST", `/api/v1/identity/merges/${theirMerge}/undo`, `/api/v1/identity/merges/${unknown}/undo`],
          ["GET", `/api/v1/identity/merge-preview?a=${theirs.a}&b=${theirs.b}`, `/api/v1/identity/merge-preview?a=${unknown}&b=${crypto.randomUUID()}`],
          ["GET", `/api/v1/identity/merge-history?customer_profile_id=${theirs.a}`, `/api/v1/identity/merge-history?customer_profile_id=${unknown}`]
        ]
        for (const [method, foreign, missing] of pairs) {
          const send = (path: string) => method === "GET" ? get(mine.key, path) : post(mine.key, path, { decision: "dismiss" })
          const a = yield* send(foreign)
          const b = yield* send(missing)
          assert.strictEqual(a.status, 404, foreign)
          assert.strictEqual(withoutRequestId(a.text), withoutRequestId(b.text), foreign)
        }
        const [state] = yield* sql<{ undone: boolean }>`SELECT undone_at IS NOT NULL AS undone FROM customer_merges WHERE id = ${theirMerge}`
        assert.isFalse(state!.undone)
        yield* sql`UPDATE profiles SET privacy_mode = 'hipaa' WHERE id = ${mine.profileId}`
        const healthcare = yield* get(mine.key, "/api/v1/identity/merge-proposals")
        assert.strictEqual(healthcare.status, 403)
        assert.strictEqual(healthcare.json.error.code, "insufficient_scope")
      }))
  })
})
