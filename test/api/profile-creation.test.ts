/** POST /api/v1/profiles with profiles:write: a person creates a profile in a workspace they own or administer. */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { type SeededProfile, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const userToken = (userId: string, grants: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const token = mintSecret(CredentialPrefix.userToken)
    yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
               VALUES (${crypto.randomUUID()}, ${userId}, 'svc_user_x', ${secretDigest(token)}, ${grants})`
    return token
  })

const create = (headers: Record<string, string>, body: unknown) =>
  call("/api/v1/profiles", { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) })

/** A member with a session and a user token, in a workspace whose MCP settings allow token writes. */
const member = (workspace: SeededProfile, role: "owner" | "admin" | "analyst" | "guest", grants = ["mcp:read", "mcp:write"]) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`INSERT INTO workspace_mcp_settings (workspace_id, pii_mode, mcp_writeback_enabled)
               VALUES (${workspace.workspaceId}, 'redacted', true) ON CONFLICT (workspace_id) DO NOTHING`
    const session = yield* seedMemberSession(workspace, role)
    const token = yield* userToken(session.userId, grants)
    return { session, bearer: { authorization: `Bearer ${token}` } }
  })

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("POST /api/v1/profiles with profiles:write", (it) => {
  describe("a person creates a profile", () => {
    it.effect("an owner's mcp:write token: 201, the profile with a tracking key, no app, every feature on; audit", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const owner = yield* member(workspace, "owner")
        const response = yield* create(owner.bearer, {
          workspace_id: workspace.workspaceId,
          name: " Second shop ",
          currency: "USD",
          time_zone: "Europe/Madrid"
        })
        assert.strictEqual(response.status, 201)
        const data = response.json.data
        assert.strictEqual(data.created, true)
        assert.strictEqual(data.workspace_id, workspace.workspaceId)
        assert.strictEqual(data.name, "Second shop")
        assert.strictEqual(data.currency, "USD")
        assert.strictEqual(data.time_zone, "Europe/Madrid")
        assert.strictEqual(data.external_ref, null)
        assert.deepStrictEqual(data.scopes, [])
        assert.deepStrictEqual(data.entitlements, { svc_attribution: true })
        assert.match(data.tracking_key, /^svc_pub_/)
        const sql = yield* SqlClient
        const [row] = yield* sql<{ created_by_user_id: string; provisioned_by_app_id: string | null; audits: number }>`
          SELECT created_by_user_id, provisioned_by_app_id,
                 (SELECT count(*)::int FROM audit_events WHERE profile_id = p.id AND action = 'profile.created') AS audits
          FROM profiles p WHERE id = ${data.profile_id}`
        assert.deepStrictEqual(row, { created_by_user_id: owner.session.userId, provisioned_by_app_id: null, audits: 1 })
        // The owner reaches the new profile with the same token.
        const reach = yield* call(`/api/v1/connections?profile_id=${data.profile_id}`, { headers: owner.session.headers })
        assert.strictEqual(reach.status, 200)
      }))

    it.effect("the console session of an admin creates one too (CSRF token required)", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const admin = yield* member(workspace, "admin")
        const withoutCsrf = yield* create({ cookie: admin.session.cookie }, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(withoutCsrf.status, 403)
        const created = yield* create(admin.session.headers, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(created.status, 201)
      }))

    it.effect("Idempotency-Key makes a retry safe: one profile, the same answer", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const owner = yield* member(workspace, "owner")
        const headers = { ...owner.bearer, "idempotency-key": crypto.randomUUID() }
        const first = yield* create(headers, { workspace_id: workspace.workspaceId, name: "Shop" })
        const second = yield* create(headers, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(first.status, 201)
        assert.strictEqual(second.status, 201)
        assert.strictEqual(second.json.data.profile_id, first.json.data.profile_id)
        const sql = yield* SqlClient
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM profiles WHERE workspace_id = ${workspace.workspaceId}`
        assert.strictEqual(count?.n, 2, "the seeded profile and one created")
      }))
  })

  describe("refusals change nothing", () => {
    it.effect("a default read-grant token: 403 insufficient_scope (profiles:write comes with mcp:write)", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const reader = yield* member(workspace, "owner", ["mcp:read"])
        const response = yield* create(reader.bearer, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(response.status, 403)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
        assert.include(response.json.error.message, "profiles:write")
      }))

    it.effect("a user token cannot write while the workspace's MCP settings keep writeback off (the default)", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const owner = yield* member(workspace, "owner")
        const sql = yield* SqlClient
        yield* sql`UPDATE workspace_mcp_settings SET mcp_writeback_enabled = false WHERE workspace_id = ${workspace.workspaceId}`
        const refused = yield* create(owner.bearer, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual(refused.json.error.reason, "mcp_writeback_disabled")
        // The console session is not an MCP token: unaffected.
        assert.strictEqual((yield* create(owner.session.headers, { workspace_id: workspace.workspaceId, name: "Shop" })).status, 201)
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM profiles WHERE workspace_id = ${workspace.workspaceId}`
        assert.strictEqual(count?.n, 2)
      }))

    it.effect("an analyst's membership does not allow it: 403 naming both halves", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const analyst = yield* member(workspace, "analyst")
        const response = yield* create(analyst.bearer, { workspace_id: workspace.workspaceId, name: "Shop" })
        assert.strictEqual(response.status, 403)
        assert.include(response.json.error.message, "the token's MCP grant allows it")
        assert.include(response.json.error.message, "membership (analyst) does not allow profiles:write")
      }))

    it.effect("a workspace the person is not in, an archived, an unknown and a malformed id: one identical 404", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const owner = yield* member(workspace, "owner")
        const foreign = yield* seedProfile()
        const archived = yield* seedProfile()
        const sql = yield* SqlClient
        yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${archived.workspaceId}, ${owner.session.userId}, 'owner')`
        yield* sql`UPDATE workspaces SET archived_at = now() WHERE id = ${archived.workspaceId}`
        const answers = []
        for (const workspaceId of [foreign.workspaceId, archived.workspaceId, crypto.randomUUID(), "nope"]) {
          const response = yield* create(owner.bearer, { workspace_id: workspaceId, name: "Shop" })
          assert.strictEqual(response.status, 404, workspaceId)
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM profiles WHERE workspace_id IN (${foreign.workspaceId}, ${archived.workspaceId})`
        assert.strictEqual(count?.n, 2)
      }))

    it.effect("partner fields are refused and required fields named", () =>
      Effect.gen(function*() {
        const workspace = yield* seedProfile()
        const owner = yield* member(workspace, "owner")
        const cases: Array<[unknown, string]> = [
          [{ workspace_id: workspace.workspaceId, name: "Shop", external_ref: "x" }, "body.external_ref: not accepted with a person's credential"],
          [{ workspace_id: workspace.workspaceId, name: "Shop", privacy_mode: "hipaa" }, "body.privacy_mode: not accepted with a person's credential"],
          [{ name: "Shop" }, "body.workspace_id: required"],
          [{ workspace_id: workspace.workspaceId }, "body.name: required"]
        ]
        for (const [body, message] of cases) {
          const response = yield* create(owner.bearer, body)
          assert.strictEqual(response.status, 400)
          assert.strictEqual(response.json.error.code, "validation_error")
          assert.strictEqual(response.json.error.message, message)
        }
        const zone = yield* create(owner.bearer, { workspace_id: workspace.workspaceId, name: "Shop", time_zone: "Mars/Olympus" })
        assert.strictEqual(zone.status, 400)
        assert.include(zone.json.error.message, "body.time_zone")
      }))
  })
})
