import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const ref = () => `merchant-${crypto.randomUUID().slice(0, 8)}`

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("profile lifecycle (partner)", (it) => {
  describe("DELETE /api/v1/profiles/{id}", () => {
    it.effect("provisioned, workspace holds no other profile: archived with the cascade; again: 200 archived", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref(), email: "o@shop.example" })).json.data
        const profile = { profileId: created.profile_id, workspaceId: created.workspace_id }
        const key = yield* seedApiKey(profile, { scopes: ["connections:read"] })
        const member = yield* seedMemberSession(profile, "analyst")
        const sql = yield* SqlClient
        yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind) VALUES (${crypto.randomUUID()}, ${created.profile_id}, 'crm', 'crm')`
        yield* sql`INSERT INTO invitations (id, workspace_id, email, role) VALUES (${crypto.randomUUID()}, ${created.workspace_id}, 'x@y.example', 'analyst')`

        const archived = yield* asApp(app, `/api/v1/profiles/${created.profile_id}`, "DELETE")
        assert.strictEqual(archived.status, 200)
        assert.deepStrictEqual(archived.json.data, {
          profile_id: created.profile_id,
          workspace_id: created.workspace_id,
          archived: true,
          workspace_archived: true
        })
        const [state] = yield* sql<{
          profile_archived: boolean
          workspace_archived: boolean
          live_memberships: number
          live_invitations: number
          live_grants: number
          live_keys: number
          connections: number
          audits: number
        }>`
          SELECT (SELECT archived_at IS NOT NULL FROM profiles WHERE id = ${created.profile_id}) AS profile_archived,
                 (SELECT archived_at IS NOT NULL FROM workspaces WHERE id = ${created.workspace_id}) AS workspace_archived,
                 (SELECT count(*)::int FROM workspace_memberships WHERE workspace_id = ${created.workspace_id} AND removed_at IS NULL) AS live_memberships,
                 (SELECT count(*)::int FROM invitations WHERE workspace_id = ${created.workspace_id} AND revoked_at IS NULL) AS live_invitations,
                 (SELECT count(*)::int FROM grants WHERE profile_id = ${created.profile_id} AND revoked_at IS NULL) AS live_grants,
                 (SELECT count(*)::int FROM api_keys WHERE workspace_id = ${created.workspace_id} AND revoked_at IS NULL) AS live_keys,
                 (SELECT count(*)::int FROM connections WHERE profile_id = ${created.profile_id}) AS connections,
                 (SELECT count(*)::int FROM audit_events WHERE profile_id = ${created.profile_id}) AS audits`
        assert.deepStrictEqual(state, {
          profile_archived: true,
          workspace_archived: true,
          live_memberships: 0,
          live_invitations: 0,
          live_grants: 0,
          live_keys: 0,
          connections: 0,
          audits: 2
        })
        assert.strictEqual((yield* call("/api/v1/connections", { headers: { authorization: `Bearer ${key.key}` } })).status, 401)
        assert.strictEqual(
          (yield* call(`/api/v1/connections?profile_id=${created.profile_id}`, { headers: { cookie: member.cookie } })).status,
          404
        )
        const again = yield* asApp(app, `/api/v1/profiles/${created.profile_id}`, "DELETE")
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.json.data.archived, true)
      }))

    it.effect("a workspace holding a second live profile: 409 invalid_state, nothing archived", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
        const sql = yield* SqlClient
        yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${crypto.randomUUID()}, ${created.workspace_id}, 'second')`
        const refused = yield* asApp(app, `/api/v1/profiles/${created.profile_id}`, "DELETE")
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        const [row] = yield* sql<{ archived: boolean }>`SELECT archived_at IS NOT NULL AS archived FROM profiles WHERE id = ${created.profile_id}`
        assert.strictEqual(row?.archived, false)
      }))

    it.effect("unknown, another app's, human-created and malformed ids: one identical 404", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const foreign = (yield* asApp(yield* registerApp("Other"), "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
        const human = yield* seedProfile()
        const answers = []
        for (const id of [crypto.randomUUID(), foreign.profile_id, human.profileId, "not-a-uuid"]) {
          const response = yield* asApp(app, `/api/v1/profiles/${id}`, "DELETE")
          assert.strictEqual(response.status, 404, id)
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
      }))
  })

  describe("POST /api/v1/profiles/{id}/adopt", () => {
    it.effect("stamps the ref on a profile provisioned without one: 201 created true; repeat 200 created false", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
        const sql = yield* SqlClient
        // A profile from before refs existed: provisioned by the app, no external_ref.
        yield* sql`UPDATE profiles SET external_ref = NULL WHERE id = ${created.profile_id}`
        const externalRef = ref()
        const adopted = yield* asApp(app, `/api/v1/profiles/${created.profile_id}/adopt`, "POST", {
          external_ref: externalRef,
          scopes: ["connections", "analytics"]
        })
        assert.strictEqual(adopted.status, 201)
        assert.strictEqual(adopted.json.data.created, true)
        assert.strictEqual(adopted.json.data.external_ref, externalRef)
        assert.deepStrictEqual(adopted.json.data.scopes, ["connections", "analytics"])
        const repeat = yield* asApp(app, `/api/v1/profiles/${created.profile_id}/adopt`, "POST", { external_ref: externalRef })
        assert.strictEqual(repeat.status, 200)
        assert.strictEqual(repeat.json.data.created, false)
        const other = yield* asApp(app, `/api/v1/profiles/${created.profile_id}/adopt`, "POST", { external_ref: ref() })
        assert.strictEqual(other.status, 409)
        assert.strictEqual(other.json.error.code, "invalid_state")
        const replay = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: externalRef })
        assert.strictEqual(replay.json.data.profile_id, created.profile_id, "provisioning now finds it by the ref")
        const audits = yield* sql<{ action: string }>`SELECT action FROM audit_events WHERE profile_id = ${created.profile_id} AND action = 'profile.adopted'`
        assert.strictEqual(audits.length, 1)
      }))

    it.effect("unknown, another app's and archived profiles: one identical 404", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const archived = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
        yield* asApp(app, `/api/v1/profiles/${archived.profile_id}`, "DELETE")
        const foreign = (yield* asApp(yield* registerApp("Other"), "/api/v1/profiles", "POST", { external_ref: ref() })).json.data
        const answers = []
        for (const id of [crypto.randomUUID(), foreign.profile_id, archived.profile_id]) {
          const response = yield* asApp(app, `/api/v1/profiles/${id}/adopt`, "POST", { external_ref: ref() })
          assert.strictEqual(response.status, 404, id)
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
      }))
  })
})
