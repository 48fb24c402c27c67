/**
 * The export queue across a runner's death (decision 0075): exports leased by a runner that died
 * are left alone until the lease expires, then taken over; every outcome reaches the sandbox
 * exactly once with its stable event id, and the ledger has one `delivered` row per export.
 * The background worker is off here: the test drives `ExportPipeline.runOnce` itself.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
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

const manual = Layer.succeed(ExportWorkerSettings)({ ...defaultExportWorkerSettings, enabled: false, lease: Duration.seconds(30) })

layer(serveAppOnOwnPort().pipe(Layer.provide(manual)), { timeout: "90 seconds", excludeTestServices: true })("export queue", (it) => {
  describe("a runner dies holding leases", () => {
    it.effect("its exports wait for the lease to expire, then go out once each; nothing lost, nothing sent twice", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const pipeline = yield* ExportPipeline
        const { url } = yield* TestServer
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
        yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
        const minted = yield* send(key, "POST", "/api/v1/connections/adplatform/handoff", { return_url: `${url}/done` })
        assert.strictEqual(minted.status, 201, minted.text)
        const consent = yield* driveConsent(minted.json.data.start_url)
        yield* Effect.promise(() => fetch(consent.location ?? "", { redirect: "manual" }).then((r) => r.text()))
        const poll = yield* send(key, "GET", `/api/v1/connections/handoffs/${minted.json.data.handoff_id}`)
        const connectionId: string = poll.json.data.result.connection_id
        const destination = yield* send(key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: connectionId,
          dataset_id: "ds_1001_1",
          name: "Website"
        })
        assert.strictEqual(destination.status, 201, destination.text)
        assert.strictEqual((yield* send(key, "POST", "/api/v1/exports/rules", { conversion_key: "lead" })).status, 201)

        const outcomes: Array<string> = []
        for (let i = 0; i < 12; i++) {
          const ingested = yield* send(key, "POST", "/api/v1/events", { event_name: "lead_submitted", idempotency_key: `restart-${i}` })
          assert.strictEqual(ingested.status, 200, ingested.text)
          outcomes.push(ingested.json.data.outcome_event_id)
        }
        assert.strictEqual(yield* pipeline.sweep, 12)
        // A second sweep (another runner, or the same one after a restart) queues nothing new.
        assert.strictEqual(yield* pipeline.sweep, 0)

        // A runner claimed half of them and died: its leases run for two more seconds.
        yield* sql`
          UPDATE conversion_exports SET lease_until = now() + interval '2 seconds', lease_token = ${crypto.randomUUID()}
          WHERE outcome_event_id IN ${sql.in(outcomes.slice(0, 6))}`
        yield* pipeline.runOnce
        const firstPass = yield* sql<{ status: string; n: number }>`
          SELECT status, count(*)::int AS n FROM conversion_exports WHERE profile_id = ${profile.profileId} GROUP BY status ORDER BY status`
        assert.deepStrictEqual(firstPass.map((r) => [r.status, r.n]), [["delivered", 6], ["pending", 6]])

        yield* eventually(
          Effect.andThen(pipeline.runOnce, () =>
            sql<{ n: number }>`SELECT count(*)::int AS n FROM conversion_exports WHERE profile_id = ${profile.profileId} AND status = 'delivered'`),
          (rows) => rows[0]?.n === 12,
          { what: "the taken-over exports delivered", within: "15 seconds", every: "250 millis" }
        )

        const exports = yield* sql<{ event_id: string }>`SELECT event_id FROM conversion_exports WHERE profile_id = ${profile.profileId}`
        // What reached the sandbox, in the world of the profile that connected it (decision 0109).
        const state = yield* call("/sandbox/adplatform/_state", { headers: keyAuth(key) })
        assert.strictEqual(state.status, 200, state.text)
        const ids = new Set(exports.map((e) => e.event_id))
        const seen = (state.json.received_events as ReadonlyArray<any>).filter((e) => ids.has(e.event_id)).map((e) => e.event_id)
        assert.strictEqual(seen.length, 12)
        assert.strictEqual(new Set(seen).size, 12)
        const ledger = yield* sql<{ decision: string; n: number }>`
          SELECT decision, count(*)::int AS n FROM export_deliveries WHERE profile_id = ${profile.profileId} GROUP BY decision`
        assert.deepStrictEqual(ledger.map((r) => [r.decision, r.n]), [["delivered", 12]])
      }))
  })
})
