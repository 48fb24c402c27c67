/**
 * Platform-Safe (issue 20 part 4) over real HTTP against the ad-platform sandbox served by the
 * app: the provision state table (409s, action_required, provisioned, already_provisioned with
 * no platform call), the target switch (ad_sets_to_recreate; 409 clean_dataset_has_live_ad_sets
 * unless confirmed), and repoint: the consent contract and the duplicate swap observed in the
 * sandbox's `_state` (copy paused → ads → copy active → original paused, never deleted; run_both).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { REBUILD_CONSENT_VERSION, rebuildConsentText } from "../../schema/platform-safe.ts"
import { sha256 } from "../../src/exports/pipeline/scrub.ts"
import { call, callAs, TestServer } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { connectProvider, sandboxToken, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write"]

const send = callAs

/** The Platform-Safe part of `_state` in the sandbox world of `key`'s profile (decision 0109). */
const sandboxState = (key: string) =>
  Effect.map(call("/sandbox/adplatform/_state", { method: "GET", headers: keyAuth(key) }), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return r.json.platform_safe
  })

interface Fixture extends SeededProfile {
  readonly key: string
}

const newProfile = (mode: "platform_safe" | "standard" = "platform_safe") =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
    yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
    yield* defineConversion(profile.profileId, "purchase", ["order_paid"])
    const put = yield* send(key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: mode })
    assert.strictEqual(put.status, 200, put.text)
    return { ...profile, key } satisfies Fixture
  })

const connect = (fixture: Fixture, persona = "one_account") =>
  Effect.map(connectProvider(fixture.key, "adplatform", { persona }), (run) => run.connectionId)

/** The sandbox's own API with a grant on act_1001, in the sandbox world of `fixture`'s profile. */
const platformCall = (fixture: SeededProfile, method: string, path: string, body?: unknown) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    // sandboxToken types its world as a UUID (its default is crypto.randomUUID()); a profile id is one.
    const token = yield* sandboxToken(url, "adplatform", "one_account", fixture.profileId)
    return yield* call(`/sandbox/adplatform/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  })

/** A published ad set of its own on `fixture`'s act_1001 (optimizing on the ordinary dataset), with two copied ads. */
const publishedAdSet = (fixture: SeededProfile, name: string) =>
  Effect.gen(function*() {
    const created = yield* platformCall(fixture, "POST", "/campaigns/cmp_1001_1/adsets", {
      name,
      promoted_object: { pixel_id: "ds_1001_1", custom_event_type: "PURCHASE" },
      daily_budget_minor: 2_000
    })
    assert.strictEqual(created.status, 201, created.text)
    const id = created.json.id as string
    for (const ad of ["ad_1001_1_1_1", "ad_1001_1_1_2"]) {
      const copied = yield* platformCall(fixture, "POST", `/ads/${ad}/copies`, { adset_id: id })
      assert.strictEqual(copied.status, 201, copied.text)
    }
    const on = yield* platformCall(fixture, "POST", `/adsets/${id}`, { status: "active" })
    assert.strictEqual(on.status, 200, on.text)
    return id
  })

const provisioned = (fixture: Fixture) =>
  Effect.gen(function*() {
    yield* connect(fixture)
    const answer = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.json.data.status, "provisioned", answer.text)
    return answer.json.data.clean_dataset_id as string
  })

const consentOf = (locale: "en" | "es", fields: Record<string, unknown> = {}) => ({
  version: REBUILD_CONSENT_VERSION,
  text_hash: sha256(rebuildConsentText(locale)),
  accepted_by: "person-42",
  accepted_at: new Date().toISOString(),
  ...fields
})

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("platform-safe", (it) => {
  describe("provision", () => {
    it.effect("409 platform_safe_required outside Platform-Safe, 409 adplatform_connection_required without a connection", () =>
      Effect.gen(function*() {
        const standard = yield* newProfile("standard")
        const refused = yield* send(standard.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "platform_safe_required")

        const safe = yield* newProfile()
        const noConnection = yield* send(safe.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        assert.strictEqual(noConnection.status, 409, noConnection.text)
        assert.strictEqual(noConnection.json.error.code, "adplatform_connection_required")
      }))

    it.effect("without the manage-ads grant: 200 action_required ads_management_missing with checks; target stays existing", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const connectionId = yield* connect(fixture, "no_manage_ads_permission")
        const answer = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        assert.strictEqual(answer.status, 200, answer.text)
        assert.strictEqual(answer.json.data.status, "action_required")
        assert.strictEqual(answer.json.data.reason, "ads_management_missing")
        assert.deepStrictEqual(answer.json.data.missing_permissions, ["ads_management"])
        assert.deepStrictEqual(answer.json.data.checks, {
          privacy_mode: "platform_safe",
          adplatform_connection_id: connectionId,
          ads_management: false,
          outcome_types_tracked: ["lead", "purchase"],
          outcome_types_mapped: [],
          dpa_status: "not_accepted",
          platform_safe_target: "existing"
        })
        const target = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/target", { target: "clean" })
        assert.strictEqual(target.status, 200, target.text)
        assert.strictEqual(target.json.data.switched, false)
        assert.strictEqual(target.json.data.platform_safe_target, "existing")
        assert.strictEqual(target.json.data.provision.reason, "ads_management_missing")
      }))

    it.effect("provisions a Clean Dataset with one custom conversion per outcome type; a second call calls nothing and writes nothing", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        const before = (yield* sandboxState(fixture.key)).custom_conversions.length
        const first = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", { dataset_name: "Clean one" })
        assert.strictEqual(first.status, 200, first.text)
        assert.strictEqual(first.json.data.status, "provisioned")
        assert.strictEqual(first.json.data.checks.platform_safe_target, "clean")
        assert.strictEqual(first.json.data.checks.ads_management, true)
        const datasetId = first.json.data.clean_dataset_id as string
        assert.deepStrictEqual(
          first.json.data.custom_conversions.map((c: any) => [c.outcome_type, c.custom_event_type]),
          [["lead", "LEAD"], ["purchase", "PURCHASE"]]
        )
        const after = yield* sandboxState(fixture.key)
        const made = after.custom_conversions.slice(before)
        assert.strictEqual(made.length, 2)
        assert.ok(made.every((c: any) => c.dataset_id === datasetId && c.name.startsWith("Conversion_")), JSON.stringify(made))

        const destinations = yield* send(fixture.key, "GET", "/api/v1/exports/destinations")
        const clean = destinations.json.data.filter((d: any) => d.clean_dataset)
        assert.strictEqual(clean.length, 1)
        assert.strictEqual(clean[0].dataset_id, datasetId)
        assert.strictEqual(clean[0].platform_safe_target, "clean")

        const second = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        assert.strictEqual(second.status, 200, second.text)
        assert.strictEqual(second.json.data.status, "already_provisioned")
        assert.strictEqual(second.json.data.clean_dataset_id, datasetId)
        assert.ok(second.json.data.checks !== undefined)
        assert.strictEqual((yield* sandboxState(fixture.key)).custom_conversions.length, after.custom_conversions.length)
      }))
  })

  describe("target", () => {
    it.effect("clean lists ad sets to recreate with their Clean Dataset target; back to existing is 409 while Clean Dataset ad sets deliver, unless confirmed", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const datasetId = yield* provisioned(fixture)
        const mine = yield* publishedAdSet(fixture, "Target check")
        const toClean = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/target", { target: "clean" })
        assert.strictEqual(toClean.status, 200, toClean.text)
        assert.strictEqual(toClean.json.data.platform_safe_target, "clean")
        const listed = toClean.json.data.ad_sets_to_recreate.find((s: any) => s.ad_set_id === mine)
        assert.deepStrictEqual(listed.target, { pixel_id: datasetId, custom_event_type: "PURCHASE", optimize_on: "standard_event" })
        assert.deepStrictEqual(listed.current, { pixel_id: "ds_1001_1", custom_event_type: "PURCHASE" })

        // An ad set delivering on the Clean Dataset blocks the way back.
        const onClean = yield* platformCall(fixture, "POST", "/campaigns/cmp_1001_1/adsets", {
          name: "On clean",
          promoted_object: { pixel_id: datasetId, custom_event_type: "LEAD" }
        })
        assert.strictEqual(onClean.status, 201, onClean.text)
        yield* platformCall(fixture, "POST", `/adsets/${onClean.json.id}`, { status: "active" })
        const blocked = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/target", { target: "existing" })
        assert.strictEqual(blocked.status, 409, blocked.text)
        assert.strictEqual(blocked.json.error.code, "clean_dataset_has_live_ad_sets")
        const still = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(still.json.data.settings.platform_safe_target, "clean")

        const confirmed = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/target", { target: "existing", confirm_live_ad_sets: true })
        assert.strictEqual(confirmed.status, 200, confirmed.text)
        assert.strictEqual(confirmed.json.data.switched, true)
        assert.strictEqual(confirmed.json.data.platform_safe_target, "existing")
        const read = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(read.json.data.settings.platform_safe_target, "existing")
      }))
  })

  describe("repoint", () => {
    it.effect("under target existing a key gets 409 invalid_state switch_to_clean_dataset", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* provisioned(fixture)
        yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/target", { target: "existing", confirm_live_ad_sets: true })
        const refused = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", { ad_set_ids: ["as_1001_1_1"] })
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        assert.strictEqual(refused.json.error.reason, "switch_to_clean_dataset")
      }))

    it.effect("the consent contract: missing, wrong version, wrong hash, stale → 409 with consent; malformed or > 5 min ahead → 422; nothing created", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* provisioned(fixture)
        const mine = yield* publishedAdSet(fixture, "Consent check")
        const logBefore = (yield* sandboxState(fixture.key)).ad_set_log.length
        const attempt = (consent: unknown) =>
          send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", {
            ad_set_ids: [mine],
            confirm_recreate: true,
            ...(consent === undefined ? {} : { consent })
          })
        const expectedHint = {
          version: "2026-09-23.duplicate-swap.v1",
          text_hashes: { en: sha256(rebuildConsentText("en")), es: sha256(rebuildConsentText("es")) }
        }
        for (const consent of [
          undefined,
          consentOf("en", { version: "2026-01-01.duplicate-swap.v0" }),
          consentOf("en", { text_hash: sha256(`${rebuildConsentText("en")}\n`) }),
          consentOf("es", { accepted_at: new Date(Date.now() - 25 * 3_600_000).toISOString() })
        ]) {
          const refused = yield* attempt(consent)
          assert.strictEqual(refused.status, 409, refused.text)
          assert.strictEqual(refused.json.error.code, "consent_required")
          assert.deepStrictEqual(refused.json.error.consent, expectedHint)
        }
        for (const consent of [
          consentOf("en", { accepted_at: new Date(Date.now() + 10 * 60_000).toISOString() }),
          consentOf("en", { accepted_by: "" }),
          consentOf("en", { accepted_at: "yesterday" }),
          "yes"
        ]) {
          const refused = yield* attempt(consent)
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.json.error.code, "validation_error")
        }
        assert.strictEqual((yield* sandboxState(fixture.key)).ad_set_log.length, logBefore, "nothing reached the ad platform")

        // Without confirmation nothing is rebuilt: the frozen ad set is listed in needs_recreate.
        const first = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", { ad_set_ids: [mine] })
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json.data.needs_recreate, [mine])
        assert.strictEqual(first.json.data.results[0].outcome, "needs_recreate")
      }))

    it.effect("the specification's spelling `ad_sets_ids` is an alias of `ad_set_ids`; both differing, or neither, is 400 validation_error", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* provisioned(fixture)
        const mine = yield* publishedAdSet(fixture, "Alias check")
        const repoint = (body: unknown) => send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", body)
        for (const body of [{ ad_sets_ids: [mine] }, { ad_set_ids: [mine], ad_sets_ids: [mine] }]) {
          const answer = yield* repoint(body)
          assert.strictEqual(answer.status, 200, answer.text)
          assert.deepStrictEqual(answer.json.data.needs_recreate, [mine])
          assert.strictEqual(answer.json.data.results[0].ad_set_id, mine)
        }
        const logBefore = (yield* sandboxState(fixture.key)).ad_set_log.length
        for (const body of [{ ad_set_ids: [mine], ad_sets_ids: ["as_other"] }, { confirm_recreate: true }, { ad_sets_ids: [] }]) {
          const refused = yield* repoint(body)
          assert.strictEqual(refused.status, 400, refused.text)
          assert.strictEqual(refused.json.error.code, "validation_error")
        }
        assert.strictEqual((yield* sandboxState(fixture.key)).ad_set_log.length, logBefore, "nothing reached the ad platform")
      }))

    it.effect("duplicate swap: copy created paused, ads copied, copy switched on, original paused last and kept; a retry creates nothing more", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const datasetId = yield* provisioned(fixture)
        const mine = yield* publishedAdSet(fixture, "Swap me")
        const logBefore = (yield* sandboxState(fixture.key)).ad_set_log.length
        const body = { ad_set_ids: [mine], confirm_recreate: true, consent: consentOf("es") }
        const done = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", body)
        assert.strictEqual(done.status, 200, done.text)
        const result = done.json.data.results[0]
        assert.strictEqual(result.outcome, "recreated")
        assert.deepStrictEqual(done.json.data.recreated, [mine])
        const copy = result.new_ad_set_id as string
        assert.notStrictEqual(copy, mine)
        assert.deepStrictEqual(
          done.json.data.warnings.map((w: any) => [w.code, w.ad_set_ids]),
          [["new_ad_set_ids", [mine]], ["learning_reset", [mine]], ["double_spend_window", [mine]]]
        )

        const state = yield* sandboxState(fixture.key)
        const log = state.ad_set_log.slice(logBefore)
        assert.deepStrictEqual(
          log.map((e: any) => [e.action, e.object === "ad" ? e.ad_set_id : e.id, e.status ?? null]),
          [
            ["created", copy, "paused"],
            ["ad_copied", copy, null],
            ["ad_copied", copy, null],
            ["status", copy, "active"],
            ["status", mine, "paused"]
          ]
        )
        const byId = new Map<string, any>(state.ad_set_optimizations.map((o: any) => [o.id, o]))
        assert.strictEqual(byId.get(mine).status, "paused", "the original is paused, not deleted")
        assert.deepStrictEqual(byId.get(copy).promoted_object, { pixel_id: datasetId, custom_event_type: "PURCHASE" })
        assert.strictEqual(byId.get(copy).status, "active")
        assert.strictEqual(byId.get(copy).ad_ids.length, 2)

        const retry = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", body)
        assert.strictEqual(retry.status, 200, retry.text)
        assert.strictEqual((yield* sandboxState(fixture.key)).ad_set_log.length, state.ad_set_log.length, "a retry writes nothing more")
      }))

    it.effect("run_both keeps the original running and warns budget_doubled; a signed-in session needs no consent; an unpublished ad set is re-pointed in place", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const datasetId = yield* provisioned(fixture)
        const mine = yield* publishedAdSet(fixture, "Run both")
        const owner = yield* seedMemberSession(fixture, "owner")
        const answer = yield* call(`/api/v1/conversion-sync/platform-safe/repoint?profile_id=${fixture.profileId}`, {
          method: "POST",
          headers: { ...owner.headers, "content-type": "application/json" },
          body: JSON.stringify({ ad_set_ids: [mine], confirm_recreate: true, duplicate_swap_mode: "run_both" })
        })
        assert.strictEqual(answer.status, 200, answer.text)
        assert.strictEqual(answer.json.data.results[0].outcome, "duplicated")
        assert.deepStrictEqual(answer.json.data.duplicated, [mine])
        assert.deepStrictEqual(
          answer.json.data.warnings.map((w: any) => w.code),
          ["new_ad_set_ids", "learning_reset", "budget_doubled"]
        )
        const state = yield* sandboxState(fixture.key)
        const byId = new Map<string, any>(state.ad_set_optimizations.map((o: any) => [o.id, o]))
        assert.strictEqual(byId.get(mine).status, "active")
        assert.strictEqual(byId.get(answer.json.data.results[0].new_ad_set_id).status, "active")

        // A draft ad set (never switched on) is not frozen: re-pointed in place, no copy.
        const draft = yield* platformCall(fixture, "POST", "/campaigns/cmp_1001_1/adsets", {
          name: "Draft",
          promoted_object: { pixel_id: "ds_1001_1", custom_event_type: "LEAD" }
        })
        const inPlace = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/repoint", { ad_set_ids: [draft.json.id] })
        assert.strictEqual(inPlace.status, 200, inPlace.text)
        assert.strictEqual(inPlace.json.data.results[0].outcome, "repointed")
        const after = new Map<string, any>((yield* sandboxState(fixture.key)).ad_set_optimizations.map((o: any) => [o.id, o]))
        assert.deepStrictEqual(after.get(draft.json.id).promoted_object, { pixel_id: datasetId, custom_event_type: "LEAD" })
        // The platform itself refuses the change on a published ad set.
        const frozen = yield* platformCall(fixture, "POST", `/adsets/${mine}/promoted_object`, { pixel_id: datasetId, custom_event_type: "LEAD" })
        assert.strictEqual(frozen.status, 400, frozen.text)
        assert.strictEqual(frozen.json.error.code, "adset_field_frozen")
      }))
  })
  describe("wiring", () => {
    it.effect("null block outside Platform-Safe; the block's routing, DPA remediation, ad_sets_to_move only with force=1 or recheck; the 7-day alerts", () =>
      Effect.gen(function*() {
        const standard = yield* newProfile("standard")
        const plain = yield* send(standard.key, "GET", "/api/v1/conversion-sync/wiring")
        assert.strictEqual(plain.status, 200, plain.text)
        assert.strictEqual(plain.json.data.platform_safe, null)

        const fixture = yield* newProfile()
        const connectionId = yield* connect(fixture)
        const ordinary = yield* send(fixture.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: connectionId,
          dataset_id: "ds_1001_1",
          name: "Website"
        })
        assert.strictEqual(ordinary.status, 201, ordinary.text)
        const rule = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead", platform_event_name_overrides: { adplatform_capi: "Lead" } })
        assert.strictEqual(rule.status, 201, rule.text)
        const provision = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        const cleanDestination = provision.json.data.destination_id as string
        const mine = yield* publishedAdSet(fixture, "Wiring check")

        const cached = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/wiring")
        assert.strictEqual(cached.status, 200, cached.text)
        const block = cached.json.data.platform_safe
        assert.strictEqual(block.target, "clean")
        assert.deepStrictEqual(block.target_destination_ids, [cleanDestination])
        assert.deepStrictEqual(block.suppressed_destination_ids, [ordinary.json.data.id])
        assert.deepStrictEqual(block.platform_safe_dataset, { status: "provisioned", clean_dataset_id: provision.json.data.clean_dataset_id })
        assert.deepStrictEqual(block.dpa_status, { status: "not_accepted", remediation: "sign_dpa" })
        assert.strictEqual(block.ad_sets_to_move, null)
        assert.deepStrictEqual(block.event_mapping.map((m: any) => [m.destination_id, m.event_name, m.double_count_risk]), [[cleanDestination, "Lead", false]])
        assert.strictEqual(cached.json.data.destinations.find((d: any) => d.id === ordinary.json.data.id).routing, "suppressed_platform_safe")

        for (const live of [
          yield* send(fixture.key, "GET", "/api/v1/conversion-sync/wiring?force=1"),
          yield* send(fixture.key, "POST", "/api/v1/conversion-sync/wiring/recheck")
        ]) {
          assert.strictEqual(live.status, 200, live.text)
          const move = live.json.data.platform_safe.ad_sets_to_move.find((a: any) => a.ad_set_id === mine)
          assert.strictEqual(move.remediation, "recreate_ad_set")
        }

        // Alerts over 7 days, from the ledger: Lead refused on 3 distinct days; another profile sends Lead to the same dataset.
        const sql = yield* SqlClient
        const cleanDataset = provision.json.data.clean_dataset_id as string
        for (const daysAgo of [1, 2, 3]) {
          yield* sql`INSERT INTO export_deliveries (id, profile_id, destination_id, attempt, decision, event_name, created_at)
                     VALUES (${crypto.randomUUID()}, ${fixture.profileId}, ${cleanDestination}, 1, 'failed', 'Lead', now() - make_interval(days => ${daysAgo}))`
        }
        yield* sql`INSERT INTO export_deliveries (id, profile_id, destination_id, attempt, decision, event_name, created_at)
                   VALUES (${crypto.randomUUID()}, ${fixture.profileId}, ${cleanDestination}, 1, 'delivered', 'Schedule', now() - interval '1 day')`
        // Dataset ids repeat across runs on a kept database (the sandbox reseeds): count from a baseline.
        const baseline = (yield* send(fixture.key, "GET", "/api/v1/conversion-sync/wiring")).json.data.platform_safe.event_mapping[0].other_sources_7d as number
        const other = yield* newProfile()
        const otherConnection = yield* connect(other)
        const shared = yield* send(other.key, "POST", "/api/v1/exports/destinations", {
          kind: "adplatform_capi",
          connection_id: otherConnection,
          dataset_id: cleanDataset,
          name: "Shared"
        })
        assert.strictEqual(shared.status, 201, shared.text)
        yield* sql`INSERT INTO export_deliveries (id, profile_id, destination_id, attempt, decision, event_name)
                   VALUES (${crypto.randomUUID()}, ${other.profileId}, ${shared.json.data.id}, 1, 'delivered', 'Schedule')`
        const alerted = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/wiring")
        assert.deepStrictEqual(alerted.json.data.platform_safe.categorization.events_not_accepted, ["Lead"])
        const mapping = alerted.json.data.platform_safe.event_mapping[0]
        assert.strictEqual(mapping.other_sources_7d, baseline + 1)
        assert.strictEqual(mapping.double_count_risk, true)
      }))

    it.effect("ad-sets: the first round lists needs_duplicate_swap, the confirmed second rebuilds on the rule's dataset and event", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const datasetId = yield* provisioned(fixture)
        const rule = yield* send(fixture.key, "POST", "/api/v1/exports/rules", { conversion_key: "lead" })
        assert.strictEqual(rule.status, 201, rule.text)
        const mine = yield* publishedAdSet(fixture, "Wire me")
        const first = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/wiring/ad-sets", { rule_id: rule.json.data.id, ad_set_ids: [mine] })
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json.data.needs_duplicate_swap, [mine])
        const refused = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/wiring/ad-sets", {
          rule_id: rule.json.data.id,
          ad_set_ids: [mine],
          confirm_duplicate_swap: true
        })
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "consent_required")
        const second = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/wiring/ad-sets", {
          rule_id: rule.json.data.id,
          ad_set_ids: [mine],
          confirm_duplicate_swap: true,
          duplicate_swap_mode: "switch",
          consent: consentOf("en")
        })
        assert.strictEqual(second.status, 200, second.text)
        assert.deepStrictEqual(second.json.data.recreated, [mine])
        const copy = second.json.data.results[0].new_ad_set_id
        const state = yield* sandboxState(fixture.key)
        const byId = new Map<string, any>(state.ad_set_optimizations.map((o: any) => [o.id, o]))
        assert.deepStrictEqual(byId.get(copy).promoted_object, { pixel_id: datasetId, custom_event_type: "LEAD" })
      }))
  })
  // Last: the generated account is listed first, so later consents in this profile's world would reach it.
  describe("provision on a full ad account", () => {
    it.effect("the platform refuses a dataset: 200 action_required pixel_slot_taken with manual_steps; nothing recorded", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const arrived = yield* call("/sandbox/adplatform/_state", {
          method: "PATCH",
          headers: { "content-type": "application/json", ...keyAuth(fixture.key) },
          body: JSON.stringify({ arrive: { kind: "generated_account", id: "act_7701", ads: 10 } })
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        yield* connect(fixture)
        for (let n = 1; n < 40; n++) {
          const made = yield* platformCall(fixture, "POST", "/accounts/act_7701/datasets", { name: `Filler ${n}` })
          assert.strictEqual(made.status, 201, made.text)
        }
        const answer = yield* send(fixture.key, "POST", "/api/v1/conversion-sync/platform-safe/provision", {})
        assert.strictEqual(answer.status, 200, answer.text)
        assert.strictEqual(answer.json.data.status, "action_required")
        assert.strictEqual(answer.json.data.reason, "pixel_slot_taken")
        assert.ok(answer.json.data.manual_steps.length > 0)
        assert.strictEqual(answer.json.data.clean_dataset_id, null)
        assert.strictEqual(answer.json.data.checks.platform_safe_target, "existing")
        const read = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(read.json.data.settings.platform_safe_target, "existing")
      }))
  })
})
