/**
 * The export queue made complete (decision 0094): a conversion older than any window is still
 * queued through the rule's durable cursor; an export whose facts cannot be decoded is failed
 * with one ledger row after a bounded number of attempts; a retraction racing the sweep makes the
 * sweep skip that outcome instead of queuing (or failing) it; a poll sends a dataset's exports in
 * one call. The background worker is off here: the test drives `ExportPipeline` itself.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { defaultExportWorkerSettings, ExportPipeline, ExportWorkerSettings } from "../../src/exports/pipeline/service.ts"
import { call, callAs, TestServer } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { driveConsent, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write", "events:write"]

const send = callAs

// Every poll runs the cursor; retries come back at once so the defect limit is reached quickly.
const manual = Layer.succeed(ExportWorkerSettings)({
  ...defaultExportWorkerSettings,
  enabled: false,
  cursorEvery: 1,
  retryBase: Duration.millis(20),
  lease: Duration.seconds(30)
})

/** A profile with a website destination on the sandbox's dataset and a rule for `lead`. */
const wired = Effect.gen(function*() {
  const { url } = yield* TestServer
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
  const minted = yield* send(key, "POST", "/api/v1/connections/adplatform/handoff", { return_url: `${url}/done` })
  assert.strictEqual(minted.status, 201, minted.text)
  const consent = yield* driveConsent(minted.json.data.start_url)
  yield* Effect.promise(() => fetch(consent.location ?? "", { redirect: "manual" }).then((r) => r.text()))
  const poll = yield* send(key, "GET", `/api/v1/connections/handoffs/${minted.json.data.handoff_id}`)
  const destination = yield* send(key, "POST", "/api/v1/exports/destinations", {
    kind: "adplatform_capi",
    connection_id: poll.json.data.result.connection_id,
    dataset_id: "ds_1001_1",
    name: "Website"
  })
  assert.strictEqual(destination.status, 201, destination.text)
  const rule = yield* send(key, "POST", "/api/v1/exports/rules", { conversion_key: "lead" })
  assert.strictEqual(rule.status, 201, rule.text)
  const ingest = (idempotencyKey: string) =>
    Effect.map(send(key, "POST", "/api/v1/events", { event_name: "lead_submitted", idempotency_key: idempotencyKey }), (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return response.json.data.outcome_event_id as string
    })
  return { profileId: profile.profileId, key, destinationId: destination.json.data.id as string, ruleId: rule.json.data.id as string, ingest }
})

const exportsOf = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<{ outcome_event_id: string; status: string; attempts: number; event_id: string }>`
      SELECT outcome_event_id, status, attempts, event_id FROM conversion_exports WHERE profile_id = ${profileId} ORDER BY outcome_event_id`
  })

const ledgerOf = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<{ outcome_event_id: string; decision: string; attempt: number; error_code: string | null }>`
      SELECT outcome_event_id, decision, attempt, error_code FROM export_deliveries WHERE profile_id = ${profileId} ORDER BY created_at`
  })

layer(serveAppOnOwnPort().pipe(Layer.provide(manual)), { timeout: "60 seconds", excludeTestServices: true })("export sweep", (it) => {
  describe("a conversion older than any window", () => {
    it.effect("is queued through the rule's cursor and delivered once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const pipeline = yield* ExportPipeline
        const fixture = yield* wired
        const outcome = yield* fixture.ingest("late-1")
        // As if the worker had been down for three days: the rule and destination were there
        // before, the conversion was committed two days ago and no sweep ran since.
        yield* sql`UPDATE export_rules SET created_at = now() - interval '3 days' WHERE id = ${fixture.ruleId}`
        yield* sql`UPDATE export_destinations SET created_at = now() - interval '3 days' WHERE id = ${fixture.destinationId}`
        yield* sql`UPDATE conversions SET created_at = now() - interval '2 days' WHERE outcome_event_id = ${outcome}`
        // Exports other tests left due in a shared database may come first in a poll.
        const delivered = yield* eventually(
          Effect.andThen(pipeline.runOnce, exportsOf(fixture.profileId)),
          (rows) => rows[0]?.status === "delivered",
          { what: "the late conversion delivered", within: "15 seconds", every: "50 millis" }
        )
        assert.deepStrictEqual(delivered.map((x) => [x.outcome_event_id, x.status]), [[outcome, "delivered"]])
        // The cursor moved past it: later polls queue nothing more and send nothing again.
        yield* pipeline.runOnce
        assert.strictEqual(yield* pipeline.sweep, 0)
        assert.deepStrictEqual((yield* ledgerOf(fixture.profileId)).map((r) => r.decision), ["delivered"])
        const cursor = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM export_sweep_cursors WHERE rule_id = ${fixture.ruleId}`
        assert.strictEqual(cursor[0]?.n, 1)
      }))
  })

  describe("an export whose facts cannot be decoded", () => {
    it.effect("is failed with one ledger row after three attempts, then left alone", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const pipeline = yield* ExportPipeline
        const fixture = yield* wired
        const outcome = yield* fixture.ingest("undecodable-1")
        // A click id that is not a string: the facts row no longer decodes.
        yield* sql`UPDATE outcome_events SET click_ids = '{"gclid": 5}'::jsonb WHERE id = ${outcome}`
        yield* pipeline.sweep
        const failed = yield* eventually(
          Effect.andThen(pipeline.runOnce, exportsOf(fixture.profileId)),
          (rows) => rows[0]?.status === "failed",
          { what: "the undecodable export failed", within: "15 seconds", every: "50 millis" }
        )
        assert.deepStrictEqual(failed.map((x) => [x.status, x.attempts]), [["failed", 3]])
        yield* pipeline.runOnce
        assert.deepStrictEqual(
          (yield* ledgerOf(fixture.profileId)).map((r) => [r.outcome_event_id, r.decision, r.attempt, r.error_code]),
          [[outcome, "failed", 3, "export_undecodable"]]
        )
        // What reached the sandbox, in the world of the profile that connected it (decision 0109).
        const state = yield* call("/sandbox/adplatform/_state", { headers: keyAuth(fixture.key) })
        assert.strictEqual(state.status, 200, state.text)
        const eventId = failed[0]?.event_id
        const sent = (state.json.received_events as ReadonlyArray<any>).filter((e) => e.event_id === eventId)
        assert.strictEqual(sent.length, 0)
      }))
  })

  describe("a poll with several exports to one dataset", () => {
    it.effect("sends them in one call, and each export gets its own delivered row", () =>
      Effect.gen(function*() {
        const pipeline = yield* ExportPipeline
        const fixture = yield* wired
        // Nothing else due first (a shared database may hold other tests' exports).
        yield* eventually(pipeline.runOnce, (n) => n === 0, { what: "an idle queue", within: "15 seconds", every: "50 millis" })
        const outcomes = yield* Effect.forEach([1, 2, 3, 4, 5, 6], (i) => fixture.ingest(`batched-${i}`))
        yield* pipeline.sweep
        const callsOf = Effect.map(call("/sandbox/adplatform/_state", { headers: keyAuth(fixture.key) }), (state) => {
          assert.strictEqual(state.status, 200, state.text)
          return state.json.counters.api_calls as number
        })
        const before = yield* callsOf
        yield* pipeline.runOnce
        assert.strictEqual((yield* callsOf) - before, 1)
        const ledger = yield* ledgerOf(fixture.profileId)
        assert.deepStrictEqual(ledger.map((r) => [r.decision, r.attempt]), outcomes.map(() => ["delivered", 1]))
        assert.deepStrictEqual(new Set(ledger.map((r) => r.outcome_event_id)), new Set(outcomes))
      }))
  })

  describe.skipIf(process.env["DATABASE_URL"] === undefined)("a retraction racing the sweep (two connections)", () => {
    it.effect("the sweep waits for it, skips the retracted outcome and queues the others", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const pipeline = yield* ExportPipeline
        const fixture = yield* wired
        const doomed = yield* fixture.ingest("race-retracted")
        const kept = yield* fixture.ingest("race-kept")
        const locked = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        // What the retraction does, held open at its lock: the sweep must meet it mid-flight.
        const retraction = yield* Effect.forkChild(
          Effect.gen(function*() {
            yield* sql`SELECT id FROM outcome_events WHERE id = ${doomed} FOR UPDATE`
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(go)
            yield* sql`DELETE FROM conversions WHERE outcome_event_id = ${doomed}`
            yield* sql`UPDATE outcome_events SET retracted_at = now(), retraction_reason = 'race' WHERE id = ${doomed}`
          }).pipe(sql.withTransaction)
        )
        yield* Deferred.await(locked)
        const sweep = yield* Effect.forkChild(pipeline.sweep)
        yield* eventually(
          sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%export_sweep_cursors%' AND pid <> pg_backend_pid()`,
          (rows) => (rows[0]?.n ?? 0) > 0,
          { what: "the sweep waiting on the retraction's lock", within: "10 seconds", every: "20 millis" }
        )
        yield* Deferred.succeed(go, undefined)
        yield* Fiber.join(retraction)
        // Other rules of a shared database may be swept too: only this profile's queue is asserted.
        assert.isAtLeast(yield* Fiber.join(sweep), 1)
        assert.deepStrictEqual((yield* exportsOf(fixture.profileId)).map((x) => x.outcome_event_id), [kept])
      }))
  })
})
