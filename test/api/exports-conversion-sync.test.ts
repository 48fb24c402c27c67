/**
 * Conversion sync (issue 20 parts 1-3) over real HTTP against the ad-platform sandbox served by
 * the app itself: the catalog PUT and its key revocation, destinations (409 destination_conflict,
 * nothing written), rules (422 overrides), an outcome delivered to the sandbox with its dedup
 * event id, scrubbed under Platform-Safe and held until the DPA is accepted, a retry after a
 * sandbox fault, the test event, and a retraction refused once an export exists.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CURRENT_DPA_VERSION } from "../../schema/dpa.ts"
import { quickExportWorker } from "../support/exports.ts"
import { sha256 } from "../../src/exports/pipeline/scrub.ts"
import { call, callAs, TestServer } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { registerApp } from "../support/partner.ts"
import { connectProvider, sandboxToken, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write", "events:write", "conversions:read"]

const send = callAs

/** A test-control call on the sandbox world of `key`'s profile (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/adplatform${path}`, {
    method,
    headers: { "content-type": "application/json", ...keyAuth(key) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const setFaults = (key: string, faults: Record<string, unknown>) =>
  Effect.map(sandbox(key, "POST", "/_faults", faults), (response) => assert.strictEqual(response.status, 200, response.text))

const received = (key: string, eventId: string) =>
  Effect.map(sandbox(key, "GET", "/_state"), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json.received_events as ReadonlyArray<any>).filter((event) => event.event_id === eventId)
  })

interface Fixture extends SeededProfile {
  readonly key: string
}

const newProfile = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
  return { ...profile, key } satisfies Fixture
})

const connect = (fixture: Fixture) =>
  Effect.map(connectProvider(fixture.key, "adplatform"), (run) => run.connectionId)

/** A profile with a website destination on the sandbox's dataset and a rule for `lead`. */
const wired = (overrides: Record<string, string | null> = {}) =>
  Effect.gen(function*() {
    const fixture = yield* newProfile
    const connectionId = yield* connect(fixture)
    const created = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
      kind: "adplatform_capi",
      connection_id: connectionId,
      dataset_id: "ds_1001_1",
      name: "Website"
    })
    assert.strictEqual(created.status, 201, created.text)
    const rule = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead", platform_event_name_overrides: overrides })
    assert.strictEqual(rule.status, 201, rule.text)
    return { ...fixture, connectionId, destinationId: created.json.data.id as string }
  })

const ledger = (fixture: Fixture, query = "") =>
  Effect.map(send(fixture.key, "GET", `/api/v1/exports/deliveries${query}`), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data as ReadonlyArray<any>
  })

const ingestLead = (fixture: Fixture, body: Record<string, unknown> = {}) =>
  Effect.map(
    send(fixture.key, "POST", "/api/v1/events", {
      event_name: "lead_submitted",
      idempotency_key: `lead-${crypto.randomUUID()}`,
      user_traits: { external_id: `c-${crypto.randomUUID().slice(0, 8)}`, email: " Ana@Example.com ", phone: "+34 600 11 22 33" },
      properties: { value: "40.00", currency: "EUR" },
      ...body
    }),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return { outcomeEventId: response.json.data.outcome_event_id as string, key: JSON.parse(String(response.text)) }
    }
  )

/** A new dataset on `act_1001` of `fixture`'s sandbox world, made with the sandbox's own API. */
const newSandboxDataset = (fixture: Fixture, name: string) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const token = yield* sandboxToken(url, "adplatform", "one_account", fixture.profileId)
    const created = yield* call("/sandbox/adplatform/v1/accounts/act_1001/datasets", {
      method: "POST",
      headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ name })
    })
    assert.strictEqual(created.status, 201, created.text)
    return created.json.id as string
  })

const acceptDpa = (fixture: Fixture) =>
  Effect.gen(function*() {
    const owner = yield* seedMemberSession(fixture, "owner")
    const accepted = yield* call(`/api/v1/profiles/${fixture.profileId}/dpa/accept`, {
      method: "POST",
      headers: { ...owner.headers, "content-type": "application/json" },
      body: JSON.stringify({ version: CURRENT_DPA_VERSION })
    })
    assert.strictEqual(accepted.status, 200, accepted.text)
  })

/** The ledger rows of each outcome once `n` decisions exist for it. */
const decided = (fixture: Fixture, outcomeEventId: string, n: number) =>
  Effect.map(
    eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).filter((row) => row.decision !== "held").length >= n, {
      what: `${n} decisions for ${outcomeEventId}`,
      within: "20 seconds"
    }),
    (rows) => rowsOf(rows, outcomeEventId)
  )

const byDestination = (rows: ReadonlyArray<any>, destinationId: string) => rows.find((row) => row.destination_id === destinationId)

const rowsOf = (rows: ReadonlyArray<any>, outcomeEventId: string) => rows.filter((row) => row.outcome_event_id === outcomeEventId)

layer(serveAppOnOwnPort().pipe(Layer.provide(quickExportWorker)), { timeout: "120 seconds", excludeTestServices: true })("conversion sync", (it) => {
  describe("catalog", () => {
    it.effect("GET answers the defaults; PUT replaces privacy_config and moving to platform_safe revokes delegated person keys", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* newProfile
        const initial = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(initial.status, 200, initial.text)
        assert.deepStrictEqual(initial.json.data.settings, { privacy_mode: "standard", privacy_config: null, platform_safe_target: "existing", platform_safe_audiences: "disabled" })

        const app = yield* registerApp("Catalog partner")
        const delegatedPerson = yield* seedApiKey(fixture, { scopes: ["customers:read", "analytics:read"] })
        const delegatedPlain = yield* seedApiKey(fixture, { scopes: ["analytics:read"] })
        const ownPerson = yield* seedApiKey(fixture, { scopes: ["visitors:read"] })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id IN (${delegatedPerson.id}, ${delegatedPlain.id})`

        const custom = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "custom" })
        assert.strictEqual(custom.status, 400, custom.text)
        assert.strictEqual(custom.json.error.code, "validation_error")

        const config = { url_mode: "origin", custom_data_allowlist: ["value", "currency"] }
        const put = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe", privacy_config: config })
        assert.strictEqual(put.status, 200, put.text)
        assert.deepStrictEqual(put.json.data.settings, { privacy_mode: "platform_safe", privacy_config: config, platform_safe_target: "existing", platform_safe_audiences: "disabled" })
        assert.strictEqual(put.json.data.revoked_keys, 1)
        const keys = yield* sql<{ id: string; revoked: boolean }>`SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE profile_id = ${fixture.profileId}`
        const revoked = new Map(keys.map((k) => [k.id, k.revoked]))
        assert.strictEqual(revoked.get(delegatedPerson.id), true)
        assert.strictEqual(revoked.get(delegatedPlain.id), false)
        assert.strictEqual(revoked.get(ownPerson.id), false)

        // The PUT replaces privacy_config: sent without it, it is cleared.
        const again = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe", platform_safe_target: "clean", platform_safe_audiences: "disabled" })
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.json.data.settings, { privacy_mode: "platform_safe", privacy_config: null, platform_safe_target: "clean", platform_safe_audiences: "disabled" })
        assert.strictEqual(again.json.data.revoked_keys, 0)
        const read = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.deepStrictEqual(read.json.data.settings, again.json.data.settings)

        // A partner app's delegated key cannot move the mode back out; nothing changes.
        const lowered = yield* send(delegatedPlain.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "standard" })
        assert.strictEqual(lowered.status, 403, lowered.text)
        const appKey = yield* seedApiKey(fixture, { scopes: ["exports:write", "exports:read"] })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${appKey.id}`
        const locked = yield* send(appKey.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "standard" })
        assert.strictEqual(locked.status, 409, locked.text)
        assert.strictEqual(locked.json.error.code, "invalid_state")
        assert.strictEqual(locked.json.error.reason, "privacy_mode_locked")
        const after = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.deepStrictEqual(after.json.data.settings, again.json.data.settings)
      }))

    it.effect("a key without exports:write gets 403 insufficient_scope and nothing changes", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile
        const { key } = yield* seedApiKey(fixture, { scopes: ["exports:read"] })
        const put = yield* send(key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "hipaa" })
        assert.strictEqual(put.status, 403, put.text)
        assert.strictEqual(put.json.error.code, "insufficient_scope")
        const read = yield* send(key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(read.json.data.settings.privacy_mode, "standard")
      }))
  })

  describe("destinations and rules", () => {
    it.effect("a destination matching another is 409 destination_conflict with conflicting_destination_id, nothing written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* wired()
        const count = () =>
          Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM export_destinations WHERE profile_id = ${fixture.profileId}`, (r) => r[0]?.n)
        const before = yield* count()
        const clash = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: "ds_1001_1",
          name: "Again"
        })
        assert.strictEqual(clash.status, 409, clash.text)
        assert.strictEqual(clash.json.error.code, "destination_conflict")
        assert.strictEqual(clash.json.error.conflicting_destination_id, fixture.destinationId)
        assert.strictEqual(yield* count(), before)

        // Another dataset is fine; editing it onto the first one's dataset is the same 409.
        const other = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: "ds_other",
          name: "Other"
        })
        assert.strictEqual(other.status, 201, other.text)
        const edit = yield* send(fixture.key, "PATCH", `/api/v1/exports/destinations/${other.json.data.id}`, { dataset_id: "ds_1001_1" })
        assert.strictEqual(edit.status, 409, edit.text)
        assert.strictEqual(edit.json.error.conflicting_destination_id, fixture.destinationId)
        const list = yield* send(fixture.key, "GET", "/api/v1/exports/destinations")
        assert.deepStrictEqual(list.json.data.map((d: any) => [d.dataset_id, d.platform_safe_target]), [["ds_1001_1", "existing"], ["ds_other", "existing"]])

        const deleted = yield* send(fixture.key, "DELETE", `/api/v1/exports/destinations/${other.json.data.id}`)
        assert.deepStrictEqual(deleted.json.data, { id: other.json.data.id, deleted: true })
        const gone = yield* send(fixture.key, "DELETE", `/api/v1/exports/destinations/${other.json.data.id}`)
        assert.strictEqual(gone.status, 404, gone.text)

        const foreign = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: crypto.randomUUID(),
          dataset_id: "ds_x",
          name: "X"
        })
        assert.strictEqual(foreign.status, 400, foreign.text)
      }))

    it.effect("platform_event_name_overrides: a messaging name the platform does not know is 422, an unknown key 400; nothing written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const fixture = yield* newProfile
        const unknownKey = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead", platform_event_name_overrides: { tiktok: "Lead" } })
        assert.strictEqual(unknownKey.status, 400, unknownKey.text)
        assert.strictEqual(unknownKey.json.error.code, "validation_error")
        for (const overrides of [{ adplatform_capi_messaging: "Lead" }, { adplatform_capi_messaging: "purchase" }, { adplatform_capi: " " }]) {
          const refused = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead", platform_event_name_overrides: overrides })
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.json.error.code, "validation_error")
        }
        const rules = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM export_rules WHERE profile_id = ${fixture.profileId}`
        assert.strictEqual(rules[0]?.n, 0)
        const ok = yield* send(fixture.key, "POST", "/api/v1/exports/rules", {
          conversion_key: "lead",
          platform_event_name_overrides: { adplatform_capi: "Lead", adplatform_capi_messaging: null }
        })
        assert.strictEqual(ok.status, 201, ok.text)
        const twice = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead" })
        assert.strictEqual(twice.status, 409, twice.text)
        const patched = yield* send(fixture.key, "PATCH", `/api/v1/exports/rules/${ok.json.data.id}`, {
          platform_event_name_overrides: { adplatform_capi_messaging: "QualifiedLead" }
        })
        assert.strictEqual(patched.status, 200, patched.text)
        assert.deepStrictEqual(patched.json.data.platform_event_name_overrides, { adplatform_capi_messaging: "QualifiedLead" })
        const bad = yield* send(fixture.key, "PATCH", `/api/v1/exports/rules/${ok.json.data.id}`, {
          platform_event_name_overrides: { adplatform_capi_messaging: "Anything" }
        })
        assert.strictEqual(bad.status, 422, bad.text)
      }))

    it.effect("the test event goes to the sandbox's dataset and answers the platform's reply", () =>
      Effect.gen(function*() {
        const fixture = yield* wired()
        const answer = yield* send(fixture.key, "POST", `/api/v1/exports/destinations/${fixture.destinationId}/test-event`, {})
        assert.strictEqual(answer.status, 200, answer.text)
        assert.deepStrictEqual(answer.json.data.platform_reply, { events_received: 1 })
        assert.strictEqual(answer.json.data.test, true)
        const seen = yield* received(fixture.key, answer.json.data.event_id)
        assert.strictEqual(seen.length, 1)
        assert.strictEqual(seen[0].dataset_id, "ds_1001_1")
        assert.deepStrictEqual(seen[0].custom_data, { test_event: true })
        const rows = yield* ledger(fixture)
        assert.deepStrictEqual(rows.map((r) => [r.decision, r.test, r.event_id]), [["delivered", true, answer.json.data.event_id]])
      }))
  })

  describe("the pipeline", () => {
    it.effect("an outcome is delivered once with its dedup event id; then its retraction is 409 event_already_exported", () =>
      Effect.gen(function*() {
        const fixture = yield* wired({ adplatform_capi: "Lead" })
        const { outcomeEventId } = yield* ingestLead(fixture, { idempotency_key: "retract-me" })
        const rows = yield* eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).some((row) => row.decision === "delivered"), {
          what: "the delivery",
          within: "20 seconds"
        })
        const [row] = rowsOf(rows, outcomeEventId)
        assert.strictEqual(rowsOf(rows, outcomeEventId).length, 1)
        assert.strictEqual(row.action_source, "system_generated")
        assert.strictEqual(row.destination_id, fixture.destinationId)
        const seen = yield* received(fixture.key, row.event_id)
        assert.strictEqual(seen.length, 1)
        assert.strictEqual(seen[0].event_name, "Lead")
        assert.deepStrictEqual(seen[0].user_data.em, [sha256("ana@example.com")])
        assert.deepStrictEqual(seen[0].user_data.ph, [sha256("34600112233")])
        assert.isUndefined(seen[0].event_source_url)
        assert.deepStrictEqual(seen[0].custom_data, { value: 40, currency: "EUR" })

        const refused = yield* send(fixture.key, "POST", "/api/v1/events/retractions", { idempotency_key: "retract-me", reason: "test" })
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "event_already_exported")
      }))

    it.effect("a sandbox fault: one retrying row, then delivered with the same event id", () =>
      Effect.gen(function*() {
        const fixture = yield* wired()
        // More 500s than the HTTP client's own retries: the attempt fails and the worker backs off.
        yield* setFaults(fixture.key, { fail_next: 4 })
        const { outcomeEventId } = yield* ingestLead(fixture)
        const rows = yield* eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).some((row) => row.decision === "delivered"), {
          what: "the delivery after the fault",
          within: "30 seconds"
        }).pipe(Effect.ensuring(setFaults(fixture.key, { fail_next: 0 }).pipe(Effect.ignore)))
        const mine = rowsOf(rows, outcomeEventId).reverse()
        assert.deepStrictEqual(mine.map((r) => [r.decision, r.attempt]), [["retrying", 1], ["delivered", 2]])
        assert.strictEqual(mine[0].error_code, "provider_unavailable")
        assert.strictEqual(mine[0].event_id, mine[1].event_id)
        assert.strictEqual((yield* received(fixture.key, mine[1].event_id)).length, 1)
      }))

    it.effect("Platform-Safe: held until the DPA is accepted, then sent scrubbed", () =>
      Effect.gen(function*() {
        const fixture = yield* wired({ adplatform_capi: "ivf_consult_booked" })
        const put = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe" })
        assert.strictEqual(put.status, 200, put.text)
        const { outcomeEventId } = yield* ingestLead(fixture, { action_source: "website" })
        const held = yield* eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).length > 0, { what: "the hold", within: "20 seconds" })
        assert.deepStrictEqual(rowsOf(held, outcomeEventId).map((r) => [r.decision, r.skip_reason]), [["held", "dpa_not_accepted"]])
        assert.strictEqual((yield* received(fixture.key, rowsOf(held, outcomeEventId)[0].event_id)).length, 0)

        const owner = yield* seedMemberSession(fixture, "owner")
        const accepted = yield* call(`/api/v1/profiles/${fixture.profileId}/dpa/accept`, {
          method: "POST",
          headers: { ...owner.headers, "content-type": "application/json" },
          body: JSON.stringify({ version: CURRENT_DPA_VERSION })
        })
        assert.strictEqual(accepted.status, 200, accepted.text)
        const rows = yield* eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).some((row) => row.decision === "delivered"), {
          what: "the delivery after the DPA",
          within: "20 seconds"
        })
        const mine = rowsOf(rows, outcomeEventId).reverse()
        // One row per decision: the held rechecks added none.
        assert.deepStrictEqual(mine.map((r) => r.decision), ["held", "delivered"])
        const [event] = yield* received(fixture.key, mine[1].event_id)
        assert.strictEqual(event.event_name, `Conversion_${sha256("ivf_consult_booked").slice(0, 10)}`)
        assert.strictEqual(event.action_source, "website")
        assert.deepStrictEqual(event.user_data.em, [sha256("ana@example.com")])
        assert.notInclude(JSON.stringify(event), "ivf")
        assert.notInclude(JSON.stringify(event), "Ana@")
      }))

    it.effect("HIPAA: held until the BAA is accepted (an accepted DPA is not enough)", () =>
      Effect.gen(function*() {
        const fixture = yield* wired()
        const put = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "hipaa" })
        assert.strictEqual(put.status, 200, put.text)
        yield* acceptDpa(fixture)
        const { outcomeEventId } = yield* ingestLead(fixture)
        const rows = yield* eventually(ledger(fixture), (r) => rowsOf(r, outcomeEventId).length > 0, { what: "the hold", within: "20 seconds" })
        assert.deepStrictEqual(rowsOf(rows, outcomeEventId).map((r) => [r.decision, r.skip_reason]), [["held", "baa_not_accepted"]])
        assert.strictEqual((yield* received(fixture.key, rowsOf(rows, outcomeEventId)[0].event_id)).length, 0)
      }))

    it.effect("action_source routing: ctwa_clid to the messaging dataset, business_messaging without it as chat, degraded without the lane", () =>
      Effect.gen(function*() {
        const fixture = yield* wired({ adplatform_capi: "Lead", adplatform_capi_messaging: "LeadSubmitted" })
        const messaging = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi_messaging",
          connection_id: fixture.connectionId,
          dataset_id: "ds_1001_1",
          name: "Chat account dataset"
        })
        assert.strictEqual(messaging.status, 201, messaging.text)
        const messagingId: string = messaging.json.data.id

        // Omitted action_source with a ctwa_clid: inferred business_messaging, sent to the chat account's dataset only.
        const ctwa = yield* ingestLead(fixture, { click_ids: { ctwa_clid: "ctwa-1" } })
        const ctwaRows = yield* decided(fixture, ctwa.outcomeEventId, 2)
        assert.deepStrictEqual(
          [byDestination(ctwaRows, messagingId), byDestination(ctwaRows, fixture.destinationId)].map((r) => [r.decision, r.action_source, r.skip_reason, r.event_name]),
          [["delivered", "business_messaging", null, "LeadSubmitted"], ["skipped", null, "routed_to_messaging_dataset", null]]
        )
        const [sent] = yield* received(fixture.key, byDestination(ctwaRows, messagingId).event_id)
        assert.strictEqual(sent.user_data.ctwa_clid, "ctwa-1")

        // business_messaging without a ctwa_clid: the website lane, as chat.
        const chat = yield* ingestLead(fixture, { action_source: "business_messaging" })
        const chatRows = yield* decided(fixture, chat.outcomeEventId, 2)
        assert.deepStrictEqual(
          [byDestination(chatRows, fixture.destinationId), byDestination(chatRows, messagingId)].map((r) => [r.decision, r.action_source, r.skip_reason]),
          [["delivered", "chat", null], ["skipped", null, "not_messaging_lane"]]
        )
        const [asChat] = yield* received(fixture.key, byDestination(chatRows, fixture.destinationId).event_id)
        assert.strictEqual(asChat.action_source, "chat")
        assert.isUndefined(asChat.event_source_url)

        // The rule off the messaging lane: a ctwa_clid event degrades to system_generated on the website dataset.
        const rules = yield* send(fixture.key, "GET", "/api/v1/exports/rules")
        const off = yield* send(fixture.key, "PATCH", `/api/v1/exports/rules/${rules.json.data[0].id}`, {
          platform_event_name_overrides: { adplatform_capi: "Lead", adplatform_capi_messaging: null }
        })
        assert.strictEqual(off.status, 200, off.text)
        const degraded = yield* ingestLead(fixture, { action_source: "business_messaging", click_ids: { ctwa_clid: "ctwa-2" } })
        const degradedRows = yield* decided(fixture, degraded.outcomeEventId, 2)
        assert.deepStrictEqual(
          [byDestination(degradedRows, fixture.destinationId), byDestination(degradedRows, messagingId)].map((r) => [r.decision, r.action_source, r.skip_reason]),
          [
            ["delivered", "system_generated", "action_source_degraded:business_messaging_to_system_generated"],
            ["skipped", null, "messaging_lane_off"]
          ]
        )
        const filtered = yield* ledger(fixture, "?skip_reason=action_source_degraded:business_messaging_to_system_generated")
        assert.deepStrictEqual(filtered.map((r) => r.outcome_event_id), [degraded.outcomeEventId])
      }))

    it.effect("Platform-Safe target clean: other destinations suppressed; with no Clean Dataset nothing is sent; with one only it receives", () =>
      Effect.gen(function*() {
        const fixture = yield* wired({ adplatform_capi: "Lead" })
        const put = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe", platform_safe_target: "clean", platform_safe_audiences: "disabled" })
        assert.strictEqual(put.status, 200, put.text)
        yield* acceptDpa(fixture)

        const first = yield* ingestLead(fixture)
        const [suppressed] = yield* decided(fixture, first.outcomeEventId, 1)
        assert.deepStrictEqual(
          [suppressed.decision, suppressed.routing, suppressed.skip_reason, suppressed.action_source],
          ["suppressed", "suppressed_platform_safe", "platform_safe_clean_dataset_inactive", null]
        )
        assert.strictEqual((yield* received(fixture.key, suppressed.event_id)).length, 0)

        const dataset = yield* newSandboxDataset(fixture, "Clean Dataset")
        const clean = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: fixture.connectionId,
          dataset_id: dataset,
          name: "Clean Dataset",
          clean_dataset: true
        })
        assert.strictEqual(clean.status, 201, clean.text)
        const second = yield* ingestLead(fixture)
        const rows = yield* decided(fixture, second.outcomeEventId, 2)
        const toClean = byDestination(rows, clean.json.data.id)
        const toExisting = byDestination(rows, fixture.destinationId)
        assert.deepStrictEqual([toExisting.decision, toExisting.routing, toExisting.skip_reason], ["suppressed", "suppressed_platform_safe", null])
        assert.strictEqual(toClean.decision, "delivered")
        const [event] = yield* received(fixture.key, toClean.event_id)
        assert.strictEqual(event.dataset_id, dataset)
        assert.strictEqual((yield* received(fixture.key, toExisting.event_id)).length, 0)
      }))
  })
})
