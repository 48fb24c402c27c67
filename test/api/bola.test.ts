/**
 * Broken object-level authorization, walked across every ID-taking route of the partner and
 * workspace surfaces: with another tenant's ids, an app gets exactly what it gets for ids that
 * do not exist, byte for byte apart from the request id. Nothing of the other tenant changes.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"

interface Ids {
  readonly profileId: string
  readonly workspaceId: string
  readonly userId: string
  readonly keyId: string
}

const routes: ReadonlyArray<readonly [string, (ids: Ids) => string, (ids: Ids) => unknown]> = [
  ["DELETE", (ids) => `/api/v1/profiles/${ids.profileId}`, () => undefined],
  ["POST", (ids) => `/api/v1/profiles/${ids.profileId}/adopt`, (ids) => ({ external_ref: "stolen" })],
  ["PUT", (ids) => `/api/v1/profiles/${ids.profileId}/entitlements/svc_attribution`, (ids) => ({ enabled: true })],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/members`, () => undefined],
  ["PUT", (ids) => `/api/v1/workspaces/${ids.workspaceId}/members`, (ids) => ({ email: "intruder@evil.example", workspace_role: "admin" })],
  ["DELETE", (ids) => `/api/v1/workspaces/${ids.workspaceId}/members/${ids.userId}`, () => undefined],
  ["PATCH", (ids) => `/api/v1/workspaces/${ids.workspaceId}/reporting-currency`, (ids) => ({ reporting_currency: "USD" })],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/mcp-settings`, () => undefined],
  ["PUT", (ids) => `/api/v1/workspaces/${ids.workspaceId}/mcp-settings`, (ids) => ({ pii_mode: "full", mcp_writeback_enabled: true })],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/pii-access-log`, () => undefined],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/reports/hub`, () => undefined],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys`, () => undefined],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys`, (ids) => ({ profile_id: ids.profileId, scopes: ["connections:read"] })],
  ["PATCH", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}`, (ids) => ({ name: "mine now" })],
  ["DELETE", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}`, () => undefined],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}/revoke`, (ids) => ({})],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}/rotate`, (ids) => ({})]
]


layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("object-level authorization", (it) => {
  it.effect("another tenant's ids answer exactly like unknown ids on every ID-taking route, and change nothing", () =>
    Effect.gen(function*() {
      const attacker = yield* registerApp("Attacker")
      const victim = yield* registerApp("Victim")
      const created = (yield* asApp(victim, "/api/v1/profiles", "POST", {
        external_ref: `victim-${crypto.randomUUID().slice(0, 8)}`,
        email: "owner@victim.example",
        scopes: ["connections"]
      })).json.data
      const member = (yield* asApp(victim, `/api/v1/workspaces/${created.workspace_id}/members`, "PUT", {
        email: "analyst@victim.example",
        workspace_role: "analyst"
      })).json.data
      const key = (yield* asApp(victim, `/api/v1/workspaces/${created.workspace_id}/api-keys`, "POST", {
        profile_id: created.profile_id,
        scopes: ["connections:read"]
      })).json.data
      assert.isString(key.id)
      const theirs: Ids = { profileId: created.profile_id, workspaceId: created.workspace_id, userId: member.user_id, keyId: key.id }
      const unknown: Ids = {
        profileId: crypto.randomUUID(),
        workspaceId: crypto.randomUUID(),
        userId: crypto.randomUUID(),
        keyId: crypto.randomUUID()
      }
      const sql = yield* SqlClient
      const snapshot = () =>
        Effect.map(
          sql<{ state: string }>`
            SELECT concat_ws('|',
              (SELECT row_to_json(p)::text FROM profiles p WHERE id = ${created.profile_id}),
              (SELECT row_to_json(w)::text FROM workspaces w WHERE id = ${created.workspace_id}),
              (SELECT string_agg(row_to_json(m)::text, ',' ORDER BY user_id) FROM workspace_memberships m WHERE workspace_id = ${created.workspace_id}),
              (SELECT string_agg(row_to_json(k)::text, ',' ORDER BY id) FROM api_keys k WHERE workspace_id = ${created.workspace_id}),
              (SELECT row_to_json(s)::text FROM workspace_mcp_settings s WHERE workspace_id = ${created.workspace_id}),
              (SELECT row_to_json(e)::text FROM entitlements e WHERE profile_id = ${created.profile_id})) AS state`,
          (rows) => rows[0]?.state
        )
      const before = yield* snapshot()

      for (const [method, path, body] of routes) {
        const foreign = yield* asApp(attacker, path(theirs), method, body(theirs))
        const missing = yield* asApp(attacker, path(unknown), method, body(unknown))
        const where = `${method} ${path(theirs)}`
        assert.strictEqual(foreign.status, 404, where)
        assert.strictEqual(foreign.json.error.code, "not_found", where)
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(missing.text), where)
      }
      assert.strictEqual(yield* snapshot(), before, "the victim's records are untouched")
    }))
})
