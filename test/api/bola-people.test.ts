/**
 * Broken object-level authorization for people: a signed-in person (console session) and the
 * same person's user token, walking every ID-taking route they may call with another tenant's
 * ids, get exactly what unknown ids get (byte for byte apart from the request id), and nothing
 * of the other tenant changes.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

interface Ids {
  readonly profileId: string
  readonly workspaceId: string
  readonly keyId: string
  readonly appId: string
}

const routes: ReadonlyArray<readonly [string, (ids: Ids) => string, unknown | ((ids: Ids) => unknown)]> = [
  ["DELETE", (ids) => `/api/v1/workspaces/${ids.workspaceId}`, undefined],
  ["PATCH", (ids) => `/api/v1/workspaces/${ids.workspaceId}/reporting-currency`, { reporting_currency: "USD" }],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/mcp-settings`, undefined],
  ["PUT", (ids) => `/api/v1/workspaces/${ids.workspaceId}/mcp-settings`, { pii_mode: "full", mcp_writeback_enabled: true }],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/pii-access-log`, undefined],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/reports/hub`, undefined],
  ["GET", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys`, undefined],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys`, (ids: Ids) => ({ profile_id: ids.profileId, scopes: ["connections:read"] })],
  ["PATCH", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}`, { name: "mine now" }],
  ["DELETE", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}`, undefined],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}/revoke`, {}],
  ["POST", (ids) => `/api/v1/workspaces/${ids.workspaceId}/api-keys/${ids.keyId}/rotate`, {}],
  ["GET", (ids) => `/api/v1/oauth-apps/${ids.appId}/dpa`, undefined],
  ["POST", (ids) => `/api/v1/oauth-apps/${ids.appId}/dpa/accept`, { version: "2026-11-01.dpa.v1" }],
  ["POST", (ids) => `/api/v1/oauth-apps/${ids.appId}/dpa/withdraw`, {}],
  ["GET", (ids) => `/api/v1/profiles/${ids.profileId}/dpa`, undefined],
  ["POST", (ids) => `/api/v1/profiles/${ids.profileId}/dpa/accept`, { version: "2026-11-01.dpa.v1" }],
  ["POST", (ids) => `/api/v1/profiles/${ids.profileId}/dpa/withdraw`, {}],
  ["POST", (ids) => `/api/v1/profiles/${ids.profileId}/baa/accept`, { version: "2026-11-01.baa.v1" }],
  ["POST", (ids) => `/api/v1/profiles/${ids.profileId}/baa/withdraw`, {}],
  ["GET", (ids) => `/api/v1/connections?profile_id=${ids.profileId}`, undefined]
]

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("object-level authorization for people", (it) => {
  it.effect("another tenant's ids answer exactly like unknown ids for a session and a user token, and change nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const victim = yield* seedProfile({ name: "Victim" })
      const victimKey = yield* seedApiKey(victim, { scopes: ["connections:read"] })
      const app = (yield* call("/api/v1/admin/oauth-apps", {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Victim app", redirect_uris: ["https://victim.example/cb"], owner_workspace_id: victim.workspaceId })
      })).json.data
      assert.isString(app.id)
      yield* seedMemberSession(victim, "owner")

      const attackerProfile = yield* seedProfile({ name: "Attacker" })
      const attacker = yield* seedMemberSession(attackerProfile, "owner")
      const token = mintSecret(CredentialPrefix.userToken)
      yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
                 VALUES (${crypto.randomUUID()}, ${attacker.userId}, 'svc_user_x', ${secretDigest(token)},
                         ${["mcp:read", "mcp:read_pii", "mcp:write"]})`

      const theirs: Ids = { ...victim, keyId: victimKey.id, appId: app.id }
      const unknown: Ids = {
        profileId: crypto.randomUUID(),
        workspaceId: crypto.randomUUID(),
        keyId: crypto.randomUUID(),
        appId: crypto.randomUUID()
      }
      const snapshot = () =>
        Effect.map(
          sql<{ state: string }>`
            SELECT concat_ws('|',
              (SELECT row_to_json(p)::text FROM profiles p WHERE id = ${victim.profileId}),
              (SELECT row_to_json(w)::text FROM workspaces w WHERE id = ${victim.workspaceId}),
              (SELECT string_agg(row_to_json(k)::text, ',' ORDER BY id) FROM api_keys k WHERE workspace_id = ${victim.workspaceId}),
              (SELECT row_to_json(s)::text FROM workspace_mcp_settings s WHERE workspace_id = ${victim.workspaceId}),
              (SELECT row_to_json(a)::text FROM oauth_apps a WHERE id = ${app.id})) AS state`,
          (rows) => rows[0]?.state
        )
      const before = yield* snapshot()

      const as = (headers: Record<string, string>, method: string, path: string, body: unknown) =>
        call(path, {
          method,
          headers: { ...headers, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
      const credentials: ReadonlyArray<readonly [string, Record<string, string>]> = [
        ["session", attacker.headers],
        ["user token", { authorization: `Bearer ${token}` }]
      ]
      let compared = 0
      for (const [who, headers] of credentials) {
        for (const [method, path, body] of routes) {
          const bodyFor = (ids: Ids) => typeof body === "function" ? body(ids) : body
          const foreign = yield* as(headers, method, path(theirs), bodyFor(theirs))
          const missing = yield* as(headers, method, path(unknown), bodyFor(unknown))
          const where = `${who}: ${method} ${path(theirs)}`
          // A route a user token can never reach is 403 for both; everything else is the same 404.
          if (foreign.status === 403) {
            assert.strictEqual(foreign.json.error.code, "insufficient_scope", where)
          } else {
            assert.strictEqual(foreign.status, 404, where)
            assert.strictEqual(foreign.json.error.code, "not_found", where)
            compared++
          }
          assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(missing.text), where)
        }
      }
      assert.isAtLeast(compared, routes.length + 5)
      assert.strictEqual(yield* snapshot(), before, "the victim's records are untouched")
    }))
})
