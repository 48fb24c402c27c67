/**
 * A destination's backlog (issue 34 item 6, decision 0120): its read carries `backlog` (exports
 * waiting, pending or held, the oldest's age, the last minute's deliveries); an export held until
 * the DPA is accepted counts as waiting, then as delivered; `/metrics` shows it by svc_destination.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CURRENT_DPA_VERSION } from "../../schema/dpa.ts"
import { call, callAs, OPERATOR_TOKEN } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { quickExportWorker } from "../support/exports.ts"
import { parseExposition } from "../support/prometheus.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write", "events:write", "conversions:read"]

const send = callAs

const destinationRead = (key: string, id: string) =>
  Effect.map(send(key, "GET", "/api/v1/exports/destinations?limit=100"), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    const found = (answer.json.data as ReadonlyArray<any>).find((row) => row.id === id)
    assert.isDefined(found)
    return found
  })

layer(serveAppOnOwnPort().pipe(Layer.provide(quickExportWorker)), { timeout: "120 seconds", excludeTestServices: true })("destination backlogs", (it) => {
  it.effect("held exports wait in the backlog with their age, in /metrics too; once sent, nothing waits and the minute's deliveries count", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
      yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
      const { connectionId } = yield* connectProvider(key, "adplatform")
      const created = yield* send(key, "POST", "/api/v1/exports/destinations", {
        kind: "adplatform_capi",
        connection_id: connectionId,
        dataset_id: "ds_1001_1",
        name: "Website"
      })
      assert.strictEqual(created.status, 201, created.text)
      assert.deepStrictEqual(created.json.data.backlog, { pending: 0, pending_capped: false, oldest_pending_age_seconds: null, delivered_last_minute: 0 })
      const id: string = created.json.data.id
      assert.strictEqual((yield* send(key, "POST", "/api/v1/exports/rules", { conversion_key: "lead" })).status, 201)
      // Platform-Safe without an accepted DPA: the exports are held.
      assert.strictEqual((yield* send(key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe" })).status, 200)
      for (let i = 0; i < 2; i++) {
        const ingested = yield* send(key, "POST", "/api/v1/events", {
          event_name: "lead_submitted",
          idempotency_key: `lead-${crypto.randomUUID()}`,
          user_traits: { external_id: `c-${i}`, email: "ana@example.com" },
          properties: { value: "40.00", currency: "EUR" },
          action_source: "website"
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
      }
      yield* eventually(destinationRead(key, id), (row) => row.backlog.pending === 2, { what: "two held exports", within: "20 seconds" })
      const sql = yield* SqlClient
      // Ten days: older than anything another test leaves waiting, so among the leaders /metrics shows.
      yield* sql`UPDATE conversion_exports SET created_at = created_at - interval '864000 seconds' WHERE destination_id = ${id}`
      const waiting = (yield* destinationRead(key, id)).backlog
      assert.deepStrictEqual(Object.keys(waiting), ["pending", "pending_capped", "oldest_pending_age_seconds", "delivered_last_minute"])
      assert.strictEqual(waiting.pending_capped, false)
      assert.strictEqual(waiting.delivered_last_minute, 0)
      assert.isAtLeast(waiting.oldest_pending_age_seconds, 864_000)
      assert.isAtMost(waiting.oldest_pending_age_seconds, 864_060)
      const patched = yield* send(key, "PATCH", `/api/v1/exports/destinations/${id}`, { name: "Website (main)" })
      assert.strictEqual(patched.status, 200, patched.text)
      assert.strictEqual(patched.json.data.backlog.pending, 2)

      const scraped = yield* call("/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      const families = parseExposition(scraped.text)
      const sample = (name: string) => families.get(name)?.samples.find((row) => row.labels["svc_destination"] === id)?.value
      assert.strictEqual(sample("svc_export_backlog_pending"), 2)
      assert.isAtLeast(sample("svc_export_backlog_oldest_age") ?? 0, 864_000)
      assert.strictEqual(sample("svc_export_delivered_last_minute"), 0)

      const owner = yield* seedMemberSession(profile, "owner")
      const accepted = yield* call(`/api/v1/profiles/${profile.profileId}/dpa/accept`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ version: CURRENT_DPA_VERSION })
      })
      assert.strictEqual(accepted.status, 200, accepted.text)
      const drained = yield* eventually(destinationRead(key, id), (row) => row.backlog.pending === 0 && row.backlog.delivered_last_minute === 2, {
        what: "both exports sent",
        within: "20 seconds"
      })
      assert.deepStrictEqual(drained.backlog, { pending: 0, pending_capped: false, oldest_pending_age_seconds: null, delivered_last_minute: 2 })
    }))
})
