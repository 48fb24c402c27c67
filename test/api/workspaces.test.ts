/**
 * Workspaces (`/api/v1/workspaces` and its workspace-level settings), over real HTTP:
 * sessions, MCP user tokens, API keys and the OAuth-app credential. Decision 0020.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

type Role = "owner" | "admin" | "analyst" | "guest"

/** The CSRF token of each seeded session, sent with the session's unsafe requests. */
const csrfTokenOf = new Map<string, string>()

/** A person with a signed-in session (no membership). */
const person = Effect.fn("test.person")(function*() {
  const sql = yield* SqlClient
  const userId = crypto.randomUUID()
  yield* sql`INSERT INTO users (id, email) VALUES (${userId}, ${`${userId}@people.example`})`
  const session = mintSecret(CredentialPrefix.session)
  const csrfToken = crypto.randomUUID()
  yield* sql`
    INSERT INTO sessions (id, user_id, secret_hash, csrf_token_hash, expires_at)
    VALUES (${crypto.randomUUID()}, ${userId}, ${secretDigest(session)}, ${secretDigest(csrfToken)},
            now() + interval '1 hour')`
  const cookie = `svc_session=${session}`
  csrfTokenOf.set(cookie, csrfToken)
  return { userId, cookie }
})

/** An MCP user token of the person with these grants. */
const userToken = Effect.fn("test.userToken")(function*(userId: string, grants: ReadonlyArray<string>) {
  const sql = yield* SqlClient
  const token = mintSecret(CredentialPrefix.userToken)
  yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
             VALUES (${crypto.randomUUID()}, ${userId}, ${displayPrefix(token, CredentialPrefix.userToken)},
                     ${secretDigest(token)}, ${grants})`
  return `Bearer ${token}`
})

const join = Effect.fn("test.join")(function*(workspaceId: string, userId: string, role: Role) {
  const sql = yield* SqlClient
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${userId}, ${role})`
})

/** A person with a session and a membership of `role` in the workspace. */
const member = Effect.fn("test.member")(function*(workspaceId: string, role: Role) {
  const who = yield* person()
  yield* join(workspaceId, who.userId, role)
  return who
})

const asSession = (cookie: string, path: string, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { cookie, "content-type": "application/json", "x-csrf-token": csrfTokenOf.get(cookie) ?? "" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const asBearer = (authorization: string, path: string, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { authorization, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A workspace created over HTTP by a fresh person, who is its owner. */
const ownedWorkspace = Effect.fn("test.ownedWorkspace")(function*(body: Record<string, unknown> = {}) {
  const owner = yield* person()
  const response = yield* asSession(owner.cookie, "/api/v1/workspaces", "POST", body)
  assert.strictEqual(response.status, 201, response.text)
  return { owner, workspaceId: response.json.data.workspace_id as string, created: response.json.data }
})


/** The unreachable answers of one path template: unknown, malformed, foreign and archived ids look the same. */
const assertSameNotFound = (responses: ReadonlyArray<{ status: number; text: string }>) => {
  for (const response of responses) assert.strictEqual(response.status, 404, response.text)
  const bodies = new Set(responses.map((response) => withoutRequestId(response.text)))
  assert.strictEqual(bodies.size, 1, [...bodies].join("\n"))
}

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("workspaces", (it) => {
  describe("POST and GET /api/v1/workspaces", () => {
    it.effect("a session creates a workspace (201, it becomes owner) and lists its workspaces by keyset", () =>
      Effect.gen(function*() {
        const owner = yield* person()
        const first = yield* asSession(owner.cookie, "/api/v1/workspaces", "POST", { name: "Agency", reporting_currency: "EUR" })
        assert.strictEqual(first.status, 201, first.text)
        const data = first.json.data
        assert.deepStrictEqual(Object.keys(data).sort(), [
          "archived",
          "created_at",
          "is_healthcare_agency",
          "name",
          "reporting_currency",
          "workspace_id"
        ])
        assert.strictEqual(data.name, "Agency")
        assert.strictEqual(data.reporting_currency, "EUR")
        assert.strictEqual(data.archived, false)
        assert.strictEqual(data.is_healthcare_agency, false)
        assert.match(data.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
        const sql = yield* SqlClient
        const [membership] = yield* sql<{ role: string }>`
          SELECT role FROM workspace_memberships WHERE workspace_id = ${data.workspace_id} AND user_id = ${owner.userId}`
        assert.strictEqual(membership?.role, "owner")
        const audits = yield* sql<{ action: string; actor_kind: string }>`
          SELECT action, actor_kind FROM audit_events WHERE workspace_id = ${data.workspace_id}`
        assert.deepStrictEqual(audits, [{ action: "workspace.created", actor_kind: "session" }])

        const second = yield* asSession(owner.cookie, "/api/v1/workspaces", "POST", {})
        assert.strictEqual(second.status, 201)
        assert.strictEqual(second.json.data.reporting_currency, null)
        assert.strictEqual(second.json.data.name, "")

        const page1 = yield* asSession(owner.cookie, "/api/v1/workspaces?limit=1")
        assert.strictEqual(page1.status, 200, page1.text)
        assert.deepStrictEqual(page1.json.data.map((w: any) => w.workspace_id), [data.workspace_id])
        assert.strictEqual(page1.json.pagination.has_next, true)
        const page2 = yield* asSession(owner.cookie, `/api/v1/workspaces?limit=1&cursor=${page1.json.pagination.cursor}`)
        assert.deepStrictEqual(page2.json.data.map((w: any) => w.workspace_id), [second.json.data.workspace_id])
        assert.deepStrictEqual(page2.json.pagination, { has_next: false, cursor: null })

        const stranger = yield* person()
        const theirs = yield* asSession(stranger.cookie, "/api/v1/workspaces")
        assert.deepStrictEqual(theirs.json.data, [], "only workspaces the person is an active member of")
      }))

    it.effect("an invalid currency is 400 validation_error", () =>
      Effect.gen(function*() {
        const owner = yield* person()
        const response = yield* asSession(owner.cookie, "/api/v1/workspaces", "POST", { reporting_currency: "eur" })
        assert.strictEqual(response.status, 400, response.text)
        assert.strictEqual(response.json.error.code, "validation_error")
      }))

    it.effect("a user token lists with any grant but creates only with workspaces:write (mcp:write)", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace()
        const reader = yield* userToken(owner.userId, ["mcp:read"])
        const listed = yield* asBearer(reader, "/api/v1/workspaces")
        assert.strictEqual(listed.status, 200, listed.text)
        assert.deepStrictEqual(listed.json.data.map((w: any) => w.workspace_id), [workspaceId])

        const refused = yield* asBearer(reader, "/api/v1/workspaces", "POST", {})
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")

        const writer = yield* userToken(owner.userId, ["mcp:read", "mcp:write"])
        const created = yield* asBearer(writer, "/api/v1/workspaces", "POST", { reporting_currency: "USD" })
        assert.strictEqual(created.status, 201, created.text)
        const sql = yield* SqlClient
        const [membership] = yield* sql<{ role: string }>`
          SELECT role FROM workspace_memberships WHERE workspace_id = ${created.json.data.workspace_id} AND user_id = ${owner.userId}`
        assert.strictEqual(membership?.role, "owner")
      }))

    it.effect("an API key is refused with 403 insufficient_scope; no credential is 401", () =>
      Effect.gen(function*() {
        const { key } = yield* seedApiKey(yield* seedProfile(), { scopes: ["analytics:read", "workspaces:write"] })
        const listed = yield* asBearer(`Bearer ${key}`, "/api/v1/workspaces")
        assert.strictEqual(listed.status, 403)
        assert.strictEqual(listed.json.error.code, "insufficient_scope")
        const created = yield* asBearer(`Bearer ${key}`, "/api/v1/workspaces", "POST", {})
        assert.strictEqual(created.status, 403)
        assert.strictEqual((yield* call("/api/v1/workspaces")).status, 401)
      }))

    it.effect("an app creates bare workspaces (no member) and lists only the ones it created", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const other = yield* registerApp("Other")
        const created = yield* asApp(app, "/api/v1/workspaces", "POST", { name: "Bare", reporting_currency: "GBP" })
        assert.strictEqual(created.status, 201, created.text)
        const workspaceId = created.json.data.workspace_id
        const sql = yield* SqlClient
        const [row] = yield* sql<{ created_by_app_id: string; members: number }>`
          SELECT created_by_app_id,
                 (SELECT count(*)::int FROM workspace_memberships WHERE workspace_id = w.id) AS members
          FROM workspaces w WHERE id = ${workspaceId}`
        assert.deepStrictEqual(row, { created_by_app_id: app.id, members: 0 })
        const mine = yield* asApp(app, "/api/v1/workspaces", "GET")
        assert.deepStrictEqual(mine.json.data.map((w: any) => w.workspace_id), [workspaceId])
        const theirs = yield* asApp(other, "/api/v1/workspaces", "GET")
        assert.deepStrictEqual(theirs.json.data, [])
      }))
  })

  describe("PATCH /api/v1/workspaces/{id}/reporting-currency", () => {
    it.effect("owner or admin session, or the creating app, changes it; an analyst is 403; the unreachable is one 404", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace({ reporting_currency: "EUR" })
        const path = `/api/v1/workspaces/${workspaceId}/reporting-currency`
        const changed = yield* asSession(owner.cookie, path, "PATCH", { reporting_currency: "USD" })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.strictEqual(changed.json.data.reporting_currency, "USD")
        assert.strictEqual(changed.json.data.workspace_id, workspaceId)

        const admin = yield* member(workspaceId, "admin")
        const byAdmin = yield* asSession(admin.cookie, path.replace(workspaceId, workspaceId.toUpperCase()), "PATCH", {
          reporting_currency: "SEK"
        })
        assert.strictEqual(byAdmin.status, 200, byAdmin.text)
        assert.strictEqual(byAdmin.json.data.reporting_currency, "SEK")

        const analyst = yield* member(workspaceId, "analyst")
        const byAnalyst = yield* asSession(analyst.cookie, path, "PATCH", { reporting_currency: "NOK" })
        assert.strictEqual(byAnalyst.status, 403)
        assert.strictEqual(byAnalyst.json.error.code, "insufficient_scope")

        const invalid = yield* asSession(owner.cookie, path, "PATCH", { reporting_currency: "Euro" })
        assert.strictEqual(invalid.status, 400)

        const sql = yield* SqlClient
        const audits = yield* sql<{ details: any }>`
          SELECT details FROM audit_events WHERE workspace_id = ${workspaceId} AND action = 'workspace.reporting_currency_changed'
          ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((row) => row.details), [{ from: "EUR", to: "USD" }, { from: "USD", to: "SEK" }])

        const stranger = yield* person()
        const app = yield* registerApp()
        const body = { reporting_currency: "DKK" }
        assertSameNotFound([
          yield* asSession(stranger.cookie, path, "PATCH", body),
          yield* asSession(owner.cookie, `/api/v1/workspaces/${crypto.randomUUID()}/reporting-currency`, "PATCH", body),
          yield* asSession(owner.cookie, "/api/v1/workspaces/not-a-uuid/reporting-currency", "PATCH", body),
          yield* asApp(app, path, "PATCH", body)
        ])
      }))

    it.effect("the creating app changes its bare workspace's currency", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = yield* asApp(app, "/api/v1/workspaces", "POST", {})
        const path = `/api/v1/workspaces/${created.json.data.workspace_id}/reporting-currency`
        const changed = yield* asApp(app, path, "PATCH", { reporting_currency: "JPY" })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.strictEqual(changed.json.data.reporting_currency, "JPY")
      }))
  })

  describe("GET/PUT /api/v1/workspaces/{id}/mcp-settings", () => {
    it.effect("members read the defaults; owner/admin sessions and the creating app replace them; a user token never writes", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace()
        const path = `/api/v1/workspaces/${workspaceId}/mcp-settings`
        const guest = yield* member(workspaceId, "guest")
        const defaults = yield* asSession(guest.cookie, path)
        assert.strictEqual(defaults.status, 200, defaults.text)
        assert.deepStrictEqual(defaults.json.data, {
          workspace_id: workspaceId,
          pii_mode: "redacted",
          mcp_writeback_enabled: false,
          updated_at: null
        })

        const token = yield* userToken(guest.userId, ["mcp:read", "mcp:write"])
        const viaToken = yield* asBearer(token, path)
        assert.strictEqual(viaToken.status, 200, viaToken.text)
        const ownerToken = yield* userToken(owner.userId, ["mcp:read", "mcp:read_pii", "mcp:write"])
        const refused = yield* asBearer(ownerToken, path, "PUT", { pii_mode: "full", mcp_writeback_enabled: true })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")

        const byGuest = yield* asSession(guest.cookie, path, "PUT", { pii_mode: "full", mcp_writeback_enabled: true })
        assert.strictEqual(byGuest.status, 403)

        const admin = yield* member(workspaceId, "admin")
        const put = yield* asSession(admin.cookie, path, "PUT", { pii_mode: "full", mcp_writeback_enabled: true })
        assert.strictEqual(put.status, 200, put.text)
        assert.strictEqual(put.json.data.pii_mode, "full")
        assert.strictEqual(put.json.data.mcp_writeback_enabled, true)
        assert.match(put.json.data.updated_at, /Z$/)
        const reread = yield* asSession(owner.cookie, path)
        assert.deepStrictEqual(reread.json.data, put.json.data)

        const unknownMode = yield* asSession(owner.cookie, path, "PUT", { pii_mode: "open", mcp_writeback_enabled: true })
        assert.strictEqual(unknownMode.status, 400)

        const stranger = yield* person()
        assertSameNotFound([
          yield* asSession(stranger.cookie, path),
          yield* asSession(owner.cookie, `/api/v1/workspaces/${crypto.randomUUID()}/mcp-settings`),
          yield* asSession(stranger.cookie, path, "PUT", { pii_mode: "redacted", mcp_writeback_enabled: false })
        ])

        const spec = (yield* call("/api/v1/openapi.json")).json
        const operations = spec.paths["/api/v1/workspaces/{workspaceId}/mcp-settings"]
        assert.notInclude(operations.put["x-auth"], "user_token")
        assert.notInclude(JSON.stringify(operations.put.security), "userToken")
        assert.include(operations.get["x-auth"], "user_token")
      }))

    it.effect("the creating app writes the settings of its bare workspace", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = yield* asApp(app, "/api/v1/workspaces", "POST", {})
        const path = `/api/v1/workspaces/${created.json.data.workspace_id}/mcp-settings`
        const put = yield* asApp(app, path, "PUT", { pii_mode: "redacted", mcp_writeback_enabled: true })
        assert.strictEqual(put.status, 200, put.text)
        assert.strictEqual(put.json.data.mcp_writeback_enabled, true)
      }))
  })

  describe("DELETE /api/v1/workspaces/{id}", () => {
    it.effect("owner only; 409 while it holds a live profile; archived workspaces then answer the one 404", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace()
        const path = `/api/v1/workspaces/${workspaceId}`
        const sql = yield* SqlClient
        const profileId = crypto.randomUUID()
        yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'p')`

        const admin = yield* member(workspaceId, "admin")
        const byAdmin = yield* asSession(admin.cookie, path, "DELETE")
        assert.strictEqual(byAdmin.status, 403)

        const blocked = yield* asSession(owner.cookie, path, "DELETE")
        assert.strictEqual(blocked.status, 409, blocked.text)
        assert.strictEqual(blocked.json.error.code, "invalid_state")

        yield* sql`UPDATE profiles SET archived_at = now() WHERE id = ${profileId}`
        const archived = yield* asSession(owner.cookie, path, "DELETE")
        assert.strictEqual(archived.status, 200, archived.text)
        assert.strictEqual(archived.json.data.archived, true)
        assert.strictEqual(archived.json.data.workspace_id, workspaceId)

        const listed = yield* asSession(owner.cookie, "/api/v1/workspaces")
        assert.notInclude(listed.json.data.map((w: any) => w.workspace_id), workspaceId)
        assertSameNotFound([
          yield* asSession(owner.cookie, path, "DELETE"),
          yield* asSession(owner.cookie, `${path}/mcp-settings`),
          yield* asSession(owner.cookie, `/api/v1/workspaces/${crypto.randomUUID()}/mcp-settings`)
        ])
      }))

    it.effect("an app cannot archive, even a workspace it created (403)", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const created = yield* asApp(app, "/api/v1/workspaces", "POST", {})
        const refused = yield* asApp(app, `/api/v1/workspaces/${created.json.data.workspace_id}`, "DELETE")
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }))
  })

  describe("GET .../pii-access-log and .../reports/hub", () => {
    it.effect("owner/admin read the last 365 days newest first, by keyset; an analyst is 403", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace()
        const sql = yield* SqlClient
        const entry = (daysAgo: number, route: string) =>
          sql`INSERT INTO pii_access_log (id, occurred_at, workspace_id, actor_kind, actor_id, route, result)
              VALUES (${crypto.randomUUID()}, now() - make_interval(days => ${daysAgo}), ${workspaceId}, 'api_key', 'k1',
                      ${route}, 'allowed')`
        yield* entry(400, "/too-old")
        yield* entry(10, "/older")
        yield* entry(1, "/newer")
        const path = `/api/v1/workspaces/${workspaceId}/pii-access-log`
        const page1 = yield* asSession(owner.cookie, `${path}?limit=1`)
        assert.strictEqual(page1.status, 200, page1.text)
        assert.deepStrictEqual(page1.json.data.map((row: any) => row.route), ["/newer"])
        assert.strictEqual(page1.json.data[0].actor_kind, "api_key")
        assert.strictEqual(page1.json.pagination.has_next, true)
        const page2 = yield* asSession(owner.cookie, `${path}?limit=1&cursor=${page1.json.pagination.cursor}`)
        assert.deepStrictEqual(page2.json.data.map((row: any) => row.route), ["/older"])
        assert.strictEqual(page2.json.pagination.has_next, false)

        const analyst = yield* member(workspaceId, "analyst")
        assert.strictEqual((yield* asSession(analyst.cookie, path)).status, 403)
        const stranger = yield* person()
        assert.strictEqual((yield* asSession(stranger.cookie, path)).status, 404)
      }))

    it.effect("capabilities follow the role (and a user token's grant)", () =>
      Effect.gen(function*() {
        const { owner, workspaceId } = yield* ownedWorkspace()
        const path = `/api/v1/workspaces/${workspaceId}/reports/hub`
        const ofOwner = yield* asSession(owner.cookie, path)
        assert.strictEqual(ofOwner.status, 200, ofOwner.text)
        assert.deepStrictEqual(ofOwner.json.data, { workspace_id: workspaceId, capabilities: { can_edit: true, can_apply: true } })
        const analyst = yield* member(workspaceId, "analyst")
        assert.deepStrictEqual((yield* asSession(analyst.cookie, path)).json.data.capabilities, { can_edit: false, can_apply: false })
        const readOnly = yield* userToken(owner.userId, ["mcp:read"])
        assert.deepStrictEqual((yield* asBearer(readOnly, path)).json.data.capabilities, { can_edit: false, can_apply: false })
        const writer = yield* userToken(owner.userId, ["mcp:write"])
        assert.deepStrictEqual((yield* asBearer(writer, path)).json.data.capabilities, { can_edit: true, can_apply: true })
        const stranger = yield* person()
        assert.strictEqual((yield* asSession(stranger.cookie, path)).status, 404)
      }))
  })
})
