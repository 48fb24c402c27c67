/**
 * Customer-list audiences (issue 20 part 5, decision 0100) over real HTTP against the ad-platform
 * sandbox served by the app: the Platform-Safe switch (409 platform_safe_audiences_disabled and no
 * platform call until enabled), proposals, the consent contract, the exact hashed members the
 * sandbox holds after a v1 and a v2 confirm, idempotent re-confirms, exclusions applied at once,
 * the 1 % lookalike, DELETE, hipaa and scopes. Paying customers come from POST /api/v1/events
 * (a cash definition), names and countries are set by SQL (the customers domain's rows). The sync
 * lease (decision 0119): held by a heartbeat it is never taken, abandoned it is taken over within
 * 10 s, and the old holder's fenced writes change nothing. The refresh's background fiber is off
 * here: the tests run it (`runOnce`) when they mean to.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import {
  CUSTOMER_LIST_CONSENT_V1,
  CUSTOMER_LIST_CONSENT_V2,
  type CustomerListConsentVersion,
  customerListConsentText
} from "../../schema/audiences.ts"
import { AudiencesRepo } from "../../src/exports/audiences/repo.ts"
import { sha256 } from "../../src/exports/pipeline/scrub.ts"
import { leaseSecondsOf, whileLeased } from "../../src/platform/lease.ts"
import { call, callAs, TestServer } from "../support/app.ts"
import { defineConversion, ingest } from "../support/events.ts"
import { CustomerListRefresh, CustomerListRefreshSettings, defaultCustomerListRefreshSettings } from "../../src/exports/audiences/worker.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, sandboxToken, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { holdFor, neverTaken, TAKEOVER_BOUND, takenWithin } from "../support/takeover.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"
import { heldOut } from "../../src/experiments/analysis.ts"

const SCOPES = ["connections:read", "connections:write", "exports:read", "exports:write", "events:write"]
const LIST = "/api/v1/partner/audiences/customer-list"

const send = callAs

interface SandboxAudience {
  readonly id: string
  readonly subtype: string
  readonly deleted: boolean
  readonly schema: ReadonlyArray<string>
  readonly members: ReadonlyArray<ReadonlyArray<string>>
  readonly replaces: number
  readonly origin_audience_id?: string
  readonly lookalike_spec?: { readonly ratio: number; readonly country: string }
}

/** The custom audiences in the sandbox world of `key`'s profile (decision 0109). */
const audiences = (key: string) =>
  Effect.map(
    call("/sandbox/adplatform/_state", { method: "GET", headers: keyAuth(key) }),
    (r) => {
      assert.strictEqual(r.status, 200, r.text)
      return r.json.custom_audiences as ReadonlyArray<SandboxAudience>
    }
  )
const audienceOf = (key: string, id: string) =>
  Effect.map(audiences(key), (all) => {
    const found = all.find((a) => a.id === id)
    return found === undefined ? assert.fail(`no sandbox audience ${id}`) : found
  })

interface Fixture extends SeededProfile {
  readonly key: string
}

const newProfile = (mode: "platform_safe" | "standard" | "hipaa" = "platform_safe", scopes: ReadonlyArray<string> = SCOPES) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: [...scopes], rateLimitPerMinute: 10_000 })
    yield* defineConversion(profile.profileId, "purchase", ["order_paid"], { countsAsCash: true })
    yield* defineConversion(profile.profileId, "lead", ["lead_submitted"])
    const put = yield* send(key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: mode })
    assert.strictEqual(put.status, 200, put.text)
    return { ...profile, key } satisfies Fixture
  })

const connect = (fixture: Fixture) =>
  Effect.map(connectProvider(fixture.key, "adplatform", { persona: "one_account" }), (run) => run.connectionId)

const enable = (fixture: Fixture, value: "enabled" | "disabled" = "enabled") =>
  Effect.gen(function*() {
    const put = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe", platform_safe_audiences: value })
    assert.strictEqual(put.status, 200, put.text)
    assert.strictEqual(put.json.data.settings.platform_safe_audiences, value)
  })

/** A customer made by an event with these traits; answers the customer id. */
const customerBy = (fixture: Fixture, event: string, traits: Record<string, string>) =>
  Effect.gen(function*() {
    const sent = yield* ingest(fixture.key, { event_name: event, user_traits: traits, properties: { value: 10, currency: "EUR" } })
    assert.strictEqual(sent.status, 200, sent.text)
    const sql = yield* SqlClient
    const rows = yield* sql<{ customer_id: string }>`
      SELECT customer_id::text AS customer_id FROM outcome_events WHERE id = ${sent.json.data.outcome_event_id}`
    const id = rows[0]?.customer_id
    return id === undefined ? assert.fail("the event has no customer") : id
  })

const setPerson = (customerId: string, first: string | null, last: string | null, country: string | null) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`UPDATE customers SET first_name = ${first}, last_name = ${last} WHERE id = ${customerId}`
    if (country !== null) {
      yield* sql`
        INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id, country)
        SELECT ${crypto.randomUUID()}, profile_id, 'web_touch', now(), 'direct', id, ${country} FROM customers WHERE id = ${customerId}`
    }
  })

/** 120 paying customers with an email each, written by SQL (enough for a lookalike's source). */
const manyPaying = (profileId: string, n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const tag = crypto.randomUUID().slice(0, 8)
    yield* sql`
      WITH made AS (
        SELECT gen_random_uuid() AS cid, gen_random_uuid() AS eid, g FROM generate_series(1, ${n}) AS g
      ), c AS (
        INSERT INTO customers (id, profile_id, customer_key) SELECT cid, ${profileId}, ${`bulk-${tag}-`} || g FROM made
      ), i AS (
        INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value, is_primary)
        SELECT gen_random_uuid(), ${profileId}, cid, 'email', ${`bulk-${tag}-`} || g || '@example.com', true FROM made
      ), e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
        SELECT eid, ${profileId}, ${`bulk-${tag}-`} || g, 'h', 'order_paid', now(), cid FROM made
      ), k AS (
        INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
        SELECT ${profileId}, ${`bulk-${tag}-`} || g, eid, now() FROM made
      )
      INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, customer_id, counts_as_cash, attribution_eligible)
      SELECT gen_random_uuid(), ${profileId}, eid, 'purchase', now(), cid, true, false FROM made`
  })

const consentOf = (version: CustomerListConsentVersion, locale: "en" | "es" = "en", fields: Record<string, unknown> = {}) => ({
  version,
  text_hash: sha256(customerListConsentText(version, locale)),
  accepted_by: "merchant-7",
  accepted_at: new Date().toISOString(),
  ...fields
})

const h = (value: string) => sha256(value)

/** Three paying customers (one with no email and no phone), one lead only; answers the ids. */
const population = (fixture: Fixture) =>
  Effect.gen(function*() {
    const ana = yield* customerBy(fixture, "order_paid", { email: "  Ana.Paid@Example.COM ", phone: "+34 600 111 222" })
    yield* setPerson(ana, " Ana ", "García", "ES")
    const bo = yield* customerBy(fixture, "order_paid", { email: "bo@example.com" })
    yield* setPerson(bo, "Bo", null, null)
    const nobody = yield* customerBy(fixture, "order_paid", { external_id: `ext-${crypto.randomUUID()}` })
    const lead = yield* customerBy(fixture, "lead_submitted", { email: "lead@example.com" })
    return { ana, bo, nobody, lead }
  })

const refreshOff = Layer.succeed(CustomerListRefreshSettings)({ ...defaultCustomerListRefreshSettings, enabled: false })

layer(serveAppOnOwnPort().pipe(Layer.provide(refreshOff)), { timeout: "180 seconds", excludeTestServices: true })("customer-list audiences", (it) => {
  describe("Platform-Safe switch", () => {
    it.effect("off until enabled: GET disabled; proposal, confirm and lookalike 409 platform_safe_audiences_disabled; no platform audience", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* population(fixture)
        const catalog = yield* send(fixture.key, "GET", "/api/v1/conversion-sync/catalog")
        assert.strictEqual(catalog.json.data.settings.platform_safe_audiences, "disabled")

        const state = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(state.status, 200, state.text)
        assert.strictEqual(state.json.data.status, "disabled")
        assert.strictEqual(state.json.data.reason, "platform_safe_audiences_disabled")
        assert.strictEqual(state.json.data.platform_audience_id, null)

        const before = (yield* audiences(fixture.key)).length
        for (const body of [{}, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) }]) {
          const refused = yield* send(fixture.key, "POST", LIST, body)
          assert.strictEqual(refused.status, 409, refused.text)
          assert.strictEqual(refused.json.error.code, "platform_safe_audiences_disabled")
        }
        const lookalike = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "ES" })
        assert.strictEqual(lookalike.status, 409, lookalike.text)
        assert.strictEqual(lookalike.json.error.code, "platform_safe_audiences_disabled")
        assert.strictEqual((yield* audiences(fixture.key)).length, before)
        const sql = yield* SqlClient
        const rows = yield* sql`SELECT 1 FROM customer_list_audiences WHERE profile_id = ${fixture.profileId}`
        assert.strictEqual(rows.length, 0)

        // A catalog PUT without the field keeps it; enabling shows in GET.
        yield* enable(fixture)
        const keep = yield* send(fixture.key, "PUT", "/api/v1/conversion-sync/catalog", { privacy_mode: "platform_safe" })
        assert.strictEqual(keep.json.data.settings.platform_safe_audiences, "enabled")
        const off = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(off.json.data.status, "off")
        assert.strictEqual(off.json.data.reason, null)
      }))
  })

  describe("proposal, consent, confirm", () => {
    it.effect("proposal counts; consent errors; v1 uploads exactly hashed email and phone; re-confirm is one audience; v2 adds names and country", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const connectionId = yield* connect(fixture)
        yield* enable(fixture)
        const { ana, bo } = yield* population(fixture)

        const proposal = yield* send(fixture.key, "POST", LIST, { consent_version: CUSTOMER_LIST_CONSENT_V1 })
        assert.strictEqual(proposal.status, 200, proposal.text)
        assert.deepStrictEqual(proposal.json.data, {
          proposal: true,
          consent_version: CUSTOMER_LIST_CONSENT_V1,
          fields: ["EMAIL", "PHONE"],
          member_count: 2,
          excluded_count: 0,
          skipped_count: 1,
          consent: ([CUSTOMER_LIST_CONSENT_V1, CUSTOMER_LIST_CONSENT_V2] as const).map((version) => ({
            version,
            text_hashes: { en: sha256(customerListConsentText(version, "en")), es: sha256(customerListConsentText(version, "es")) }
          }))
        })
        const v2Proposal = yield* send(fixture.key, "POST", LIST, {})
        assert.deepStrictEqual(v2Proposal.json.data.fields, ["EMAIL", "PHONE", "FN", "LN", "COUNTRY"])
        assert.strictEqual((yield* send(fixture.key, "GET", LIST)).json.data.status, "off")

        // Consent: missing, another version, another hash, too old → 409 with a hint; malformed → 422.
        const missing = yield* send(fixture.key, "POST", LIST, { confirm: true })
        assert.strictEqual(missing.status, 409, missing.text)
        assert.strictEqual(missing.json.error.code, "consent_required")
        assert.strictEqual(missing.json.error.consent.version, CUSTOMER_LIST_CONSENT_V2)
        const otherVersion = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1, "en", { version: "2026-09-23.duplicate-swap.v1" }) })
        assert.strictEqual(otherVersion.status, 409, otherVersion.text)
        assert.strictEqual(otherVersion.json.error.code, "consent_required")
        // The v2 text signed as v1: the hash does not match v1's texts; the hint is v1's.
        const wrongHash = yield* send(fixture.key, "POST", LIST, {
          confirm: true,
          consent: consentOf(CUSTOMER_LIST_CONSENT_V1, "en", { text_hash: sha256(customerListConsentText(CUSTOMER_LIST_CONSENT_V2, "en")) })
        })
        assert.strictEqual(wrongHash.status, 409, wrongHash.text)
        assert.deepStrictEqual(wrongHash.json.error.consent, {
          version: CUSTOMER_LIST_CONSENT_V1,
          text_hashes: { en: sha256(customerListConsentText(CUSTOMER_LIST_CONSENT_V1, "en")), es: sha256(customerListConsentText(CUSTOMER_LIST_CONSENT_V1, "es")) }
        })
        const old = yield* send(fixture.key, "POST", LIST, {
          confirm: true,
          consent: consentOf(CUSTOMER_LIST_CONSENT_V1, "en", { accepted_at: new Date(Date.now() - 25 * 3600_000).toISOString() })
        })
        assert.strictEqual(old.status, 409, old.text)
        assert.strictEqual(old.json.error.code, "consent_required")
        for (const consent of [{ version: CUSTOMER_LIST_CONSENT_V1 }, consentOf(CUSTOMER_LIST_CONSENT_V1, "en", { accepted_at: "yesterday" })]) {
          const malformed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent })
          assert.strictEqual(malformed.status, 422, malformed.text)
          assert.strictEqual(malformed.json.error.code, "validation_error")
        }
        assert.strictEqual((yield* audiences(fixture.key)).filter((a) => a.subtype === "CUSTOM" && a.members.length === 0 && a.replaces === 0).length, 0)
        assert.strictEqual((yield* send(fixture.key, "GET", LIST)).json.data.platform_audience_id, null)

        // v1 (Spanish text): exactly the hashed email and phone of the two paying customers with either.
        const first = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1, "es") })
        assert.strictEqual(first.status, 201, first.text)
        const audienceId: string = first.json.data.platform_audience_id
        assert.strictEqual(first.json.data.created, true)
        assert.strictEqual(first.json.data.status, "enabled")
        assert.strictEqual(first.json.data.connection_id, connectionId)
        assert.strictEqual(first.json.data.consent_version, CUSTOMER_LIST_CONSENT_V1)
        assert.deepStrictEqual(first.json.data.fields, ["EMAIL", "PHONE"])
        assert.strictEqual(first.json.data.member_count, 2)
        assert.strictEqual(first.json.data.skipped_count, 1)
        const v1Rows = [[h("ana.paid@example.com"), h("34600111222")], [h("bo@example.com"), ""]]
        const uploaded = yield* audienceOf(fixture.key, audienceId)
        assert.deepStrictEqual(uploaded.schema, ["EMAIL", "PHONE"])
        assert.deepStrictEqual([...uploaded.members].sort(), [...v1Rows].sort())

        // Re-confirm: 200, the same platform audience, one more full replace, no second audience.
        const count = (yield* audiences(fixture.key)).length
        const again = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual(again.json.data.created, false)
        assert.strictEqual(again.json.data.platform_audience_id, audienceId)
        assert.strictEqual((yield* audiences(fixture.key)).length, count)
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).replaces, 2)
        // A v1 list's proposal stays v1 until re-confirmed with v2.
        assert.strictEqual((yield* send(fixture.key, "POST", LIST, {})).json.data.consent_version, CUSTOMER_LIST_CONSENT_V1)

        // v2: the three extra hashed fields; unknown ones are "".
        const v2 = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V2) })
        assert.strictEqual(v2.status, 200, v2.text)
        assert.deepStrictEqual(v2.json.data.fields, ["EMAIL", "PHONE", "FN", "LN", "COUNTRY"])
        const v2Audience = yield* audienceOf(fixture.key, audienceId)
        assert.deepStrictEqual(v2Audience.schema, ["EMAIL", "PHONE", "FN", "LN", "COUNTRY"])
        assert.deepStrictEqual([...v2Audience.members].sort(), [
          [h("ana.paid@example.com"), h("34600111222"), h("ana"), h("garcía"), h("es")],
          [h("bo@example.com"), "", h("bo"), "", ""]
        ].sort())
        assert.strictEqual((yield* audiences(fixture.key)).length, count)

        const state = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(state.json.data.status, "enabled")
        assert.strictEqual(state.json.data.consent_version, CUSTOMER_LIST_CONSENT_V2)
        assert.strictEqual(state.json.data.member_count, 2)
        assert.strictEqual(state.json.data.lookalike, null)
        assert.ok(typeof state.json.data.last_synced_at === "string")
        void ana
        void bo
      }))

    it.effect("PUT audience-exclusions takes an excluded customer out of the platform audience at once; an erased one drops at the next sync", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        const { ana, bo } = yield* population(fixture)
        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const audienceId: string = confirmed.json.data.platform_audience_id
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).members.length, 2)

        const excluded = yield* send(fixture.key, "PUT", `/api/v1/profiles/${fixture.profileId}/audience-exclusions`, { customer_ids: [ana] })
        assert.strictEqual(excluded.status, 200, excluded.text)
        assert.deepStrictEqual((yield* audienceOf(fixture.key, audienceId)).members, [[h("bo@example.com"), ""]])
        const state = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(state.json.data.member_count, 1)
        assert.strictEqual(state.json.data.excluded_count, 1)
        const proposal = yield* send(fixture.key, "POST", LIST, {})
        assert.strictEqual(proposal.json.data.excluded_count, 1)

        // Erased: out at the next sync (clearing the exclusions re-syncs, Ana back in, Bo out).
        const sql = yield* SqlClient
        yield* sql`UPDATE customers SET erased_at = now() WHERE id = ${bo}`
        const cleared = yield* send(fixture.key, "PUT", `/api/v1/profiles/${fixture.profileId}/audience-exclusions`, { customer_ids: [] })
        assert.strictEqual(cleared.status, 200, cleared.text)
        assert.deepStrictEqual((yield* audienceOf(fixture.key, audienceId)).members, [[h("ana.paid@example.com"), h("34600111222")]])
      }))
  })

  describe("experiments (issue 32)", () => {
    it.effect("a running audience_holdout leaves its holdout out of the platform audience (same hash as its results); its stop puts them back", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        yield* manyPaying(fixture.profileId, 30)
        const sql = yield* SqlClient
        const people = yield* sql<{ id: string; email: string }>`
          SELECT c.id::text AS id, i.value AS email FROM customers c
          JOIN customer_identifiers i ON i.customer_id = c.id AND i.kind = 'email'
          WHERE c.profile_id = ${fixture.profileId} ORDER BY c.id`
        assert.strictEqual(people.length, 30)
        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const audienceId: string = confirmed.json.data.platform_audience_id
        const emails = (members: ReadonlyArray<ReadonlyArray<string>>) => members.map((m) => m[0] ?? "").sort()
        const everyone = people.map((p) => h(p.email)).sort()
        assert.deepStrictEqual(emails((yield* audienceOf(fixture.key, audienceId)).members), everyone)

        const { key: experimenter } = yield* seedApiKey(fixture, { scopes: ["analytics:read", "campaigns:apply"], rateLimitPerMinute: 1000 })
        const today = new Date().toISOString().slice(0, 10)
        const end = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10)
        const created = yield* send(experimenter, "POST", "/api/v1/experiments", {
          name: "List holdout",
          kind: "audience_holdout",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: today, end },
          holdout_fraction: 0.5
        })
        assert.strictEqual(created.status, 201, created.text)
        const id: string = created.json.data.id
        // A draft holds nobody out: a re-upload now still has everyone.
        const salt = (yield* sql<{ salt: string }>`SELECT salt FROM experiments WHERE id = ${id}`)[0]?.salt ?? ""
        const held = people.filter((p) => heldOut(salt, p.id, 0.5))
        assert.ok(held.length > 0 && held.length < 30, `held ${held.length}`)

        assert.deepStrictEqual(created.json.data.exclusion, { uploads: [] })
        assert.strictEqual(created.json.data.execution, null)
        const started = yield* send(experimenter, "POST", `/api/v1/experiments/${id}/start`)
        assert.strictEqual(started.status, 200, started.text)
        // The start's re-upload is the first that left the holdout out.
        const uploads = () => Effect.map(send(experimenter, "GET", `/api/v1/experiments/${id}`), (r) => r.json.data.exclusion.uploads as ReadonlyArray<any>)
        const first = yield* uploads()
        assert.deepStrictEqual(first.map((u) => [u.platform_audience_id, u.held_out]), [[audienceId, held.length]])
        assert.match(first[0]?.uploaded_at, /^\d{4}-\d\d-\d\dT/)
        const treated = people.filter((p) => !heldOut(salt, p.id, 0.5)).map((p) => h(p.email)).sort()
        assert.deepStrictEqual(emails((yield* audienceOf(fixture.key, audienceId)).members), treated)
        const state = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(state.json.data.member_count, 30 - held.length)
        assert.strictEqual(state.json.data.excluded_count, held.length)
        // A re-upload while it runs (the daily refresh) keeps them out.
        yield* sql`UPDATE customer_list_audiences SET last_synced_at = now() - interval '25 hours' WHERE profile_id = ${fixture.profileId}`
        yield* (yield* CustomerListRefresh).runOnce
        assert.deepStrictEqual(emails((yield* audienceOf(fixture.key, audienceId)).members), treated)
        assert.deepStrictEqual((yield* uploads()).map((u) => [u.platform_audience_id, u.held_out]), [[audienceId, held.length], [audienceId, held.length]])

        const stopped = yield* send(experimenter, "POST", `/api/v1/experiments/${id}/stop`, { reason: "early_stop" })
        assert.strictEqual(stopped.status, 200, stopped.text)
        assert.deepStrictEqual(emails((yield* audienceOf(fixture.key, audienceId)).members), everyone)
        const after = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(after.json.data.member_count, 30)
        assert.strictEqual(after.json.data.excluded_count, 0)
        // The upload after the stop left nobody out: not one of the holdout's.
        assert.strictEqual((yield* uploads()).length, 2)
      }))
  })

  describe("retries and the sandbox's checks", () => {
    it.effect("two confirms at once make one platform audience; the sandbox refuses rows that are not hashes", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        yield* population(fixture)
        const before = (yield* audiences(fixture.key)).length
        const both = yield* Effect.all(
          [0, 1].map(() => send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })),
          { concurrency: 2 }
        )
        const statuses = both.map((r) => r.status).sort()
        // Either serialised (201 then 200) or the second found the first running (409, retry later).
        assert.ok(
          JSON.stringify(statuses) === "[200,201]" || JSON.stringify(statuses) === "[201,409]",
          both.map((r) => r.text).join(" | ")
        )
        for (const r of both) if (r.status === 409) assert.strictEqual(r.json.error.reason, "customer_list_sync_in_progress")
        assert.strictEqual((yield* audiences(fixture.key)).length, before + 1)
        const retried = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(retried.status, 200, retried.text)
        assert.strictEqual((yield* audiences(fixture.key)).length, before + 1)

        // The sandbox validates like the platform: 64 lowercase hex per value, known schema fields.
        const { url } = yield* TestServer
        // In the profile's own sandbox world (decision 0109), where its audience is.
        const token = yield* sandboxToken(url, "adplatform", "one_account", fixture.profileId)
        const replace = (payload: unknown) =>
          call(`/sandbox/adplatform/v1/customaudiences/${retried.json.data.platform_audience_id}/usersreplace`, {
            method: "POST",
            headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" },
            body: JSON.stringify({ session: { session_id: 7, batch_seq: 1, last_batch_flag: true, estimated_num_total: 1 }, payload })
          })
        for (const payload of [
          { schema: ["EMAIL"], data: [["someone@example.com"]] },
          { schema: ["EMAIL"], data: [[h("a").toUpperCase()]] },
          { schema: ["NAME"], data: [[h("a")]] },
          { schema: ["EMAIL", "PHONE"], data: [[h("a")]] }
        ]) {
          const refused = yield* replace(payload)
          assert.strictEqual(refused.status, 400, refused.text)
          assert.strictEqual(refused.json.error.code, "invalid_parameter")
        }

        // Deleted on the platform's side: the next confirm makes a new audience and fills it.
        const gone = yield* call(`/sandbox/adplatform/v1/customaudiences/${retried.json.data.platform_audience_id}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${token.access_token}` }
        })
        assert.strictEqual(gone.status, 200, gone.text)
        const remade = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(remade.status, 200, remade.text)
        assert.notStrictEqual(remade.json.data.platform_audience_id, retried.json.data.platform_audience_id)
        assert.strictEqual((yield* audienceOf(fixture.key, remade.json.data.platform_audience_id)).members.length, 2)
      }))
  })

  describe("daily refresh", () => {
    it.effect("a list synced over a day ago is re-uploaded: a new paying customer joins, an erased one leaves; a recent one is left alone", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        const { bo } = yield* population(fixture)
        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const audienceId: string = confirmed.json.data.platform_audience_id
        const replaces = (yield* audienceOf(fixture.key, audienceId)).replaces

        yield* customerBy(fixture, "order_paid", { email: "new.payer@example.com" })
        const sql = yield* SqlClient
        yield* sql`UPDATE customers SET erased_at = now() WHERE id = ${bo}`
        // Synced recently: a refresh leaves it.
        yield* (yield* CustomerListRefresh).runOnce
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).replaces, replaces)

        yield* sql`UPDATE customer_list_audiences SET last_synced_at = now() - interval '25 hours' WHERE profile_id = ${fixture.profileId}`
        yield* (yield* CustomerListRefresh).runOnce
        // The background fiber may have taken it first: wait for the platform's membership.
        const refreshed = yield* eventually(audienceOf(fixture.key, audienceId), (a) => a.replaces > replaces, { what: "the refresh", within: "20 seconds" })
        assert.deepStrictEqual([...refreshed.members].sort(), [
          [h("ana.paid@example.com"), h("34600111222")],
          [h("new.payer@example.com"), ""]
        ].sort())
        const state = yield* eventually(send(fixture.key, "GET", LIST), (r) => r.json.data.member_count === 2 && Date.parse(r.json.data.last_synced_at) > Date.now() - 60_000, {
          what: "the refreshed state",
          within: "20 seconds"
        })
        assert.strictEqual(state.json.data.consent_version, CUSTOMER_LIST_CONSENT_V1)
      }))

    it.effect("a refresh held by its heartbeat keeps the list; abandoned, the next claim takes it within 10 s; the old holder writes nothing", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        yield* population(fixture)
        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const sql = yield* SqlClient
        const repo = yield* AudiencesRepo
        // Due before any other list: the claims below get this one first.
        yield* sql`UPDATE customer_list_audiences SET last_synced_at = '1999-01-01T00:00:00Z' WHERE profile_id = ${fixture.profileId}`
        const { lease, refreshAfter } = defaultCustomerListRefreshSettings
        const seconds = leaseSecondsOf(lease)
        const claimOurs = Effect.map(
          repo.claimDue(Duration.toSeconds(refreshAfter), seconds),
          Option.filter((held) => held.profileId === fixture.profileId)
        )
        const first = Option.getOrThrow(yield* claimOurs)

        // The refresh's own wrapping; the work here only waits. One sync per list: neither the
        // refresh nor a request gets it while it is renewed.
        const holder = yield* Effect.forkChild(whileLeased(fixture.profileId, lease, repo.renewList(first, seconds))(Effect.never))
        const anyClaim = Effect.gen(function*() {
          if (Option.isSome(yield* claimOurs)) return true
          const request = yield* repo.claimList(fixture.profileId, seconds)
          return Option.isSome(request)
        })
        yield* neverTaken(anyClaim, holdFor(lease), "the customer list")
        const busy = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.deepStrictEqual([busy.status, busy.json.error?.reason], [409, "customer_list_sync_in_progress"], busy.text)
        // The holder dies: no more renewals.
        yield* Fiber.interrupt(holder)
        const took = yield* takenWithin(Effect.map(claimOurs, Option.isSome), "the customer list taken over")
        console.log(`customer-list refresh taken over ${took} ms after the last heartbeat stopped (lease ${Duration.format(lease)})`)
        assert.isBelow(took, Duration.toMillis(TAKEOVER_BOUND))

        // The first holder learns the list is another's; each of its writes changes nothing.
        const columns = sql`
          SELECT status, consent_version, platform_audience_id, member_count, last_synced_at, lookalike_id,
                 sync_lease_token IS NOT NULL AND sync_lease_until > now() AS held
          FROM customer_list_audiences WHERE profile_id = ${fixture.profileId}`
        const before = yield* columns
        assert.isFalse(yield* repo.renewList(first, seconds))
        assert.isFalse(yield* repo.saveAudience(first, { connectionId: crypto.randomUUID(), adAccountId: "stale", audienceId: "stale" }))
        assert.isFalse(yield* repo.saveSynced(first, { consentVersion: CUSTOMER_LIST_CONSENT_V2, consent: undefined, memberCount: 999, excludedCount: 0, skippedCount: 0 }))
        assert.isFalse(yield* repo.saveLookalike(first, "stale", "ES"))
        assert.isFalse(yield* repo.markOff(first))
        yield* repo.releaseList(first)
        yield* repo.holdList(first, 300)
        const after = yield* columns
        assert.deepStrictEqual(after, before)
        assert.strictEqual(after[0]?.held, true)
        assert.strictEqual(after[0]?.member_count, 2)

        // The taker's refresh fails: the list is held back from the refresh, not from a request.
        const [taken] = yield* sql<{ token: string }>`
          SELECT sync_lease_token::text AS token FROM customer_list_audiences WHERE profile_id = ${fixture.profileId}`
        yield* repo.holdList({ profileId: fixture.profileId, token: taken!.token }, 300)
        assert.isTrue(Option.isNone(yield* claimOurs))
        const request = yield* repo.claimList(fixture.profileId, seconds)
        assert.isTrue(Option.isSome(request))
        yield* repo.releaseList(Option.getOrThrow(request))
      }).pipe(Effect.provide(AudiencesRepo.layer)))
  })

  describe("lookalike and DELETE", () => {
    it.effect("lookalike: 409 customer_list_off, 409 lookalike_source_too_small, then 201 at 1 %, 200 on repeat; DELETE removes both, twice", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        yield* connect(fixture)
        yield* enable(fixture)
        yield* population(fixture)
        const off = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "ES" })
        assert.strictEqual(off.status, 409, off.text)
        assert.strictEqual(off.json.error.code, "invalid_state")
        assert.strictEqual(off.json.error.reason, "customer_list_off")
        const bad = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "Spain" })
        assert.strictEqual(bad.status, 400, bad.text)

        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V2) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const source: string = confirmed.json.data.platform_audience_id
        const small = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "ES" })
        assert.strictEqual(small.status, 409, small.text)
        assert.strictEqual(small.json.error.reason, "lookalike_source_too_small")
        assert.ok(!(yield* audiences(fixture.key)).some((a) => a.origin_audience_id === source))

        yield* manyPaying(fixture.profileId, 120)
        const resync = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V2) })
        assert.strictEqual(resync.status, 200, resync.text)
        assert.strictEqual(resync.json.data.member_count, 122)
        assert.strictEqual((yield* audienceOf(fixture.key, source)).members.length, 122)

        const made = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "es" })
        assert.strictEqual(made.status, 201, made.text)
        assert.strictEqual(made.json.data.created, true)
        assert.strictEqual(made.json.data.source_audience_id, source)
        assert.strictEqual(made.json.data.lookalike.ratio, 0.01)
        assert.strictEqual(made.json.data.lookalike.country, "ES")
        const lookalikeId: string = made.json.data.lookalike.platform_audience_id
        const onPlatform = yield* audienceOf(fixture.key, lookalikeId)
        assert.strictEqual(onPlatform.subtype, "LOOKALIKE")
        assert.strictEqual(onPlatform.origin_audience_id, source)
        assert.deepStrictEqual(onPlatform.lookalike_spec, { ratio: 0.01, country: "ES" })
        const repeat = yield* send(fixture.key, "POST", `${LIST}/lookalike`, { country: "ES" })
        assert.strictEqual(repeat.status, 200, repeat.text)
        assert.strictEqual(repeat.json.data.lookalike.platform_audience_id, lookalikeId)
        assert.strictEqual((yield* audiences(fixture.key)).filter((a) => a.origin_audience_id === source).length, 1)
        assert.strictEqual((yield* send(fixture.key, "GET", LIST)).json.data.lookalike.platform_audience_id, lookalikeId)

        const deleted = yield* send(fixture.key, "DELETE", LIST)
        assert.strictEqual(deleted.status, 200, deleted.text)
        assert.strictEqual(deleted.json.data.status, "off")
        assert.strictEqual(deleted.json.data.platform_audience_id, null)
        assert.strictEqual(deleted.json.data.lookalike, null)
        assert.deepStrictEqual(deleted.json.data.platform_audience, { deleted: true, reason: null, platform_audience_id: source, lookalike_id: lookalikeId })
        assert.strictEqual((yield* audienceOf(fixture.key, source)).deleted, true)
        assert.strictEqual((yield* audienceOf(fixture.key, lookalikeId)).deleted, true)
        const twice = yield* send(fixture.key, "DELETE", LIST)
        assert.strictEqual(twice.status, 200, twice.text)
        // The same state; this call did nothing at the platform.
        assert.deepStrictEqual(twice.json.data, { ...deleted.json.data, platform_audience: null })

        // Confirmed again after DELETE: a new platform audience, 201.
        const back = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(back.status, 201, back.text)
        assert.notStrictEqual(back.json.data.platform_audience_id, source)
      }))
  })

  describe("DELETE without a usable connection", () => {
    it.effect("a platform outage answers 502 and changes nothing; a disconnected connection: 200 off, the audience named as left, never synced again", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const connectionId = yield* connect(fixture)
        yield* enable(fixture)
        yield* population(fixture)
        const confirmed = yield* send(fixture.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(confirmed.status, 201, confirmed.text)
        const audienceId: string = confirmed.json.data.platform_audience_id

        // A passing platform fault is answered: the list stays on, so the same DELETE retries.
        const faults = (body: Record<string, unknown>) =>
          Effect.map(call("/sandbox/adplatform/_faults", {
            method: "POST",
            headers: { "content-type": "application/json", ...keyAuth(fixture.key) },
            body: JSON.stringify(body)
          }), (r) =>
            assert.strictEqual(r.status, 200, r.text))
        yield* faults({ fail_next: 100 })
        const outage = yield* send(fixture.key, "DELETE", LIST).pipe(Effect.ensuring(Effect.orDie(faults({ fail_next: 0 }))))
        assert.strictEqual(outage.status, 502, outage.text)
        assert.strictEqual(outage.json.error.code, "adplatform_unavailable")
        const still = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(still.json.data.status, "enabled")
        assert.strictEqual(still.json.data.platform_audience_id, audienceId)
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).deleted, false)

        const disconnected = yield* send(fixture.key, "POST", `/api/v1/connections/${connectionId}/disconnect`)
        assert.strictEqual(disconnected.status, 200, disconnected.text)
        const replaces = (yield* audienceOf(fixture.key, audienceId)).replaces
        const deleted = yield* send(fixture.key, "DELETE", LIST)
        assert.strictEqual(deleted.status, 200, deleted.text)
        assert.strictEqual(deleted.json.data.status, "off")
        assert.strictEqual(deleted.json.data.platform_audience_id, null)
        assert.deepStrictEqual(deleted.json.data.platform_audience, {
          deleted: false,
          reason: "connection_unusable",
          platform_audience_id: audienceId,
          lookalike_id: null
        })
        // Left on the platform: the merchant's to remove there.
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).deleted, false)
        const state = yield* send(fixture.key, "GET", LIST)
        assert.strictEqual(state.json.data.status, "off")
        assert.strictEqual(state.json.data.platform_audience_id, null)

        // Never synced again: neither the daily refresh (even when due) nor an exclusions change.
        const sql = yield* SqlClient
        yield* sql`UPDATE customer_list_audiences SET last_synced_at = now() - interval '25 hours' WHERE profile_id = ${fixture.profileId}`
        yield* (yield* CustomerListRefresh).runOnce
        const put = yield* send(fixture.key, "PUT", `/api/v1/profiles/${fixture.profileId}/audience-exclusions`, { customer_ids: [] })
        assert.strictEqual(put.status, 200, put.text)
        assert.strictEqual((yield* audienceOf(fixture.key, audienceId)).replaces, replaces)
        const [row] = yield* sql<{ status: string }>`SELECT status FROM customer_list_audiences WHERE profile_id = ${fixture.profileId}`
        assert.strictEqual(row?.status, "off")
        const twice = yield* send(fixture.key, "DELETE", LIST)
        assert.strictEqual(twice.status, 200, twice.text)
        assert.strictEqual(twice.json.data.platform_audience, null)
      }))
  })

  describe("privacy modes and scopes", () => {
    it.effect("hipaa: 409 invalid_state privacy_mode_hipaa, never an upload; standard: allowed without the switch", () =>
      Effect.gen(function*() {
        const hipaa = yield* newProfile("hipaa")
        const state = yield* send(hipaa.key, "GET", LIST)
        assert.strictEqual(state.status, 200, state.text)
        assert.strictEqual(state.json.data.status, "unavailable")
        for (const body of [{}, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) }]) {
          const refused = yield* send(hipaa.key, "POST", LIST, body)
          assert.strictEqual(refused.status, 409, refused.text)
          assert.strictEqual(refused.json.error.code, "invalid_state")
          assert.strictEqual(refused.json.error.reason, "privacy_mode_hipaa")
        }

        const standard = yield* newProfile("standard")
        yield* customerBy(standard, "order_paid", { email: "std@example.com" })
        const proposal = yield* send(standard.key, "POST", LIST, {})
        assert.strictEqual(proposal.status, 200, proposal.text)
        assert.strictEqual(proposal.json.data.member_count, 1)
        // Without a connection a confirm cannot upload.
        const noConnection = yield* send(standard.key, "POST", LIST, { confirm: true, consent: consentOf(CUSTOMER_LIST_CONSENT_V1) })
        assert.strictEqual(noConnection.status, 409, noConnection.text)
        assert.strictEqual(noConnection.json.error.code, "adplatform_connection_required")
        const empty = yield* send(standard.key, "DELETE", LIST)
        assert.strictEqual(empty.status, 200, empty.text)
        assert.strictEqual(empty.json.data.status, "off")
      }))

    it.effect("exports:read reads the list but cannot write it (403 insufficient_scope)", () =>
      Effect.gen(function*() {
        const fixture = yield* newProfile()
        const { key } = yield* seedApiKey(fixture, { scopes: ["exports:read"], rateLimitPerMinute: 1_000 })
        const read = yield* send(key, "GET", LIST)
        assert.strictEqual(read.status, 200, read.text)
        for (const [method, path, body] of [["POST", LIST, {}], ["DELETE", LIST, undefined], ["POST", `${LIST}/lookalike`, { country: "ES" }]] as const) {
          const refused = yield* send(key, method, path, body)
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
        }
      }))
  })
})
