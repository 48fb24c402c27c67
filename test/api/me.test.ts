import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("GET /api/v1/me", (it) => {
  it.effect("an app credential sees its app and return_url_supported (its effective return origins)", () =>
    Effect.gen(function*() {
      const app = yield* registerApp()
      const response = yield* call("/api/v1/me", { headers: { authorization: app.basic } })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.json.data.kind, "app_client")
      assert.strictEqual(response.json.data.app.client_id, app.clientId)
      assert.deepStrictEqual(response.json.data.return_url_supported, ["https://partner.example"])
      assert.notInclude(response.text, app.clientSecret)
    }))

  it.effect("an API key sees its profile and scopes; a session sees its person", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      const { id, key } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
      const asKey = yield* call("/api/v1/me", { headers: { authorization: `Bearer ${key}` } })
      assert.deepStrictEqual(asKey.json.data, {
        kind: "api_key",
        key: {
          id,
          profile_id: profile.profileId,
          workspace_id: profile.workspaceId,
          scopes: ["analytics:read"],
          rate_limit_per_minute: 60,
          oauth_app_id: null
        }
      })
      const member = yield* seedMemberSession(profile, "admin")
      const asSession = yield* call("/api/v1/me", { headers: { cookie: member.cookie } })
      assert.strictEqual(asSession.json.data.kind, "session")
      assert.strictEqual(asSession.json.data.user.id, member.userId)
    }))

  it.effect("a user token never reaches /api/v1/me (403 insufficient_scope); no credential is 401", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const member = yield* seedMemberSession(yield* seedProfile(), "admin")
      const token = mintSecret(CredentialPrefix.userToken)
      yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
                 VALUES (${crypto.randomUUID()}, ${member.userId}, ${displayPrefix(token, CredentialPrefix.userToken)},
                         ${secretDigest(token)}, ${["mcp:read", "mcp:write"]})`
      const refused = yield* call("/api/v1/me", { headers: { authorization: `Bearer ${token}` } })
      assert.strictEqual(refused.status, 403)
      assert.strictEqual(refused.json.error.code, "insufficient_scope")
      const anonymous = yield* call("/api/v1/me")
      assert.strictEqual(anonymous.status, 401)
      const spec = (yield* call("/api/v1/openapi.json")).json
      assert.notInclude(spec.paths["/api/v1/me"].get["x-auth"], "user_token")
    }))
})
