/**
 * The website lane of conversion sync end to end over real HTTP (issue 30 item 5): the website
 * data source attaches the ad account's pixel and wires it as a Conversions API destination; on
 * the real platform a pixel id is a dataset id, so the sandbox takes events to its pixels with
 * the same validation as datasets. A web touch and an outcome with email and phone leave as one
 * export the sandbox receives on the pixel, identities SHA-256 hashed after normalisation; the
 * test event reaches it too, and a destination on an id the platform does not know still fails.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { quickExportWorker } from "../support/exports.ts"
import { normaliseEmail, normalisePhone, sha256 } from "../../src/exports/pipeline/scrub.ts"
import { call, callAs } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write", "events:write", "conversions:read", "tracking:write"]
const ORIGIN = "https://shop.example.com"
const CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
const EMAIL = "  Pia.Web@Example.COM "
const PHONE = " +49 30 1234-5678 "

const send = callAs

/** What the ad-platform sandbox of `key`'s profile received under `eventId` (decision 0109). */
const received = (key: string, eventId: string) =>
  Effect.map(call("/sandbox/adplatform/_state", { method: "GET", headers: keyAuth(key) }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json.received_events as ReadonlyArray<any>).filter((event) => event.event_id === eventId)
  })

const ledger = (key: string) =>
  Effect.map(send(key, "GET", "/api/v1/exports/deliveries"), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data as ReadonlyArray<any>
  })

/** A profile with an ad-platform connection, a `lead` conversion and a tracker accepting ORIGIN. */
const newProfile = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
  const { connectionId } = yield* connectProvider(key, "adplatform")
  return { ...profile, key, connectionId }
})

layer(serveAppOnOwnPort().pipe(Layer.provide(quickExportWorker)), { timeout: "120 seconds", excludeTestServices: true })("website pixel lane", (it) => {
  describe("data source → destination → export", () => {
    it.effect("ensure wires the pixel; a web touch and an outcome export to it hashed; the test event reaches it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* newProfile

        const ensured = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/data-sources/website/ensure", {})
        assert.strictEqual(ensured.status, 201, ensured.text)
        assert.strictEqual(ensured.json.data.dataset_id, "px_1001")
        const destinationId: string = ensured.json.data.destination_id
        // Creating the same pixel destination again names the one ensure wired: the pixel is accepted as a dataset.
        const again = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: "px_1001",
          name: "Website pixel"
        })
        assert.strictEqual(again.status, 409, again.text)
        assert.strictEqual(again.json.error.code, "destination_conflict")
        assert.strictEqual(again.json.error.conflicting_destination_id, destinationId)
        const rule = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead", platform_event_name_overrides: { adplatform_capi: "Lead" } })
        assert.strictEqual(rule.status, 201, rule.text)

        // A web touch from the tracker, then the outcome of the same browser with email and phone.
        const trackingKey = yield* send(fixture.key, "POST", "/api/v1/tracking/keys")
        assert.strictEqual(trackingKey.status, 201, trackingKey.text)
        const settings = yield* send(fixture.key, "PATCH", "/api/v1/tracking/settings", { allowed_origins: [ORIGIN] })
        assert.strictEqual(settings.status, 200, settings.text)
        const anonymousId = `anon_${crypto.randomUUID().slice(0, 12)}`
        const touch = yield* call("/t/collect", {
          method: "POST",
          headers: { "content-type": "text/plain", origin: ORIGIN, "user-agent": CHROME },
          body: JSON.stringify({
            tracking_key: trackingKey.json.data.key,
            anonymous_id: anonymousId,
            session_id: "sess_0123456789",
            type: "page_view",
            url: `${ORIGIN}/offer?utm_source=newsletter`
          })
        })
        assert.strictEqual(touch.status, 204, touch.text)
        const touches = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM touches WHERE profile_id = ${fixture.profileId} AND anonymous_id = ${anonymousId}`
        assert.strictEqual(touches[0]?.n, 1)

        const outcome = yield* send(fixture.key, "POST", "/api/v1/events", {
          event_name: "lead_submitted",
          idempotency_key: `web-lead-${crypto.randomUUID()}`,
          action_source: "website",
          user_traits: { email: EMAIL, phone: PHONE, anonymous_id: anonymousId },
          properties: { value: "25.00", currency: "EUR" }
        })
        assert.strictEqual(outcome.status, 200, outcome.text)
        const outcomeEventId: string = outcome.json.data.outcome_event_id

        const rows = yield* eventually(ledger(fixture.key), (r) => r.some((row) => row.outcome_event_id === outcomeEventId && row.decision === "delivered"), {
          what: "the export to the pixel",
          within: "20 seconds"
        })
        const mine = rows.filter((row) => row.outcome_event_id === outcomeEventId)
        assert.deepStrictEqual(mine.map((row) => [row.decision, row.destination_id, row.action_source, row.provider_status]), [
          ["delivered", destinationId, "website", 200]
        ])
        const [event, ...more] = yield* received(fixture.key, mine[0].event_id)
        assert.strictEqual(more.length, 0, "received once")
        assert.strictEqual(event.dataset_id, "px_1001")
        assert.strictEqual(event.account_id, "act_1001")
        assert.strictEqual(event.event_name, "Lead")
        assert.strictEqual(event.action_source, "website")
        // SHA-256 of the normalised identities (trimmed lower-case email; digits only, no leading zeros).
        assert.strictEqual(normaliseEmail(EMAIL), "pia.web@example.com")
        assert.strictEqual(normalisePhone(PHONE), "493012345678")
        assert.deepStrictEqual(event.user_data.em, [sha256("pia.web@example.com")])
        assert.deepStrictEqual(event.user_data.ph, [sha256("493012345678")])
        assert.notInclude(JSON.stringify(event), "Pia.Web")
        assert.notInclude(JSON.stringify(event), "1234-5678")
        assert.deepStrictEqual(event.custom_data, { value: 25, currency: "EUR" })

        const test = yield* send(fixture.key, "POST", `/api/v1/exports/destinations/${destinationId}/test-event`, {})
        assert.strictEqual(test.status, 200, test.text)
        assert.deepStrictEqual(test.json.data.platform_reply, { events_received: 1 })
        const [seen] = yield* received(fixture.key, test.json.data.event_id)
        assert.strictEqual(seen.dataset_id, "px_1001")
      }))

    it.effect("a destination created with the pixel takes the test event; one on an id the platform does not know still fails with 404", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        const pixel = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: "px_1001",
          name: "Website pixel"
        })
        assert.strictEqual(pixel.status, 201, pixel.text)
        const test = yield* send(fixture.key, "POST", `/api/v1/exports/destinations/${pixel.json.data.id}/test-event`, {})
        assert.strictEqual(test.status, 200, test.text)
        assert.strictEqual((yield* received(fixture.key, test.json.data.event_id))[0]?.dataset_id, "px_1001")

        const unknown = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: "px_9999",
          name: "Nobody's pixel"
        })
        assert.strictEqual(unknown.status, 201, unknown.text)
        const refused = yield* send(fixture.key, "POST", `/api/v1/exports/destinations/${unknown.json.data.id}/test-event`, {})
        assert.strictEqual(refused.status, 502, refused.text)
        assert.strictEqual(refused.json.error.code, "adplatform_unavailable")
        const rows = yield* ledger(fixture.key)
        assert.deepStrictEqual(
          rows.filter((row) => row.destination_id === unknown.json.data.id).map((row) => [row.decision, row.test]),
          [["failed", true]]
        )
      }))
  })
})
