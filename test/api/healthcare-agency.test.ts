import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, OPERATOR_TOKEN, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { type PartnerApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const ANALYTICS = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]
const operator = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }

const setFlag = (workspaceId: string, body: unknown, headers: Record<string, string> = operator) =>
  call(`/api/v1/admin/workspaces/${workspaceId}`, { method: "PATCH", headers, body: JSON.stringify(body) })

/** A live grant of `analytics_pii` to `app` on the profile (what provisioning would have written). */
const grant = Effect.fn("test.grant")(function*(app: PartnerApp, profile: SeededProfile) {
  const sql = yield* SqlClient
  const grantId = crypto.randomUUID()
  yield* sql`INSERT INTO grants (id, app_id, profile_id, connect_scopes)
             VALUES (${grantId}, ${app.id}, ${profile.profileId}, ${["analytics_pii"]})`
  return grantId
})

const clientCredentials = (app: PartnerApp, profileId: string, scope?: string) =>
  call("/oauth/token", {
    method: "POST",
    headers: { authorization: app.basic, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      profile_id: profileId,
      ...(scope === undefined ? {} : { scope })
    }).toString()
  })

const mint = Effect.fn("test.mint")(function*(app: PartnerApp, profileId: string, scope?: string) {
  const response = yield* clientCredentials(app, profileId, scope)
  assert.strictEqual(response.status, 200, response.text)
  return { key: String(response.json.access_token), scope: String(response.json.scope).split(" ") }
})

/** One authenticated request: 200 while the key is live, 401 once it is revoked. */
const me = (key: string) => Effect.map(call("/api/v1/me", { headers: { authorization: `Bearer ${key}` } }), (r) => r.status)

const audits = (workspaceId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ actor_kind: string; details: { from: boolean; to: boolean; revoked_keys: number } }>`
      SELECT actor_kind, details FROM audit_events
      WHERE target_id = ${workspaceId} AND action = 'workspace.healthcare_agency_changed' ORDER BY occurred_at, id`)

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("PATCH /api/v1/admin/workspaces/{id}", (it) => {
  it.effect("flag on: delegated keys with person scopes stop at once; other keys keep working; new keys come narrowed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const app = yield* registerApp("Agency partner")
      const profile = yield* seedProfile()
      const sibling = { workspaceId: profile.workspaceId, profileId: crypto.randomUUID() }
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${sibling.profileId}, ${profile.workspaceId}, 'Sibling')`
      const elsewhere = yield* seedProfile()
      for (const target of [profile, sibling, elsewhere]) yield* grant(app, target)

      const pii = yield* mint(app, profile.profileId)
      assert.includeMembers(pii.scope, ["customers:read", "visitors:read"])
      const siblingPii = yield* mint(app, sibling.profileId, "visitors:read analytics:read")
      const plain = yield* mint(app, profile.profileId, "analytics:read conversions:read")
      const otherWorkspace = yield* mint(app, elsewhere.profileId)
      const personIssued = yield* seedApiKey(profile, { scopes: ["analytics:read", "customers:read", "visitors:read"] })
      // Every key is used once first, so this runner holds it in its credential cache.
      for (const key of [pii.key, siblingPii.key, plain.key, otherWorkspace.key, personIssued.key]) {
        assert.strictEqual(yield* me(key), 200)
      }

      const on = yield* setFlag(profile.workspaceId, { is_healthcare_agency: true })
      assert.strictEqual(on.status, 200, on.text)
      assert.deepStrictEqual(on.json, {
        data: { workspace_id: profile.workspaceId, is_healthcare_agency: true, changed: true, revoked_keys: 2 }
      })

      // The next request of a revoked key is a 401 on this runner, not after the cache lapses.
      for (const key of [pii.key, siblingPii.key]) {
        const refused = yield* call("/api/v1/me", { headers: { authorization: `Bearer ${key}` } })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.json.error.code, "unauthorized")
      }
      assert.strictEqual(yield* me(plain.key), 200, "a delegated key without person scopes keeps working")
      assert.strictEqual(yield* me(personIssued.key), 200, "a key a person issued for themselves is unaffected")
      assert.strictEqual(yield* me(otherWorkspace.key), 200, "another workspace's keys are untouched")

      const rows = yield* sql<{ id: string; revoked: boolean }>`
        SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE workspace_id IN (${profile.workspaceId}, ${elsewhere.workspaceId})`
      assert.strictEqual(rows.filter((row) => row.revoked).length, 2)
      const [flag] = yield* sql<{ is_healthcare_agency: boolean }>`
        SELECT is_healthcare_agency FROM workspaces WHERE id = ${profile.workspaceId}`
      assert.isTrue(flag?.is_healthcare_agency)
      assert.deepStrictEqual((yield* audits(profile.workspaceId)).map((row) => [row.actor_kind, row.details]), [
        ["operator", { from: false, to: true, revoked_keys: 2 }]
      ])

      // The replacement through client_credentials comes back without both person scopes.
      const replacement = yield* mint(app, profile.profileId)
      assert.deepStrictEqual(replacement.scope, ANALYTICS)
      const [stored] = yield* sql<{ scopes: Array<string> }>`
        SELECT scopes FROM api_keys WHERE secret_hash = encode(sha256(convert_to(${replacement.key}, 'UTF8')), 'hex')`
      assert.deepStrictEqual(stored?.scopes, ANALYTICS)
      assert.strictEqual(yield* me(replacement.key), 200)
    }))

  it.effect("the same value again changes nothing; turning it off revokes nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const app = yield* registerApp("Agency toggles")
      const profile = yield* seedProfile()
      yield* grant(app, profile)
      assert.strictEqual((yield* setFlag(profile.workspaceId, { is_healthcare_agency: true })).json.data.changed, true)
      const again = yield* setFlag(profile.workspaceId, { is_healthcare_agency: true })
      assert.deepStrictEqual(again.json.data, {
        workspace_id: profile.workspaceId,
        is_healthcare_agency: true,
        changed: false,
        revoked_keys: 0
      })
      assert.strictEqual((yield* audits(profile.workspaceId)).length, 1, "a no-op is not audited")

      const off = yield* setFlag(profile.workspaceId, { is_healthcare_agency: false })
      assert.deepStrictEqual(off.json.data, {
        workspace_id: profile.workspaceId,
        is_healthcare_agency: false,
        changed: true,
        revoked_keys: 0
      })
      // Off: a key with person scopes may be minted again, and turning it off revoked nothing.
      const pii = yield* mint(app, profile.profileId)
      assert.includeMembers(pii.scope, ["customers:read", "visitors:read"])
      const offAgain = yield* setFlag(profile.workspaceId, { is_healthcare_agency: false })
      assert.strictEqual(offAgain.json.data.changed, false)
      assert.strictEqual(yield* me(pii.key), 200)
      const [revoked] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${profile.workspaceId} AND revoked_at IS NOT NULL`
      assert.strictEqual(revoked?.n, 0)
      assert.deepStrictEqual((yield* audits(profile.workspaceId)).map((row) => row.details.to), [true, false])
    }))

  it.effect("unknown, malformed or archived workspace: 404; a bad body: 400; only the operator may call", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const profile = yield* seedProfile()
      const archived = yield* seedProfile()
      yield* sql`UPDATE workspaces SET archived_at = now() WHERE id = ${archived.workspaceId}`
      const reference = yield* setFlag(crypto.randomUUID(), { is_healthcare_agency: true })
      assert.strictEqual(reference.status, 404)
      assert.strictEqual(reference.json.error.code, "not_found")
      for (const id of ["not-a-uuid", archived.workspaceId]) {
        const answer = yield* setFlag(id, { is_healthcare_agency: true })
        assert.strictEqual(answer.status, 404)
        assert.strictEqual(withoutRequestId(answer.text), withoutRequestId(reference.text))
      }
      const bad = yield* setFlag(profile.workspaceId, { is_healthcare_agency: "yes" })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.json.error.code, "validation_error")

      const key = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
      const byKey = yield* setFlag(profile.workspaceId, { is_healthcare_agency: true }, {
        authorization: `Bearer ${key.key}`,
        "content-type": "application/json"
      })
      assert.strictEqual(byKey.status, 403)
      assert.strictEqual(byKey.json.error.code, "insufficient_scope")
      const anonymous = yield* setFlag(profile.workspaceId, { is_healthcare_agency: true }, { "content-type": "application/json" })
      assert.strictEqual(anonymous.status, 401)
      const [flag] = yield* sql<{ is_healthcare_agency: boolean }>`
        SELECT is_healthcare_agency FROM workspaces WHERE id = ${profile.workspaceId}`
      assert.isFalse(flag?.is_healthcare_agency)
    }))
})
