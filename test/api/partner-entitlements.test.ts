import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const ref = () => `merchant-${crypto.randomUUID().slice(0, 8)}`
const put = (app: PartnerApp, profileId: string, body: unknown, feature = "svc_attribution") =>
  asApp(app, `/api/v1/profiles/${profileId}/entitlements/${feature}`, "PUT", body)

const state = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ enabled: boolean; scopes: Array<string>; grant_revoked: boolean; backfills: number; audits: number }>`
      SELECT (SELECT enabled FROM entitlements WHERE profile_id = ${profileId} AND feature = 'svc_attribution') AS enabled,
             g.connect_scopes AS scopes, g.revoked_at IS NOT NULL AS grant_revoked,
             (SELECT count(*)::int FROM sync_jobs WHERE profile_id = ${profileId} AND kind = 'backfill') AS backfills,
             (SELECT count(*)::int FROM audit_events WHERE profile_id = ${profileId} AND action LIKE 'entitlement.%') AS audits
      FROM grants g WHERE g.profile_id = ${profileId}`
    return row
  })

const provisioned = (app: PartnerApp) =>
  Effect.gen(function*() {
    const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
    const sql = yield* SqlClient
    yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind) VALUES
               (${crypto.randomUUID()}, ${created.profile_id}, 'adplatform', 'adplatform'),
               (${crypto.randomUUID()}, ${created.profile_id}, 'adplatform', 'adplatform'),
               (${crypto.randomUUID()}, ${created.profile_id}, 'crm', 'crm')`
    return created as { profile_id: string; workspace_id: string }
  })

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("PUT /api/v1/profiles/{id}/entitlements/svc_attribution", (it) => {
  describe("out-of-order deliveries (as_of)", () => {
    it.effect("a delivery older than the last applied one is discarded: ignored_stale, nothing written", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const profile = yield* provisioned(app)
        const on = yield* put(app, profile.profile_id, { enabled: true, as_of: "2026-11-20T10:00:00Z" })
        assert.strictEqual(on.json.data.changed, true)
        const stale = yield* put(app, profile.profile_id, { enabled: false, privacy_mode: "hipaa", as_of: "2026-11-20T09:59:59Z" })
        assert.strictEqual(stale.status, 200)
        assert.deepStrictEqual(stale.json, {
          data: { profile_id: profile.profile_id, feature: "svc_attribution", enabled: true, changed: false, ignored_stale: true },
          meta: { profile_id: profile.profile_id }
        })
        assert.deepStrictEqual(yield* state(profile.profile_id), {
          enabled: true,
          scopes: ["connections", "attribution"],
          grant_revoked: false,
          backfills: 2,
          audits: 1
        })
        const sql = yield* SqlClient
        const [mode] = yield* sql<{ privacy_mode: string }>`SELECT privacy_mode FROM profiles WHERE id = ${profile.profile_id}`
        assert.strictEqual(mode?.privacy_mode, "standard", "no mode written")
        // A newer one (also in another offset) applies; an equal time is not stale.
        const newer = yield* put(app, profile.profile_id, { enabled: false, as_of: "2026-11-20T12:00:00+01:00" })
        assert.strictEqual(newer.json.data.changed, true)
        assert.notProperty(newer.json.data, "ignored_stale")
        const same = yield* put(app, profile.profile_id, { enabled: false, as_of: "2026-11-20T11:00:00Z" })
        assert.deepStrictEqual(same.json.data, { profile_id: profile.profile_id, feature: "svc_attribution", enabled: false, changed: false })
        const bad = yield* put(app, profile.profile_id, { enabled: true, as_of: "yesterday" })
        assert.strictEqual(bad.status, 400)
        assert.include(bad.json.error.message, "as_of")
      }))
  })

  describe("the attribution entitlement table", () => {
    it.effect("off -> on: grant {connections, attribution}, one backfill per ad-platform connection, audit, changed true", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const profile = yield* provisioned(app)
        assert.deepStrictEqual(yield* state(profile.profile_id), { enabled: false, scopes: ["connections"], grant_revoked: false, backfills: 0, audits: 0 })
        const on = yield* put(app, profile.profile_id, { enabled: true })
        assert.strictEqual(on.status, 200)
        assert.deepStrictEqual(on.json, {
          data: { profile_id: profile.profile_id, feature: "svc_attribution", enabled: true, changed: true },
          meta: { profile_id: profile.profile_id }
        })
        assert.deepStrictEqual(yield* state(profile.profile_id), {
          enabled: true,
          scopes: ["connections", "attribution"],
          grant_revoked: false,
          backfills: 2,
          audits: 1
        })
        const again = yield* put(app, profile.profile_id, { enabled: true })
        assert.strictEqual(again.json.data.changed, false)
        assert.deepStrictEqual(yield* state(profile.profile_id), {
          enabled: true,
          scopes: ["connections", "attribution"],
          grant_revoked: false,
          backfills: 2,
          audits: 1
        }, "the value already held: no audit, no backfill")
      }))

    it.effect("on -> off: grant narrowed to {connections} (not revoked), keys of the wider grant revoked, nothing deleted", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const profile = yield* provisioned(app)
        yield* put(app, profile.profile_id, { enabled: true })
        const sql = yield* SqlClient
        const wide = yield* seedApiKey({ profileId: profile.profile_id, workspaceId: profile.workspace_id }, { scopes: ["connections:read", "analytics:read"] })
        const narrow = yield* seedApiKey({ profileId: profile.profile_id, workspaceId: profile.workspace_id }, { scopes: ["connections:read"] })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id},
                   grant_id = (SELECT id FROM grants WHERE profile_id = ${profile.profile_id} AND app_id = ${app.id})
                   WHERE id IN (${wide.id}, ${narrow.id})`
        const off = yield* put(app, profile.profile_id, { enabled: false })
        assert.deepStrictEqual(off.json.data, { profile_id: profile.profile_id, feature: "svc_attribution", enabled: false, changed: true })
        const after = yield* state(profile.profile_id)
        assert.deepStrictEqual(after, { enabled: false, scopes: ["connections"], grant_revoked: false, backfills: 2, audits: 2 })
        assert.strictEqual((yield* call("/api/v1/connections", { headers: { authorization: `Bearer ${wide.key}` } })).status, 401)
        assert.strictEqual((yield* call("/api/v1/connections", { headers: { authorization: `Bearer ${narrow.key}` } })).status, 200)
        const [connections] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM connections WHERE profile_id = ${profile.profile_id}`
        assert.strictEqual(connections?.n, 3)
      }))

    it.effect("two concurrent PUTs through the Profile entity: one change, one audit event, one backfill round", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const profile = yield* provisioned(app)
        const answers = yield* Effect.all([
          put(app, profile.profile_id, { enabled: true }),
          put(app, profile.profile_id, { enabled: true }),
          put(app, profile.profile_id, { enabled: true })
        ], { concurrency: "unbounded" })
        assert.deepStrictEqual(answers.map((a) => a.status), [200, 200, 200])
        assert.deepStrictEqual(answers.map((a) => a.json.data.changed).sort(), [false, false, true])
        const after = yield* state(profile.profile_id)
        assert.strictEqual(after?.audits, 1)
        assert.strictEqual(after?.backfills, 2)
      }))
  })

  describe("privacy mode on the entitlement call", () => {
    it.effect("standard -> hipaa: stored, person-scope keys revoked (grant.revoked_keys); another mode then: 409", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const profile = yield* provisioned(app)
        const person = yield* seedApiKey({ profileId: profile.profile_id, workspaceId: profile.workspace_id }, { scopes: ["customers:read"] })
        const sql = yield* SqlClient
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${person.id}`
        const changed = yield* put(app, profile.profile_id, { enabled: true, privacy_mode: "hipaa" })
        assert.strictEqual(changed.status, 200)
        assert.deepStrictEqual(changed.json.grant, { revoked_keys: 1, privacy_mode: "hipaa" })
        assert.strictEqual(changed.json.data.changed, true)
        const locked = yield* put(app, profile.profile_id, { enabled: false, privacy_mode: "platform_safe" })
        assert.strictEqual(locked.status, 409)
        assert.strictEqual(locked.json.error.code, "invalid_state")
        assert.strictEqual((yield* state(profile.profile_id))?.enabled, true, "nothing written")
        const custom = yield* put(app, profile.profile_id, { enabled: true, privacy_mode: "custom" })
        assert.strictEqual(custom.status, 400)
        assert.strictEqual(custom.json.error.code, "validation_error")
      }))
  })

  describe("who may call", () => {
    it.effect("unknown, another app's, human-created, archived profiles and unknown features: the same 404", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const mine = yield* provisioned(app)
        const foreign = yield* provisioned(yield* registerApp("Other"))
        const archived = yield* provisioned(app)
        yield* asApp(app, `/api/v1/profiles/${archived.profile_id}`, "DELETE")
        const human = yield* seedProfile()
        const answers = []
        for (const id of [crypto.randomUUID(), foreign.profile_id, human.profileId, archived.profile_id, "x"]) {
          const response = yield* put(app, id, { enabled: true })
          assert.strictEqual(response.status, 404, id)
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
        const feature = yield* put(app, mine.profile_id, { enabled: true }, "svc_other")
        assert.strictEqual(feature.status, 404)
      }))
  })
})
