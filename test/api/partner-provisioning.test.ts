import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey } from "../support/tenancy.ts"

const provision = (app: Parameters<typeof asApp>[0], body: Record<string, unknown>) =>
  asApp(app, "/api/v1/profiles", "POST", body)
const ref = () => `merchant-${crypto.randomUUID().slice(0, 8)}`

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("POST /api/v1/profiles (partner provisioning)", (it) => {
  describe("create, then replay", () => {
    it.effect("the first call creates workspace, profile, grant and owner: 201 created true; a replay is 200 created false", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const externalRef = ref()
        const first = yield* provision(app, { external_ref: externalRef, name: "Shop", email: "owner@shop.example", currency: "EUR" })
        assert.strictEqual(first.status, 201)
        const data = first.json.data
        assert.strictEqual(data.created, true)
        assert.strictEqual(data.external_ref, externalRef)
        assert.deepStrictEqual(data.scopes, ["connections"])
        assert.strictEqual(data.currency, "EUR")
        assert.strictEqual(data.reporting_currency, "EUR", "reporting currency defaults to the request's currency")
        assert.deepStrictEqual(data.entitlements, { svc_attribution: false })
        assert.strictEqual(data.revoked_keys, 0)
        assert.notProperty(data, "privacy_mode", "echoed only when sent")
        assert.match(data.tracking_key, /^svc_pub_[0-9A-Za-z]{38}$/)
        assert.strictEqual(data.time_zone, "UTC")

        const replay = yield* provision(app, { external_ref: externalRef, scopes: ["connections", "analytics"] })
        assert.strictEqual(replay.status, 200)
        assert.strictEqual(replay.json.data.created, false)
        assert.strictEqual(replay.json.data.profile_id, data.profile_id)
        assert.strictEqual(replay.json.data.workspace_id, data.workspace_id)
        assert.deepStrictEqual(replay.json.data.scopes, ["connections", "analytics"])
        assert.strictEqual(replay.json.data.tracking_key, data.tracking_key, "one live tracking key per profile, public, answered on replay")

        const sql = yield* SqlClient
        const [owner] = yield* sql<{ role: string; email: string }>`
          SELECT m.role, u.email FROM workspace_memberships m JOIN users u ON u.id = m.user_id
          WHERE m.workspace_id = ${data.workspace_id}`
        assert.deepStrictEqual(owner, { role: "owner", email: "owner@shop.example" })
        const [profile] = yield* sql<{ provisioned_by_app_id: string; provisioned_external_ref: string }>`
          SELECT provisioned_by_app_id, provisioned_external_ref FROM profiles WHERE id = ${data.profile_id}`
        assert.deepStrictEqual(profile, { provisioned_by_app_id: app.id, provisioned_external_ref: externalRef })
        const audits = yield* sql<{ action: string }>`SELECT action FROM audit_events WHERE profile_id = ${data.profile_id} ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((row) => row.action), ["profile.provisioned", "profile.reprovisioned"])
      }))

    it.effect("ten concurrent first calls yield one profile: one 201 and nine 200", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const externalRef = ref()
        const answers = yield* Effect.all(
          Array.from({ length: 10 }, () => provision(app, { external_ref: externalRef })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 201])
        assert.strictEqual(new Set(answers.map((a) => a.json.data.profile_id)).size, 1)
        const sql = yield* SqlClient
        const [count] = yield* sql<{ profiles: number; workspaces: number }>`
          SELECT (SELECT count(*)::int FROM profiles WHERE provisioned_by_app_id = ${app.id}) AS profiles,
                 (SELECT count(*)::int FROM workspaces WHERE created_by_app_id = ${app.id}) AS workspaces`
        assert.deepStrictEqual(count, { profiles: 1, workspaces: 1 })
      }))

    it.effect("the same external_ref under another app is another profile", () =>
      Effect.gen(function*() {
        const externalRef = ref()
        const a = yield* provision(yield* registerApp("A"), { external_ref: externalRef })
        const b = yield* provision(yield* registerApp("B"), { external_ref: externalRef })
        assert.strictEqual(a.status, 201)
        assert.strictEqual(b.status, 201)
        assert.notStrictEqual(a.json.data.profile_id, b.json.data.profile_id)
      }))
  })

  describe("bad input and the wrong credential change nothing", () => {
    it.effect("400 validation_error for attribution, a custom privacy mode, an unknown connect scope", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        for (
          const [body, path] of [
            [{ external_ref: ref(), scopes: ["attribution"] }, "body.scopes.0"],
            [{ external_ref: ref(), privacy_mode: "custom" }, "body.privacy_mode"],
            [{ external_ref: ref(), scopes: ["everything"] }, "body.scopes.0"],
            [{ scopes: ["connections"] }, "body.external_ref"],
            [{ external_ref: ref(), currency: "euro" }, "body.currency"]
          ] as const
        ) {
          const response = yield* provision(app, body)
          assert.strictEqual(response.status, 400, JSON.stringify(body))
          assert.strictEqual(response.json.error.code, "validation_error")
          assert.isTrue(response.json.error.message.startsWith(path), response.json.error.message)
        }
        const sql = yield* SqlClient
        const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM profiles WHERE provisioned_by_app_id = ${app.id}`
        assert.strictEqual(row?.n, 0)
      }))

    it.effect("an app may not send the person's fields, and must send external_ref", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const withWorkspace = yield* provision(app, { external_ref: ref(), workspace_id: crypto.randomUUID() })
        assert.strictEqual(withWorkspace.status, 400)
        assert.strictEqual(withWorkspace.json.error.message, "body.workspace_id: not accepted with an app credential")
        const withoutRef = yield* provision(app, { name: "Shop" })
        assert.strictEqual(withoutRef.status, 400)
        assert.strictEqual(withoutRef.json.error.code, "validation_error")
        assert.strictEqual(withoutRef.json.error.message, "body.external_ref: required with an app credential")
      }))

    it.effect("no credential 401, an API key 403, a wrong secret 401", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const none = yield* call("/api/v1/profiles", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
        assert.strictEqual(none.status, 401)
        const seeded = yield* provision(app, { external_ref: ref() })
        const { key } = yield* seedApiKey(
          { profileId: seeded.json.data.profile_id, workspaceId: seeded.json.data.workspace_id },
          { scopes: ["profiles:write"] }
        )
        const withKey = yield* call("/api/v1/profiles", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ external_ref: ref() })
        })
        assert.strictEqual(withKey.status, 403)
        assert.strictEqual(withKey.json.error.code, "insufficient_scope")
        const wrong = yield* provision({ ...app, basic: `Basic ${Buffer.from(`${app.clientId}:svc_secret_wrong`).toString("base64")}` }, {
          external_ref: ref()
        })
        assert.strictEqual(wrong.status, 401)
      }))
  })

  describe("privacy mode and healthcare policy", () => {
    it.effect("standard to hipaa on a replay: stored, echoed, delegated keys with person scopes revoked", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const externalRef = ref()
        const created = (yield* provision(app, { external_ref: externalRef, scopes: ["analytics_pii"] })).json.data
        const sql = yield* SqlClient
        const profile = { profileId: created.profile_id, workspaceId: created.workspace_id }
        const person = yield* seedApiKey(profile, { scopes: ["analytics:read", "customers:read"] })
        const plain = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id IN (${person.id}, ${plain.id})`

        const changed = yield* provision(app, { external_ref: externalRef, scopes: ["analytics"], privacy_mode: "hipaa" })
        assert.strictEqual(changed.status, 200)
        assert.strictEqual(changed.json.data.privacy_mode, "hipaa")
        assert.strictEqual(changed.json.data.revoked_keys, 1)
        const rows = yield* sql<{ id: string; revoked: boolean }>`
          SELECT id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id IN (${person.id}, ${plain.id})`
        assert.deepStrictEqual(Object.fromEntries(rows.map((r) => [r.id, r.revoked])), { [person.id]: true, [plain.id]: false })

        const same = yield* provision(app, { external_ref: externalRef, scopes: ["analytics"], privacy_mode: "hipaa" })
        assert.strictEqual(same.status, 200, "re-sending the stored value is a no-op")
        const other = yield* provision(app, { external_ref: externalRef, privacy_mode: "platform_safe" })
        assert.strictEqual(other.status, 409)
        assert.strictEqual(other.json.error.code, "invalid_state")
        const [stored] = yield* sql<{ privacy_mode: string }>`SELECT privacy_mode FROM profiles WHERE id = ${created.profile_id}`
        assert.strictEqual(stored?.privacy_mode, "hipaa")
      }))

    it.effect("analytics_pii on a healthcare-family profile is 403 healthcare_scope_forbidden and the grant stays", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const externalRef = ref()
        const created = (yield* provision(app, { external_ref: externalRef, scopes: ["analytics"], privacy_mode: "platform_safe" })).json.data
        const refused = yield* provision(app, { external_ref: externalRef, scopes: ["analytics_pii"] })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "healthcare_scope_forbidden")
        const sql = yield* SqlClient
        const [grant] = yield* sql<{ connect_scopes: Array<string> }>`
          SELECT connect_scopes FROM grants WHERE profile_id = ${created.profile_id} AND app_id = ${app.id}`
        assert.deepStrictEqual(grant?.connect_scopes, ["analytics"])
        const atCreation = yield* provision(app, { external_ref: ref(), scopes: ["analytics_pii"], privacy_mode: "hipaa" })
        assert.strictEqual(atCreation.status, 403)
      }))

    it.effect("narrowing the grant revokes keys minted under the wider one", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const externalRef = ref()
        const created = (yield* provision(app, { external_ref: externalRef, scopes: ["connections", "analytics"] })).json.data
        const sql = yield* SqlClient
        const wide = yield* seedApiKey(
          { profileId: created.profile_id, workspaceId: created.workspace_id },
          { scopes: ["connections:read", "analytics:read"] }
        )
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id},
                   grant_id = (SELECT id FROM grants WHERE app_id = ${app.id} AND profile_id = ${created.profile_id})
                   WHERE id = ${wide.id}`
        const narrowed = yield* provision(app, { external_ref: externalRef, scopes: ["connections"] })
        assert.strictEqual(narrowed.json.data.revoked_keys, 1)
        const answer = yield* call("/api/v1/connections", { headers: { authorization: `Bearer ${wide.key}` } })
        assert.strictEqual(answer.status, 401)
      }))
  })
})
