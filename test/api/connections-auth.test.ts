import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AUTH_CACHE_TTL_MILLIS } from "../../src/accounts/credentials/service.ts"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { connectBroker } from "../support/analytics.ts"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } })

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("API keys and GET /api/v1/connections", (it) => {
  describe("an API key authenticates for its profile", () => {
    it.effect("lists the profile's connections in the page shape, with delivers_spend", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["connections:read"] })
        const empty = yield* call("/api/v1/connections", bearer(key))
        assert.strictEqual(empty.status, 200)
        assert.deepStrictEqual(empty.json, { data: [], pagination: { has_next: false, cursor: null } })
        assert.strictEqual(empty.headers.get("x-ratelimit-limit"), "60")

        const sql = yield* SqlClient
        const connectionId = crypto.randomUUID()
        yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind, display_name)
                   VALUES (${connectionId}, ${profile.profileId}, 'adplatform', 'adplatform', 'Ad account')`
        const other = yield* seedProfile()
        yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind)
                   VALUES (${crypto.randomUUID()}, ${other.profileId}, 'crm', 'crm')`
        const one = yield* call("/api/v1/connections", bearer(key))
        assert.deepStrictEqual(one.json.data.map((c: { id: string }) => c.id), [connectionId])
        // A profile a person created has every feature, so its ad account delivers spend.
        assert.strictEqual(one.json.data[0].delivers_spend, true)
        // An app-provisioned one delivers spend only while the app keeps the add-on on.
        const broker = yield* connectBroker(profile, ["connections:read"])
        const off = yield* call("/api/v1/connections", bearer(broker))
        assert.strictEqual(off.json.data[0].delivers_spend, false)
        yield* sql`INSERT INTO entitlements (profile_id, feature, enabled) VALUES (${profile.profileId}, 'svc_attribution', true)`
        const entitled = yield* call("/api/v1/connections", bearer(broker))
        assert.strictEqual(entitled.json.data[0].delivers_spend, true)
      }))

    it.effect("a key without connections:read is 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const { key } = yield* seedApiKey(yield* seedProfile(), { scopes: ["analytics:read"] })
        const response = yield* call("/api/v1/connections", bearer(key))
        assert.strictEqual(response.status, 403)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
        assert.include(response.json.error.message, "connections:read")
      }))

    it.effect("malformed, unknown, expired keys and keys of an archived profile answer the same 401", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const expired = yield* seedApiKey(profile, { scopes: ["connections:read"], expiresInSeconds: -1 })
        const archived = yield* seedProfile()
        const archivedKey = yield* seedApiKey(archived, { scopes: ["connections:read"] })
        const sql = yield* SqlClient
        yield* sql`UPDATE profiles SET archived_at = now() WHERE id = ${archived.profileId}`
        const answers = []
        for (const key of ["svc_live_nope", mintSecret(CredentialPrefix.apiKey), expired.key, archivedKey.key]) {
          const response = yield* call("/api/v1/connections", bearer(key))
          assert.strictEqual(response.status, 401, key)
          answers.push(withoutRequestId(response.text))
        }
        assert.strictEqual(new Set(answers).size, 1)
      }))

    it.effect("a revoked key stops authenticating within the auth cache's lifetime", () =>
      Effect.gen(function*() {
        const { id, key } = yield* seedApiKey(yield* seedProfile(), { scopes: ["connections:read"] })
        assert.strictEqual((yield* call("/api/v1/connections", bearer(key))).status, 200)
        const sql = yield* SqlClient
        yield* sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${id}`
        const revokedAt = Date.now()
        const { status } = yield* eventually(call("/api/v1/connections", bearer(key)), (answer) => answer.status !== 200, {
          what: "the revoked key to be refused",
          within: "15 seconds",
          every: "250 millis"
        })
        const elapsed = Date.now() - revokedAt
        assert.strictEqual(status, 401)
        assert.isAtMost(elapsed, AUTH_CACHE_TTL_MILLIS + 1_000)
      }), 30_000)
  })

  describe("revocation through a revoke route is instant on the revoking runner", () => {
    it.effect("a key revoked with DELETE .../api-keys/{id} answers 401 on the very next request", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { id, key } = yield* seedApiKey(profile, { scopes: ["connections:read"] })
        const owner = yield* seedMemberSession(profile, "owner")
        assert.strictEqual((yield* call("/api/v1/connections", bearer(key))).status, 200, "now cached")
        const revoked = yield* call(`/api/v1/workspaces/${profile.workspaceId}/api-keys/${id}`, {
          method: "DELETE",
          headers: owner.headers
        })
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual((yield* call("/api/v1/connections", bearer(key))).status, 401)
      }))
  })

  describe("a session names the profile with ?profile_id=", () => {
    it.effect("a member reaches the profile; an unreachable and an unknown profile answer the same 404", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { cookie } = yield* seedMemberSession(profile, "analyst")
        const ok = yield* call(`/api/v1/connections?profile_id=${profile.profileId}`, { headers: { cookie } })
        assert.strictEqual(ok.status, 200)
        const missing = yield* call("/api/v1/connections", { headers: { cookie } })
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.json.error.code, "invalid_request")
        const foreign = yield* seedProfile()
        const unreachable = yield* call(`/api/v1/connections?profile_id=${foreign.profileId}`, { headers: { cookie } })
        const unknown = yield* call(`/api/v1/connections?profile_id=${crypto.randomUUID()}`, { headers: { cookie } })
        assert.strictEqual(unreachable.status, 404)
        assert.strictEqual(withoutRequestId(unreachable.text), withoutRequestId(unknown.text))
        const guest = yield* seedMemberSession(profile, "guest")
        const guestAnswer = yield* call(`/api/v1/connections?profile_id=${profile.profileId}`, { headers: { cookie: guest.cookie } })
        assert.strictEqual(guestAnswer.status, 404, "a guest reaches only the profiles named for it")
      }))

    it.effect("what a guest may do follows its profile role and permission keys", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const sql = yield* SqlClient
        const viewer = yield* seedMemberSession(profile, "guest")
        yield* sql`INSERT INTO profile_memberships (profile_id, user_id, role) VALUES (${profile.profileId}, ${viewer.userId}, 'viewer')`
        const path = `/api/v1/connections?profile_id=${profile.profileId}`
        assert.strictEqual((yield* call(path, { headers: { cookie: viewer.cookie } })).status, 200, "view:dashboard reads connections")
        const narrowed = yield* seedMemberSession(profile, "guest")
        yield* sql`INSERT INTO profile_memberships (profile_id, user_id, role, permissions)
                   VALUES (${profile.profileId}, ${narrowed.userId}, 'viewer', ${["view:campaigns"]})`
        const refused = yield* call(path, { headers: { cookie: narrowed.cookie } })
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual(refused.json.error.message, "Your membership on this profile does not allow connections:read.")
      }))
  })

  describe("a user token holds its grant intersected with the membership", () => {
    it.effect("an owner's mcp:read token cannot list connections: the 403 names the grant as the missing half", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* seedMemberSession(profile, "owner")
        const sql = yield* SqlClient
        const token = mintSecret(CredentialPrefix.userToken)
        yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
                   VALUES (${crypto.randomUUID()}, ${owner.userId}, 'svc_user_x', ${secretDigest(token)}, ${["mcp:read"]})`
        const missing = yield* call("/api/v1/connections", bearer(token))
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.json.error.code, "invalid_request")
        const refused = yield* call(`/api/v1/connections?profile_id=${profile.profileId}`, bearer(token))
        assert.strictEqual(refused.status, 403)
        assert.include(refused.json.error.message, "the token's MCP grant does not include connections:read")
        assert.include(refused.json.error.message, "the person's membership allows it")
        const foreign = yield* call(`/api/v1/connections?profile_id=${(yield* seedProfile()).profileId}`, bearer(token))
        assert.strictEqual(foreign.status, 404)
      }))
  })
})
