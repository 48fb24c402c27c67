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

  it.effect("GET /api/v1/me/profiles: the live profiles the person reaches, with role and scopes; sessions only", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      // Analyst of workspace A (reaches every live profile); guest of B on one profile with one permission.
      const a = yield* seedProfile({ name: "A main" })
      const member = yield* seedMemberSession(a, "analyst")
      const aSecond = crypto.randomUUID()
      const aArchived = crypto.randomUUID()
      yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${aSecond}, ${a.workspaceId}, 'A second', 'EUR')`
      yield* sql`INSERT INTO profiles (id, workspace_id, name, archived_at) VALUES (${aArchived}, ${a.workspaceId}, 'A archived', now())`
      const b = yield* seedProfile({ name: "B" })
      const bOther = crypto.randomUUID()
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${bOther}, ${b.workspaceId}, 'B other')`
      yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${b.workspaceId}, ${member.userId}, 'guest')`
      yield* sql`INSERT INTO profile_memberships (profile_id, user_id, role, permissions)
                 VALUES (${b.profileId}, ${member.userId}, 'viewer', ${["view:campaigns"]})`
      // A workspace the person is not in.
      yield* seedProfile({ name: "C" })

      const answer = yield* call("/api/v1/me/profiles", { headers: { cookie: member.cookie } })
      assert.strictEqual(answer.status, 200)
      const rows = answer.json.data as ReadonlyArray<Record<string, unknown>>
      assert.deepStrictEqual(rows.map((row) => [row["name"], row["workspace_role"], row["profile_role"]]), [
        ["A main", "analyst", null],
        ["A second", "analyst", null],
        ["B", "guest", "viewer"]
      ])
      assert.deepStrictEqual(rows[1], {
        profile_id: aSecond,
        name: "A second",
        workspace_id: a.workspaceId,
        workspace_name: "A main",
        currency: "EUR",
        time_zone: "UTC",
        workspace_role: "analyst",
        profile_role: null,
        scopes: [
          "analytics:read", "campaigns:read", "conversions:read", "realtime:read", "customers:read", "visitors:read",
          "exports:read", "commerce:read", "connections:read", "conversations:read"
        ]
      })
      assert.deepStrictEqual(rows[2]?.["scopes"], ["campaigns:read"])

      // An API key is no person: refused; nobody signed in is 401.
      const { key } = yield* seedApiKey(a, { scopes: ["analytics:read"] })
      assert.strictEqual((yield* call("/api/v1/me/profiles", { headers: { authorization: `Bearer ${key}` } })).status, 403)
      assert.strictEqual((yield* call("/api/v1/me/profiles")).status, 401)
    }))
})
