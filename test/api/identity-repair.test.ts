/**
 * Identity repair and inferred identity links (decision 0039) through real HTTP, on the
 * PostgreSQL of DATABASE_URL or embedded PGlite. Customers, identifiers, touches and outcome
 * events are written by SQL (other domains' routes); the attribution worker is stepped by hand
 * so the credit queue holds still between assertions.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const get = (key: string, path: string) => call(path, { headers: { authorization: `Bearer ${key}` } })
const post = (key: string, path: string, body?: unknown) =>
  call(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })

interface World extends SeededProfile {
  /** customers:read, attribution:write, conversions:read */
  readonly personKey: string
  /** attribution:write only */
  readonly writeKey: string
  /** conversions:read only */
  readonly readKey: string
}

const seedWorld = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key: personKey } = yield* seedApiKey(profile, {
    scopes: ["customers:read", "attribution:write", "conversions:read"],
    rateLimitPerMinute: 10_000
  })
  const { key: writeKey } = yield* seedApiKey(profile, { scopes: ["attribution:write"], rateLimitPerMinute: 10_000 })
  const { key: readKey } = yield* seedApiKey(profile, { scopes: ["conversions:read"], rateLimitPerMinute: 10_000 })
  return { ...profile, personKey, writeKey, readKey } satisfies World
})

const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 0, minute)).toISOString()

const customer = (profileId: string, minute: number, options: { readonly mergedInto?: string; readonly erased?: boolean; readonly key?: string } = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO customers (id, profile_id, customer_key, created_at, merged_into_id, erased_at)
      VALUES (${id}, ${profileId}, ${options.key ?? null}, ${at(minute)}::timestamptz, ${options.mergedInto ?? null},
              ${options.erased === true ? at(minute + 1) : null}::timestamptz)`
    return id
  })

const identifier = (
  profileId: string,
  customerId: string,
  kind: string,
  value: string,
  minute: number,
  options: { readonly primary?: boolean; readonly removed?: boolean } = {}
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value, is_primary, created_at, removed_at)
      VALUES (${id}, ${profileId}, ${customerId}, ${kind}, ${value}, ${options.primary === true}, ${at(minute)}::timestamptz,
              ${options.removed === true ? at(minute + 1) : null}::timestamptz)`
    return id
  })

const touch = (
  profileId: string,
  options: { readonly anonymousId: string; readonly customerId?: string; readonly clickIdKind?: string; readonly clickId?: string; readonly minute?: number }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, anonymous_id, customer_id, click_id_kind, click_id)
      VALUES (${id}, ${profileId}, 'web_touch', ${at(options.minute ?? 0)}::timestamptz, 'paid_search', ${options.anonymousId},
              ${options.customerId ?? null}, ${options.clickIdKind ?? null}, ${options.clickId ?? null})`
    return id
  })

/** An outcome event of the customer carrying `clickIds`, and its conversion (already credited). */
const outcome = (profileId: string, customerId: string, clickIds: Record<string, string>, options: { readonly retracted?: boolean } = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const eventId = crypto.randomUUID()
    const conversionId = crypto.randomUUID()
    yield* sql`
      WITH e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id, click_ids, retracted_at)
        VALUES (${eventId}, ${profileId}, ${crypto.randomUUID()}, 'test', 'purchase', ${at(500)}::timestamptz, ${customerId},
                ${JSON.stringify(clickIds)}::jsonb, ${options.retracted === true ? at(501) : null}::timestamptz)
        RETURNING profile_id, idempotency_key, id, occurred_at)
      INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
    yield* sql`
      INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, customer_id, counts_as_cash,
                               attribution_eligible)
      VALUES (${conversionId}, ${profileId}, ${eventId}, 'purchase', ${at(500)}::timestamptz, ${customerId}, false, true)`
    // Credited already: out of the credit queue.
    yield* sql`DELETE FROM credit_queue WHERE conversion_id = ${conversionId}`
    return conversionId
  })

/** Every identifier of the profile with its primary flag, by id. */
const primaryFlags = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ id: string; is_primary: boolean }>`
      SELECT id::text AS id, is_primary FROM customer_identifiers WHERE profile_id = ${profileId} ORDER BY id`
    return Object.fromEntries(rows.map((row) => [row.id, row.is_primary]))
  })

const auditActions = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ action: string }>`SELECT action FROM audit_events WHERE profile_id = ${profileId} ORDER BY occurred_at, id`
    return rows.map((row) => row.action)
  })

interface Dataset {
  readonly c1: string
  readonly c2: string
  readonly c3: string
  readonly c4: string
  readonly c5: string
  readonly c6: string
  readonly c7: string
  readonly c11: string
  readonly c12: string
  /** Identifier ids a backfill writes, by customer and type. */
  readonly backfills: {
    readonly c1Email: string
    readonly c5Email: string
    readonly c11Email: string
    readonly c2Phone: string
    readonly c11Phone: string
  }
  /** Identifiers of duplicate groups. */
  readonly duplicated: ReadonlyArray<string>
}

/**
 * Live customers c1..c7, c11, c12 plus a merged, an erased and a removed-identifier customer and
 * another profile's customer (none of which count):
 * - missing primary email: c1 (two emails: the older is backfilled), c5 (its older email is
 *   duplicated, so the newer one is), c11;
 * - missing primary phone: c2, c11, c12 (its only phone is duplicated: merge review, no backfill);
 * - duplicate email dup@example.com: c3, c4, c5; duplicate phone +34611111111: c6, c7, c12.
 */
const seedDataset = (world: World) =>
  Effect.gen(function*() {
    const p = world.profileId
    const c1 = yield* customer(p, 1)
    const c2 = yield* customer(p, 2)
    const c3 = yield* customer(p, 3)
    const c4 = yield* customer(p, 4)
    const c5 = yield* customer(p, 5)
    const c6 = yield* customer(p, 6)
    const c7 = yield* customer(p, 7)
    const merged = yield* customer(p, 8, { mergedInto: c1 })
    const erased = yield* customer(p, 9, { erased: true })
    const removedOnly = yield* customer(p, 10)
    const c11 = yield* customer(p, 11)
    const c12 = yield* customer(p, 12)

    const c1Email = yield* identifier(p, c1, "email", "ana@example.com", 20)
    yield* identifier(p, c1, "email", "ana.2@example.com", 21)
    yield* identifier(p, c1, "phone", "+34600000009", 22, { primary: true })
    const c2Phone = yield* identifier(p, c2, "phone", "+34600000001", 23)
    yield* identifier(p, c2, "phone", "+34600000002", 24)
    const d3 = yield* identifier(p, c3, "email", "dup@example.com", 25, { primary: true })
    const d4 = yield* identifier(p, c4, "email", "dup@example.com", 26, { primary: true })
    const d5 = yield* identifier(p, c5, "email", "dup@example.com", 27)
    const c5Email = yield* identifier(p, c5, "email", "own5@example.com", 28)
    const d6 = yield* identifier(p, c6, "phone", "+34611111111", 29, { primary: true })
    const d7 = yield* identifier(p, c7, "phone", "+34611111111", 30, { primary: true })
    const d12 = yield* identifier(p, c12, "phone", "+34611111111", 31)
    const c11Email = yield* identifier(p, c11, "email", "e11@example.com", 32)
    const c11Phone = yield* identifier(p, c11, "phone", "+34622222222", 33)
    // Not counted: a merged customer (even sharing c1's email), an erased one, a removed identifier,
    // identifiers of other kinds, another profile.
    yield* identifier(p, merged, "email", "ana@example.com", 34)
    yield* identifier(p, erased, "email", "gone@example.com", 35)
    yield* identifier(p, removedOnly, "email", "removed@example.com", 36, { removed: true })
    yield* identifier(p, c3, "crm_contact_id", "crm-1", 37)
    yield* identifier(p, c4, "crm_contact_id", "crm-1", 38)
    const other = yield* seedProfile()
    const foreign = yield* customer(other.profileId, 1)
    yield* identifier(other.profileId, foreign, "email", "dup@example.com", 39)
    return {
      c1,
      c2,
      c3,
      c4,
      c5,
      c6,
      c7,
      c11,
      c12,
      backfills: { c1Email, c5Email, c11Email, c2Phone, c11Phone },
      duplicated: [d3, d4, d5, d6, d7, d12]
    } satisfies Dataset
  })

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings()).pipe(Layer.provide(manual)), { timeout: "180 seconds", excludeTestServices: true })("identity repair and links", (it) => {
  it.effect("the five routes are in the OpenAPI document with their scopes", () =>
    Effect.gen(function*() {
      const spec = (yield* call("/api/v1/openapi.json")).json
      const scopes = (method: string, path: string) => spec.paths[path]?.[method]?.["x-scopes"]
      assert.deepStrictEqual(scopes("get", "/api/v1/identity/repair-scan"), ["customers:read"])
      assert.strictEqual(spec.paths["/api/v1/identity/repair-scan"].get["x-person-data"], true)
      assert.deepStrictEqual(scopes("post", "/api/v1/identity/repair"), ["attribution:write"])
      assert.deepStrictEqual(scopes("post", "/api/v1/identity/links/scan"), ["attribution:write"])
      assert.deepStrictEqual(scopes("get", "/api/v1/identity/links"), ["customers:read"])
      assert.deepStrictEqual(scopes("post", "/api/v1/identity/links/{id}/decide"), ["attribution:write", "customers:read"])
    }))

  describe("GET /api/v1/identity/repair-scan", () => {
    it.effect("counts every finding of a crafted dataset; rows in a fixed order say what a backfill would write", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        const d = yield* seedDataset(world)
        const response = yield* get(world.personKey, "/api/v1/identity/repair-scan")
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(response.json.summary, {
          missing_primary_email_count: 3,
          missing_primary_phone_count: 3,
          duplicate_email_group_count: 1,
          duplicate_phone_group_count: 1,
          auto_repairable_count: 5,
          auto_merge_count: 2
        })
        assert.deepStrictEqual(response.json.pagination, {
          has_next: false,
          cursor: null,
          offset: 0,
          limit: 50,
          next_offset: null,
          total_count: 8
        })
        const backfill = (customerId: string, identifierId: string, type: string) => ({
          customer_profile_id: customerId,
          identifier_id: identifierId,
          identifier_type: type,
          is_primary: true
        })
        const repairable = (type: string, identifierType: string, value: string, customerId: string, identifierId: string) => ({
          type,
          identifier_type: identifierType,
          value,
          customer_profile_ids: [customerId],
          resolution: "backfill_primary",
          auto_repairable: true,
          backfill: backfill(customerId, identifierId, identifierType)
        })
        assert.deepStrictEqual(response.json.data, [
          repairable("missing_primary_email", "email", "ana@example.com", d.c1, d.backfills.c1Email),
          repairable("missing_primary_email", "email", "own5@example.com", d.c5, d.backfills.c5Email),
          repairable("missing_primary_email", "email", "e11@example.com", d.c11, d.backfills.c11Email),
          repairable("missing_primary_phone", "phone", "+34600000001", d.c2, d.backfills.c2Phone),
          repairable("missing_primary_phone", "phone", "+34622222222", d.c11, d.backfills.c11Phone),
          {
            type: "missing_primary_phone",
            identifier_type: "phone",
            value: "+34611111111",
            customer_profile_ids: [d.c12],
            resolution: "merge_review",
            auto_repairable: false,
            backfill: null
          },
          {
            type: "duplicate_email",
            identifier_type: "email",
            value: "dup@example.com",
            customer_profile_ids: [d.c3, d.c4, d.c5],
            resolution: "merge_review",
            auto_repairable: false,
            backfill: null
          },
          {
            type: "duplicate_phone",
            identifier_type: "phone",
            value: "+34611111111",
            customer_profile_ids: [d.c6, d.c7, d.c12],
            resolution: "merge_review",
            auto_repairable: false,
            backfill: null
          }
        ])
        // A person read: logged.
        const logged = yield* sql<{ route: string; result: string }>`
          SELECT route, result FROM pii_access_log WHERE profile_id = ${world.profileId}`
        assert.deepStrictEqual(logged.map((row) => ({ ...row })), [{ route: "GET /api/v1/identity/repair-scan", result: "allowed" }])
      }))

    it.effect("pages by offset and limit with the same summary on every page; an empty profile answers zeros", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld
        yield* seedDataset(world)
        const full = yield* get(world.personKey, "/api/v1/identity/repair-scan")
        const pages = []
        for (const offset of [0, 3, 6, 8, 20]) {
          const page = yield* get(world.personKey, `/api/v1/identity/repair-scan?offset=${offset}&limit=3`)
          assert.strictEqual(page.status, 200, page.text)
          assert.deepStrictEqual(page.json.summary, full.json.summary)
          pages.push(page.json)
        }
        assert.deepStrictEqual(pages.map((page) => page.data.length), [3, 3, 2, 0, 0])
        assert.deepStrictEqual(pages.map((page) => [page.pagination.has_next, page.pagination.next_offset]), [
          [true, 3],
          [true, 6],
          [false, null],
          [false, null],
          [false, null]
        ])
        assert.deepStrictEqual(pages.slice(0, 3).flatMap((page) => page.data), full.json.data)

        const empty = yield* seedWorld
        const none = yield* get(empty.personKey, "/api/v1/identity/repair-scan")
        assert.deepStrictEqual(none.json.data, [])
        assert.deepStrictEqual(Object.values(none.json.summary), [0, 0, 0, 0, 0, 0])
      }))

    it.effect("bad offset or limit: 400 invalid_parameter naming it; customers:read needed; refused on healthcare-family profiles", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        yield* seedDataset(world)
        for (const [query, name] of [
          ["limit=0", "limit"],
          ["limit=101", "limit"],
          ["limit=x", "limit"],
          ["offset=-1", "offset"],
          ["offset=1.5", "offset"],
          ["offset=", "offset"]
        ]) {
          const response = yield* get(world.personKey, `/api/v1/identity/repair-scan?${query}`)
          assert.strictEqual(response.status, 400, query)
          assert.strictEqual(response.json.error.code, "invalid_parameter", query)
          assert.include(response.json.error.message, name, query)
        }
        for (const key of [world.writeKey, world.readKey]) {
          const refused = yield* get(key, "/api/v1/identity/repair-scan")
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
        }
        yield* sql`UPDATE workspaces SET is_healthcare_agency = true WHERE id = ${world.workspaceId}`
        const healthcare = yield* get(world.personKey, "/api/v1/identity/repair-scan")
        assert.strictEqual(healthcare.status, 403)
        assert.strictEqual(healthcare.json.error.code, "insufficient_scope")
        assert.notInclude(healthcare.text, "example.com")
      }))
  })

  describe("POST /api/v1/identity/repair", () => {
    it.effect("preview writes nothing; apply writes exactly the backfills in one audited call; a repeat writes nothing; duplicates untouched", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        const d = yield* seedDataset(world)
        const before = yield* primaryFlags(world.profileId)
        const expected = [
          [d.c1, d.backfills.c1Email, "email"],
          [d.c2, d.backfills.c2Phone, "phone"],
          [d.c5, d.backfills.c5Email, "email"],
          [d.c11, d.backfills.c11Email, "email"],
          [d.c11, d.backfills.c11Phone, "phone"]
        ].map(([customer, id, type]) => ({ customer_profile_id: customer, identifier_id: id, identifier_type: type, is_primary: true }))

        const preview = yield* post(world.writeKey, "/api/v1/identity/repair", { mode: "preview" })
        assert.strictEqual(preview.status, 200, preview.text)
        assert.deepStrictEqual(preview.json.data, {
          mode: "preview",
          identifier_types: ["email", "phone"],
          backfill_count: 5,
          email_backfill_count: 3,
          phone_backfill_count: 2,
          backfills: expected,
          has_more_backfills: false,
          duplicate_group_count: 2,
          changed: false
        })
        assert.notInclude(preview.text, "example.com")
        assert.deepStrictEqual(yield* primaryFlags(world.profileId), before)
        assert.deepStrictEqual(yield* auditActions(world.profileId), [])

        const phones = yield* post(world.writeKey, "/api/v1/identity/repair", { mode: "preview", identifier_types: ["phone"] })
        assert.deepStrictEqual(
          [phones.json.data.backfill_count, phones.json.data.email_backfill_count, phones.json.data.duplicate_group_count],
          [2, 0, 1]
        )

        const apply = yield* post(world.writeKey, "/api/v1/identity/repair", { mode: "apply" })
        assert.strictEqual(apply.status, 200, apply.text)
        assert.deepStrictEqual(apply.json.data, { ...preview.json.data, mode: "apply", changed: true })
        const after = yield* primaryFlags(world.profileId)
        const flipped = Object.keys(after).filter((id) => after[id] !== before[id]).sort()
        assert.deepStrictEqual(flipped, Object.values(d.backfills).sort())
        for (const id of flipped) assert.isTrue(after[id])
        for (const id of d.duplicated) assert.strictEqual(after[id], before[id])
        assert.deepStrictEqual(yield* auditActions(world.profileId), ["identity.repair.applied"])
        // Never a merge.
        const [merges] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM customers WHERE profile_id = ${world.profileId} AND merged_into_id IS NOT NULL`
        assert.strictEqual(merges!.n, 1)

        const again = yield* post(world.writeKey, "/api/v1/identity/repair", { mode: "apply" })
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json.data, {
          mode: "apply",
          identifier_types: ["email", "phone"],
          backfill_count: 0,
          email_backfill_count: 0,
          phone_backfill_count: 0,
          backfills: [],
          has_more_backfills: false,
          duplicate_group_count: 2,
          changed: false
        })
        assert.deepStrictEqual(yield* primaryFlags(world.profileId), after)
        assert.deepStrictEqual(yield* auditActions(world.profileId), ["identity.repair.applied"])

        const scan = yield* get(world.personKey, "/api/v1/identity/repair-scan")
        assert.deepStrictEqual(scan.json.summary, {
          missing_primary_email_count: 0,
          missing_primary_phone_count: 1,
          duplicate_email_group_count: 1,
          duplicate_phone_group_count: 1,
          auto_repairable_count: 0,
          auto_merge_count: 2
        })
      }))

    it.effect("bad bodies: 400 validation_error and nothing written; needs attribution:write", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld
        yield* seedDataset(world)
        const before = yield* primaryFlags(world.profileId)
        for (const body of [{}, { mode: "merge" }, { mode: "apply", identifier_types: ["national_id"] }, { mode: "apply", identifier_types: [] }, "not json"]) {
          const response = yield* post(world.writeKey, "/api/v1/identity/repair", body)
          assert.strictEqual(response.status, 400, JSON.stringify(body))
          assert.strictEqual(response.json.error.code, "validation_error", JSON.stringify(body))
        }
        const refused = yield* post(world.readKey, "/api/v1/identity/repair", { mode: "apply" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.deepStrictEqual(yield* primaryFlags(world.profileId), before)
        assert.deepStrictEqual(yield* auditActions(world.profileId), [])
      }))
  })

  describe("inferred identity links", () => {
    it.effect("a shared click id proposes a link; accept binds the visitor's touches (click_id), requeues credit; deciding again is unchanged, the other decision 409", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        const p = world.profileId
        const a = yield* customer(p, 1, { key: "cust-a" })
        const b = yield* customer(p, 2, { key: "cust-b" })
        const c = yield* customer(p, 3, { key: "cust-c" })
        const conversions = [yield* outcome(p, a, { gclid: "G-123", fbclid: "F-1" }), yield* outcome(p, a, {})]
        const otherConversion = yield* outcome(p, b, {})
        yield* outcome(p, b, { gclid: "G-555" }, { retracted: true })
        const t1 = yield* touch(p, { anonymousId: "anon-v1", clickIdKind: "gclid", clickId: "G-123", minute: 10 })
        const t2 = yield* touch(p, { anonymousId: "anon-v1", minute: 11 })
        // No link: an unmatched click id, the same value under another kind, a bound touch, a retracted event's click id.
        yield* touch(p, { anonymousId: "anon-v2", clickIdKind: "gclid", clickId: "G-999" })
        yield* touch(p, { anonymousId: "anon-v3", clickIdKind: "msclkid", clickId: "G-123" })
        yield* touch(p, { anonymousId: "anon-a", customerId: a, clickIdKind: "gclid", clickId: "G-123" })
        yield* touch(p, { anonymousId: "anon-v4", clickIdKind: "gclid", clickId: "G-555" })
        // The same visitor is also held by customer c as an anonymous id: a second proposal.
        yield* identifier(p, c, "anonymous_id", "anon-v1", 5)

        const scan = yield* post(world.writeKey, "/api/v1/identity/links/scan")
        assert.strictEqual(scan.status, 200, scan.text)
        assert.deepStrictEqual(scan.json.data, {
          created_count: 2,
          updated_count: 0,
          withdrawn_count: 0,
          status_counts: { proposed: 2, accepted: 0, rejected: 0 }
        })
        const list = yield* get(world.personKey, "/api/v1/identity/links")
        assert.strictEqual(list.status, 200, list.text)
        assert.notInclude(list.text, "G-123")
        const byCustomer = new Map<string, any>(list.json.data.map((link: any) => [link.customer_profile_id, link]))
        assert.deepStrictEqual([...byCustomer.keys()].sort(), [a, c].sort())
        const link = byCustomer.get(a)
        assert.deepInclude(link, {
          status: "proposed",
          anonymous_id: "anon-v1",
          customer_profile_id: a,
          customer_key: "cust-a",
          join_method: "click_id",
          evidence: [{ kind: "click_id", click_id_kind: "gclid", touch_count: 1 }],
          unbound_touch_count: 2,
          bound_touch_count: null,
          decided_at: null
        })
        assert.deepInclude(byCustomer.get(c), {
          join_method: "anonymous_id",
          evidence: [{ kind: "anonymous_id_identifier", click_id_kind: null, touch_count: 2 }]
        })
        // Rescanning with nothing new changes nothing.
        const rescan = yield* post(world.writeKey, "/api/v1/identity/links/scan")
        assert.deepInclude(rescan.json.data, { created_count: 0, updated_count: 0, withdrawn_count: 0 })

        const accepted = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "accept" })
        assert.strictEqual(accepted.status, 200, accepted.text)
        assert.deepInclude(accepted.json.data, { id: link.id, status: "accepted", bound_touch_count: 2 })
        assert.isString(accepted.json.data.decided_at)
        assert.deepStrictEqual(accepted.json.meta, { changed: true, recredit_queued_count: 2 })
        const touches = yield* sql<{ id: string; customer_id: string; join_method: string }>`
          SELECT id::text AS id, customer_id::text AS customer_id, join_method FROM touches
          WHERE profile_id = ${p} AND anonymous_id = 'anon-v1' ORDER BY occurred_at`
        assert.deepStrictEqual(touches.map((row) => ({ ...row })), [
          { id: t1, customer_id: a, join_method: "click_id" },
          { id: t2, customer_id: a, join_method: "click_id" }
        ])
        const pending = yield* sql<{ id: string; pending: boolean }>`
          SELECT c.id::text AS id, EXISTS (SELECT 1 FROM credit_queue q WHERE q.profile_id = c.profile_id AND q.conversion_id = c.id) AS pending
          FROM conversions c WHERE c.profile_id = ${p}`
        const pendingById = Object.fromEntries(pending.map((row) => [row.id, row.pending]))
        for (const id of conversions) assert.isTrue(pendingById[id], id)
        assert.isFalse(pendingById[otherConversion])
        const held = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM customer_identifiers WHERE customer_id = ${a} AND kind = 'anonymous_id' AND value = 'anon-v1'`
        assert.strictEqual(held[0]!.n, 1)
        // The visitor's other proposal is withdrawn; nothing is left to propose for it.
        const after = yield* get(world.personKey, "/api/v1/identity/links")
        assert.deepStrictEqual(after.json.data.map((row: any) => row.id), [link.id])
        assert.deepStrictEqual(after.json.status_counts, { proposed: 0, accepted: 1, rejected: 0 })
        const third = yield* post(world.writeKey, "/api/v1/identity/links/scan")
        assert.deepInclude(third.json.data, { created_count: 0, withdrawn_count: 0 })

        const repeat = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "accept" })
        assert.strictEqual(repeat.status, 200)
        assert.deepStrictEqual(repeat.json.data, accepted.json.data)
        assert.deepStrictEqual(repeat.json.meta, { changed: false, recredit_queued_count: 0 })
        const conflict = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "reject" })
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(conflict.json.error.code, "invalid_state")
        assert.deepStrictEqual(yield* auditActions(p), ["identity.link.accepted"])
      }))

    it.effect("a held anonymous id proposes a link (anonymous_id); reject is sticky across rescans; accept after reject is 409", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        const p = world.profileId
        const d = yield* customer(p, 1, { key: "cust-d" })
        yield* identifier(p, d, "anonymous_id", "anon-w", 2)
        yield* touch(p, { anonymousId: "anon-w", minute: 3 })
        yield* touch(p, { anonymousId: "anon-w", minute: 4 })
        yield* post(world.writeKey, "/api/v1/identity/links/scan")
        const list = yield* get(world.personKey, "/api/v1/identity/links?status=proposed")
        assert.strictEqual(list.json.data.length, 1)
        const link = list.json.data[0]
        assert.deepInclude(link, { customer_profile_id: d, join_method: "anonymous_id", unbound_touch_count: 2 })

        const rejected = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "reject" })
        assert.strictEqual(rejected.status, 200, rejected.text)
        assert.deepInclude(rejected.json.data, { status: "rejected", bound_touch_count: null })
        assert.deepStrictEqual(rejected.json.meta, { changed: true, recredit_queued_count: 0 })

        // New evidence for the same pair: never proposed again, the rejected link stays as it was.
        yield* touch(p, { anonymousId: "anon-w", minute: 5 })
        const rescan = yield* post(world.writeKey, "/api/v1/identity/links/scan")
        assert.deepStrictEqual(rescan.json.data, {
          created_count: 0,
          updated_count: 0,
          withdrawn_count: 0,
          status_counts: { proposed: 0, accepted: 0, rejected: 1 }
        })
        const rejectedList = yield* get(world.personKey, "/api/v1/identity/links?status=rejected")
        assert.deepStrictEqual(rejectedList.json.data, [rejected.json.data])
        assert.deepStrictEqual((yield* get(world.personKey, "/api/v1/identity/links?status=proposed")).json.data, [])

        const again = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "reject" })
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json.data, rejected.json.data)
        assert.isFalse(again.json.meta.changed)
        const conflict = yield* post(world.personKey, `/api/v1/identity/links/${link.id}/decide`, { decision: "accept" })
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(conflict.json.error.code, "invalid_state")
        const [bound] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM touches WHERE profile_id = ${p} AND anonymous_id = 'anon-w' AND customer_id IS NOT NULL`
        assert.strictEqual(bound!.n, 0)
        assert.deepStrictEqual(yield* auditActions(p), ["identity.link.rejected"])
      }))

    it.effect("keyset pages newest first with status_counts of the whole queue; a cursor it did not answer is 400; stale proposals are withdrawn", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* seedWorld
        const p = world.profileId
        for (const n of [1, 2, 3]) {
          const id = yield* customer(p, n)
          yield* identifier(p, id, "anonymous_id", `anon-${n}`, 10 + n)
          yield* touch(p, { anonymousId: `anon-${n}` })
        }
        yield* post(world.writeKey, "/api/v1/identity/links/scan")
        const first = yield* get(world.personKey, "/api/v1/identity/links?limit=2")
        assert.strictEqual(first.json.data.length, 2)
        assert.isTrue(first.json.pagination.has_next)
        assert.deepStrictEqual(first.json.status_counts, { proposed: 3, accepted: 0, rejected: 0 })
        const second = yield* get(world.personKey, `/api/v1/identity/links?limit=2&cursor=${first.json.pagination.cursor}`)
        assert.strictEqual(second.json.data.length, 1)
        assert.deepStrictEqual(second.json.pagination, { has_next: false, cursor: null })
        const ids = [...first.json.data, ...second.json.data].map((link: any) => link.id)
        assert.strictEqual(new Set(ids).size, 3)
        const refused = yield* get(world.personKey, "/api/v1/identity/links?limit=2&cursor=not-a-cursor")
        assert.strictEqual(refused.status, 400, refused.text)
        assert.strictEqual(refused.json.error.reason, "invalid_parameter:cursor")

        // The tracker bound anon-3's touches meanwhile: its proposal is withdrawn at the next scan.
        yield* sql`UPDATE touches SET customer_id = (SELECT id FROM customers WHERE profile_id = ${p} ORDER BY created_at LIMIT 1)
                   WHERE profile_id = ${p} AND anonymous_id = 'anon-3'`
        const rescan = yield* post(world.writeKey, "/api/v1/identity/links/scan")
        assert.deepInclude(rescan.json.data, { created_count: 0, withdrawn_count: 1, status_counts: { proposed: 2, accepted: 0, rejected: 0 } })
      }))

    it.effect("another profile's link answers exactly what an unknown one does; bad input is 400; scopes; nothing written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const mine = yield* seedWorld
        const theirs = yield* seedWorld
        const customerId = yield* customer(theirs.profileId, 1)
        yield* identifier(theirs.profileId, customerId, "anonymous_id", "anon-t", 2)
        yield* touch(theirs.profileId, { anonymousId: "anon-t" })
        yield* post(theirs.writeKey, "/api/v1/identity/links/scan")
        const theirLink = (yield* get(theirs.personKey, "/api/v1/identity/links")).json.data[0]
        assert.isString(theirLink.id)

        const foreign = yield* post(mine.personKey, `/api/v1/identity/links/${theirLink.id}/decide`, { decision: "accept" })
        const unknown = yield* post(mine.personKey, `/api/v1/identity/links/${crypto.randomUUID()}/decide`, { decision: "accept" })
        const malformed = yield* post(mine.personKey, "/api/v1/identity/links/not-a-uuid/decide", { decision: "accept" })
        assert.strictEqual(foreign.status, 404, foreign.text)
        assert.strictEqual(foreign.json.error.code, "not_found")
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(unknown.text))
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(malformed.text))
        assert.deepStrictEqual((yield* get(mine.personKey, "/api/v1/identity/links")).json.data, [])

        for (const body of [{}, { decision: "merge" }, "nope"]) {
          const response = yield* post(theirs.personKey, `/api/v1/identity/links/${theirLink.id}/decide`, body)
          assert.strictEqual(response.status, 400, JSON.stringify(body))
          assert.strictEqual(response.json.error.code, "validation_error")
        }
        for (const [query, name] of [["status=open", "status"], ["limit=0", "limit"], ["limit=1000", "limit"]]) {
          const response = yield* get(theirs.personKey, `/api/v1/identity/links?${query}`)
          assert.strictEqual(response.status, 400, query)
          assert.strictEqual(response.json.error.code, "invalid_parameter")
          assert.include(response.json.error.message, name)
        }
        // Deciding needs attribution:write and customers:read; the list customers:read; the scan attribution:write.
        const byWriter = yield* post(theirs.writeKey, `/api/v1/identity/links/${theirLink.id}/decide`, { decision: "accept" })
        assert.strictEqual(byWriter.status, 403)
        assert.strictEqual((yield* get(theirs.writeKey, "/api/v1/identity/links")).status, 403)
        assert.strictEqual((yield* post(theirs.readKey, "/api/v1/identity/links/scan")).status, 403)

        const [state] = yield* sql<{ status: string; bound: number }>`
          SELECT l.status, (SELECT count(*)::int FROM touches t WHERE t.profile_id = l.profile_id AND t.customer_id IS NOT NULL) AS bound
          FROM identity_links l WHERE l.id = ${theirLink.id}`
        assert.deepStrictEqual({ ...state }, { status: "proposed", bound: 0 })
        assert.deepStrictEqual(yield* auditActions(mine.profileId), [])
        assert.deepStrictEqual(yield* auditActions(theirs.profileId), [])
      }))
  })
})
