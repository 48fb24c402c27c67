import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, isWellFormed, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings, withoutRequestId } from "../support/app.ts"

const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` }
const post = (path: string, body: unknown, headers: Record<string, string> = operator) =>
  call(path, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) })
const patch = (path: string, body: unknown) =>
  call(path, { method: "PATCH", headers: { ...operator, "content-type": "application/json" }, body: JSON.stringify(body) })
const get = (path: string) => call(path, { headers: operator })
const del = (path: string) => call(path, { method: "DELETE", headers: operator })

const newApp = (name: string, extra: Record<string, unknown> = {}) =>
  post("/api/v1/admin/oauth-apps", { name, redirect_uris: ["https://partner.example/callback"], ...extra })


layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("operator surface: OAuth apps", (it) => {
  it.effect("create answers 201 with the settings and both secrets, shown once", () =>
    Effect.gen(function*() {
      const response = yield* newApp("Partner One", { allowed_return_origins: ["https://app.partner.example/"] })
      assert.strictEqual(response.status, 201)
      const data = response.json.data
      assert.match(data.id, /^[0-9a-f-]{36}$/)
      assert.match(data.client_id, /^svc_app_[0-9A-Za-z]{24}$/)
      assert.isTrue(isWellFormed(data.client_secret, CredentialPrefix.clientSecret))
      assert.isAtLeast(data.jwt_secret.length, 43)
      assert.deepStrictEqual(data.redirect_uris, ["https://partner.example/callback"])
      assert.deepStrictEqual(data.allowed_return_origins, ["https://app.partner.example"])
      assert.deepStrictEqual(data.effective_return_origins, ["https://partner.example", "https://app.partner.example"])
      assert.strictEqual(data.profile_resolution, "email")
      assert.strictEqual(data.rate_tier, "standard")
      assert.isNull(data.owner_workspace_id)
      assert.strictEqual(data.dpa_status, "not_accepted")
      assert.isNull(data.dpa_version)
      assert.isNull(data.dpa_accepted_at)
      assert.isNull(data.dpa_accepted_by)

      const read = yield* get(`/api/v1/admin/oauth-apps/${data.id}`)
      assert.strictEqual(read.status, 200)
      assert.notProperty(read.json.data, "client_secret")
      assert.notProperty(read.json.data, "jwt_secret")
      assert.notInclude(read.text, data.client_secret)
      assert.notInclude(read.text, data.jwt_secret)
      assert.deepStrictEqual(read.json.data.effective_return_origins, data.effective_return_origins)
    }))

  it.effect("secrets are stored only as a digest (client secret) or encrypted (JWT secret)", () =>
    Effect.gen(function*() {
      const created = (yield* newApp("Stored")).json.data
      const sql = yield* SqlClient
      const [row] = yield* sql<{ client_secret_hash: string; jwt_secret_encrypted: string; everything: string }>`
        SELECT client_secret_hash, jwt_secret_encrypted, row_to_json(oauth_apps)::text AS everything
        FROM oauth_apps WHERE id = ${created.id}`
      assert.isDefined(row)
      if (row === undefined) return
      assert.strictEqual(row.client_secret_hash, secretDigest(created.client_secret))
      assert.notInclude(row.everything, created.client_secret)
      assert.notInclude(row.everything, created.jwt_secret)
      const box = yield* SecretBox
      assert.strictEqual(box.open(row.jwt_secret_encrypted), created.jwt_secret)
    }))

  it.effect("bad input is 400 validation_error naming the field, and writes nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const count = () => Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_apps`, (rows) => rows[0]?.n)
      const before = yield* count()
      const cases: ReadonlyArray<[unknown, string]> = [
        [{ redirect_uris: ["https://a.example/cb"] }, "body.name: Missing key"],
        [{ name: "x", redirect_uris: ["http://a.example/cb"] }, "body.redirect_uris.0: Expected https (http only for localhost)"],
        [{ name: "x", redirect_uris: ["https://a.example/cb#frag"] }, "body.redirect_uris.0: A redirect URI has no fragment"],
        [{ name: "x", redirect_uris: [] }, "body.redirect_uris: "],
        [{ name: "x", redirect_uris: ["https://a.example/cb"], allowed_return_origins: ["https://a.example/path"] },
          "body.allowed_return_origins.0: An origin has no path, query or fragment"],
        [{ name: "x", redirect_uris: ["https://a.example/cb"], profile_resolution: "phone" }, "body.profile_resolution: "],
        [{ name: "x", redirect_uris: ["https://a.example/cb"], owner_workspace_id: crypto.randomUUID() },
          "body.owner_workspace_id: no such workspace"]
      ]
      for (const [body, message] of cases) {
        const response = yield* post("/api/v1/admin/oauth-apps", body)
        assert.strictEqual(response.status, 400, JSON.stringify(body))
        assert.strictEqual(response.json.error.code, "validation_error")
        assert.isTrue(response.json.error.message.startsWith(message), `${response.json.error.message} / ${message}`)
      }
      assert.strictEqual(yield* count(), before)
    }))

  it.effect("only the operator token reaches the surface: 401 without it or with another credential", () =>
    Effect.gen(function*() {
      for (const headers of [{}, { authorization: "Bearer nope" }, { authorization: "Basic c3ZjX2FwcDp4" }]) {
        const response = yield* post("/api/v1/admin/oauth-apps", { name: "x", redirect_uris: ["https://a.example/cb"] }, headers)
        assert.strictEqual(response.status, 401)
        assert.strictEqual(response.json.error.code, "unauthorized")
      }
    }))

  it.effect("list pages by cursor; a cursor it did not answer is 400 invalid_parameter:cursor (decision 0138)", () =>
    Effect.gen(function*() {
      const created: Array<string> = []
      for (const name of ["Page A", "Page B", "Page C"]) created.push((yield* newApp(name)).json.data.id)
      const walk = (limit: number) =>
        Effect.gen(function*() {
          const ids: Array<string> = []
          let cursor: string | null = null
          do {
            const page: any = (yield* get(`/api/v1/admin/oauth-apps?limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`)).json
            assert.isAtMost(page.data.length, limit)
            ids.push(...page.data.map((app: { id: string }) => app.id))
            cursor = page.pagination.cursor
            assert.strictEqual(page.pagination.has_next, cursor !== null)
          } while (cursor !== null)
          return ids
        })
      const bySmallPages = yield* walk(2)
      const byLargePages = yield* walk(100)
      assert.deepStrictEqual(bySmallPages, byLargePages)
      assert.strictEqual(new Set(bySmallPages).size, bySmallPages.length, "no app twice")
      assert.deepStrictEqual(bySmallPages.filter((id) => created.includes(id)), created, "oldest first")
      const refused = yield* get("/api/v1/admin/oauth-apps?limit=2&cursor=garbage")
      assert.strictEqual(refused.status, 400, refused.text)
      assert.strictEqual(refused.json.error.reason, "invalid_parameter:cursor")
      const tooMany = yield* get("/api/v1/admin/oauth-apps?limit=101")
      assert.strictEqual(tooMany.status, 400)
      assert.match(tooMany.json.error.message, /^query\.limit: /)
    }))

  it.effect("patch changes settings; unknown and malformed ids answer the same 404", () =>
    Effect.gen(function*() {
      const created = (yield* newApp("Patch me")).json.data
      const changed = yield* patch(`/api/v1/admin/oauth-apps/${created.id}`, {
        profile_resolution: "external_ref",
        rate_tier: "elevated",
        redirect_uris: ["https://other.example/cb"]
      })
      assert.strictEqual(changed.status, 200)
      assert.strictEqual(changed.json.data.profile_resolution, "external_ref")
      assert.strictEqual(changed.json.data.rate_tier, "elevated")
      assert.deepStrictEqual(changed.json.data.effective_return_origins, ["https://other.example"])
      assert.strictEqual(changed.json.data.name, "Patch me")
      assert.notProperty(changed.json.data, "client_secret")

      const unknown = yield* get(`/api/v1/admin/oauth-apps/${crypto.randomUUID()}`)
      const malformed = yield* get("/api/v1/admin/oauth-apps/not-a-uuid")
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(withoutRequestId(unknown.text), withoutRequestId(malformed.text))
      const patchUnknown = yield* patch(`/api/v1/admin/oauth-apps/${crypto.randomUUID()}`, { name: "x" })
      assert.strictEqual(patchUnknown.status, 404)
    }))

  it.effect("rotations show the new secret once; the old client secret digest is replaced", () =>
    Effect.gen(function*() {
      const created = (yield* newApp("Rotate me")).json.data
      const rotated = yield* post(`/api/v1/admin/oauth-apps/${created.id}/rotate-client-secret`, {})
      assert.strictEqual(rotated.status, 200)
      assert.strictEqual(rotated.json.data.client_id, created.client_id)
      assert.isTrue(isWellFormed(rotated.json.data.client_secret, CredentialPrefix.clientSecret))
      assert.notStrictEqual(rotated.json.data.client_secret, created.client_secret)
      const sql = yield* SqlClient
      const [row] = yield* sql<{ client_secret_hash: string; jwt_secret_encrypted: string }>`
        SELECT client_secret_hash, jwt_secret_encrypted FROM oauth_apps WHERE id = ${created.id}`
      assert.strictEqual(row?.client_secret_hash, secretDigest(rotated.json.data.client_secret))

      const jwt = yield* post(`/api/v1/admin/oauth-apps/${created.id}/rotate-jwt-secret`, {})
      assert.strictEqual(jwt.status, 200)
      assert.notStrictEqual(jwt.json.data.jwt_secret, created.jwt_secret)
      const box = yield* SecretBox
      const [after] = yield* sql<{ jwt_secret_encrypted: string }>`SELECT jwt_secret_encrypted FROM oauth_apps WHERE id = ${created.id}`
      assert.strictEqual(box.open(after?.jwt_secret_encrypted ?? ""), jwt.json.data.jwt_secret)
      const unknown = yield* post(`/api/v1/admin/oauth-apps/${crypto.randomUUID()}/rotate-jwt-secret`, {})
      assert.strictEqual(unknown.status, 404)
    }))

  it.effect("delete removes the app (then 404) and every change is audited", () =>
    Effect.gen(function*() {
      const created = (yield* newApp("Delete me")).json.data
      const deleted = yield* del(`/api/v1/admin/oauth-apps/${created.id}`)
      assert.strictEqual(deleted.status, 200)
      assert.deepStrictEqual(deleted.json.data, { id: created.id, deleted: true, revoked_keys: 0 })
      assert.strictEqual((yield* get(`/api/v1/admin/oauth-apps/${created.id}`)).status, 404)
      assert.strictEqual((yield* del(`/api/v1/admin/oauth-apps/${created.id}`)).status, 404)
      const sql = yield* SqlClient
      const actions = yield* sql<{ action: string; actor_kind: string; request_id: string | null }>`
        SELECT action, actor_kind, request_id FROM audit_events WHERE target_id = ${created.id} ORDER BY occurred_at`
      assert.deepStrictEqual(actions.map((row) => row.action), ["oauth_app.created", "oauth_app.deleted"])
      assert.isTrue(actions.every((row) => row.actor_kind === "operator" && row.request_id?.startsWith("req_")))
    }))
})

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("operator surface: commerce apps", (it) => {
  describe("register, list, kill switch", () => {
    it.effect("create answers 201 without the secret; one live app per store; delete disables it", () =>
      Effect.gen(function*() {
        const shop = `acme-${crypto.randomUUID().slice(0, 8)}`
        const body = { shop, name: "Acme custom app", client_id: "shop-client", client_secret: "shpss_secret_value", scopes: ["read_orders", "read_products"] }
        const created = yield* post("/api/v1/admin/commerce-apps", body)
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.json.data.shop, shop)
        assert.deepStrictEqual(created.json.data.scopes, ["read_orders", "read_products"])
        assert.notInclude(created.text, "shpss_secret_value")
        const again = yield* post("/api/v1/admin/commerce-apps", body)
        assert.strictEqual(again.status, 409)
        assert.strictEqual(again.json.error.code, "invalid_state")
        const listed = yield* get("/api/v1/admin/commerce-apps")
        assert.include(listed.json.data.map((app: { id: string }) => app.id), created.json.data.id)
        assert.notInclude(listed.text, "shpss_secret_value")
        const disabled = yield* del(`/api/v1/admin/commerce-apps/${created.json.data.id}`)
        assert.deepStrictEqual(disabled.json.data, { id: created.json.data.id, disabled: true })
        assert.strictEqual((yield* del(`/api/v1/admin/commerce-apps/${created.json.data.id}`)).status, 404)
        assert.notInclude((yield* get("/api/v1/admin/commerce-apps")).json.data.map((app: { id: string }) => app.id), created.json.data.id)
        const reRegistered = yield* post("/api/v1/admin/commerce-apps", body)
        assert.strictEqual(reRegistered.status, 201)
      }))
  })
})
