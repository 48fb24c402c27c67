import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, isWellFormed, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { seedProfile } from "../support/tenancy.ts"

interface App {
  readonly id: string
  readonly clientId: string
  readonly clientSecret: string
}

const FORM = "application/x-www-form-urlencoded"
const CHALLENGE = "Basic realm=\"svc\""
const ANALYTICS = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]

const newApp = Effect.fn("test.newApp")(function*(name: string) {
  const response = yield* call("/api/v1/admin/oauth-apps", {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name, redirect_uris: ["https://partner.example/callback"] })
  })
  assert.strictEqual(response.status, 201)
  const data = response.json.data
  // Soft-deleted at the end of the test, so a shared database's app listing stays short.
  yield* Effect.addFinalizer(() =>
    Effect.ignore(call(`/api/v1/admin/oauth-apps/${data.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }
    }))
  )
  return { id: data.id, clientId: data.client_id, clientSecret: data.client_secret } satisfies App
})

/** A profile in a workspace of its own, and a grant of `connectScopes` to `app` on it. */
const seedGrant = Effect.fn("test.seedGrant")(function*(
  app: App,
  connectScopes: ReadonlyArray<string>,
  options: { readonly healthcareAgency?: boolean; readonly privacyMode?: "standard" | "platform_safe" | "hipaa" } = {}
) {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const grantId = crypto.randomUUID()
  yield* sql`INSERT INTO grants (id, app_id, profile_id, connect_scopes)
             VALUES (${grantId}, ${app.id}, ${profile.profileId}, ${connectScopes})`
  if (options.healthcareAgency === true) {
    yield* sql`UPDATE workspaces SET is_healthcare_agency = true WHERE id = ${profile.workspaceId}`
  }
  if (options.privacyMode !== undefined) {
    yield* sql`UPDATE profiles SET privacy_mode = ${options.privacyMode} WHERE id = ${profile.profileId}`
  }
  return { ...profile, grantId }
})

/** RFC 6749 section 2.3.1: id and secret are form-encoded, then joined and base64-encoded. */
const basic = (clientId: string, clientSecret: string) => {
  const encode = (value: string) => encodeURIComponent(value).replaceAll("%20", "+")
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString("base64")}`
}

const post = (path: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  call(path, { method: "POST", headers: { "content-type": FORM, ...headers }, body: new URLSearchParams(params).toString() })

const tokenBasic = (app: App, params: Record<string, string>) =>
  post("/oauth/token", params, { authorization: basic(app.clientId, app.clientSecret) })

const tokenPost = (app: App, params: Record<string, string>) =>
  post("/oauth/token", { ...params, client_id: app.clientId, client_secret: app.clientSecret })

const clientCredentials = (app: App, profileId: string, extra: Record<string, string> = {}) =>
  tokenBasic(app, { grant_type: "client_credentials", profile_id: profileId, ...extra })

const connections = (key: string) => call("/api/v1/connections", { headers: { authorization: `Bearer ${key}` } })

const keysOfGrant = Effect.fn("test.keysOfGrant")(function*(grantId: string) {
  const sql = yield* SqlClient
  return yield* sql<{ id: string; scopes: Array<string>; revoked_at: Date | null }>`
    SELECT id, scopes, revoked_at FROM api_keys WHERE grant_id = ${grantId} ORDER BY created_at`
})

/** An OAuth error: the RFC 6749 body, never the envelope, with X-Request-Id and no-store. */
const assertOAuthError = (response: { status: number; headers: Headers; json: any }, status: number, error: string) => {
  assert.strictEqual(response.status, status)
  assert.deepStrictEqual(Object.keys(response.json).sort(), ["error", "error_description"])
  assert.strictEqual(response.json.error, error)
  assert.match(response.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{32}$/)
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
}

/** Runs `body` with a trigger on `table` that executes `action` for rows of one profile. */
const withTrigger = <A, E, R>(table: "api_keys" | "audit_events", profileId: string, action: string, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const name = `oauth_test_${crypto.randomUUID().replaceAll("-", "")}`
    yield* sql.unsafe(`
      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.profile_id = '${profileId}'::uuid THEN ${action} END IF;
        RETURN NEW;
      END $$`)
    yield* sql.unsafe(`CREATE TRIGGER ${name} AFTER INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`)
    return yield* body.pipe(
      Effect.ensuring(Effect.orDie(Effect.andThen(
        sql.unsafe(`DROP TRIGGER ${name} ON ${table}`),
        sql.unsafe(`DROP FUNCTION ${name}()`)
      )))
    )
  })

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("POST /oauth/token", (it) => {
  describe("client_credentials", () => {
    it.effect("client_secret_basic mints a key for the profile that authenticates on /api/v1", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token basic")
        const seeded = yield* seedGrant(app, ["connections"])
        const response = yield* clientCredentials(app, seeded.profileId)
        assert.strictEqual(response.status, 200, response.text)
        assert.deepStrictEqual(Object.keys(response.json).sort(), ["access_token", "profile_id", "scope", "token_type"])
        assert.strictEqual(response.json.token_type, "Bearer")
        assert.strictEqual(response.json.scope, "connections:read connections:write")
        assert.strictEqual(response.json.profile_id, seeded.profileId)
        assert.isTrue(isWellFormed(response.json.access_token, CredentialPrefix.apiKey))
        assert.strictEqual(response.headers.get("cache-control"), "no-store")
        assert.strictEqual(response.headers.get("pragma"), "no-cache")
        assert.match(response.headers.get("x-request-id") ?? "", /^req_/)

        const sql = yield* SqlClient
        const [row] = yield* sql<
          { secret_hash: string; oauth_app_id: string; name: string; rate_limit_per_minute: number; workspace_id: string }
        >`SELECT secret_hash, oauth_app_id, name, rate_limit_per_minute, workspace_id FROM api_keys WHERE grant_id = ${seeded.grantId}`
        assert.strictEqual(row?.secret_hash, secretDigest(response.json.access_token))
        assert.strictEqual(row?.oauth_app_id, app.id)
        assert.strictEqual(row?.name, "oauth:client_credentials")
        assert.strictEqual(row?.rate_limit_per_minute, 60)
        assert.strictEqual(row?.workspace_id, seeded.workspaceId)

        const listed = yield* connections(response.json.access_token)
        assert.strictEqual(listed.status, 200, listed.text)
      }))

    it.effect("client_secret_post mints the same way; a JSON body is accepted too", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token post")
        const seeded = yield* seedGrant(app, ["connections"])
        const response = yield* tokenPost(app, { grant_type: "client_credentials", profile_id: seeded.profileId })
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.json.scope, "connections:read connections:write")
        assert.strictEqual((yield* connections(response.json.access_token)).status, 200)

        const json = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            grant_type: "client_credentials",
            profile_id: seeded.profileId,
            client_id: app.clientId,
            client_secret: app.clientSecret
          })
        })
        assert.strictEqual(json.status, 200, json.text)
        assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 2)
      }))

    it.effect("scope narrows the key to a subset of the grant; the answer lists what it holds", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token narrow")
        const seeded = yield* seedGrant(app, ["analytics", "connections"])
        const whole = yield* clientCredentials(app, seeded.profileId)
        assert.strictEqual(whole.json.scope, [...ANALYTICS, "connections:read", "connections:write"].join(" "))

        const narrowed = yield* clientCredentials(app, seeded.profileId, { scope: "connections:read  analytics:read connections:read" })
        assert.strictEqual(narrowed.status, 200, narrowed.text)
        assert.strictEqual(narrowed.json.scope, "analytics:read connections:read")
        assert.strictEqual((yield* connections(narrowed.json.access_token)).status, 200)

        const analyticsOnly = yield* clientCredentials(app, seeded.profileId, { scope: "analytics:read" })
        assert.strictEqual(analyticsOnly.json.scope, "analytics:read")
        const refused = yield* connections(analyticsOnly.json.access_token)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")

        // A parameter without a value counts as absent (RFC 6749 section 3.1).
        const empty = yield* clientCredentials(app, seeded.profileId, { scope: "" })
        assert.strictEqual(empty.json.scope, whole.json.scope)
      }))

    it.effect("a scope outside the grant, or unknown, is invalid_scope and mints nothing", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token invalid scope")
        const seeded = yield* seedGrant(app, ["connections"])
        for (const scope of ["customers:read", "connections:read analytics:read", "nope:read", " "]) {
          const response = yield* clientCredentials(app, seeded.profileId, { scope })
          assertOAuthError(response, 400, "invalid_scope")
        }
        assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0)
      }))

    it.effect("unknown, malformed, foreign and archived profiles and a revoked grant answer the same invalid_grant", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* newApp("Token grants")
        const other = yield* newApp("Token grants, other app")
        const foreign = yield* seedGrant(other, ["connections"])
        const ungranted = yield* seedProfile()
        const archived = yield* seedGrant(app, ["connections"])
        yield* sql`UPDATE profiles SET archived_at = now() WHERE id = ${archived.profileId}`
        const revoked = yield* seedGrant(app, ["connections"])
        yield* sql`UPDATE grants SET revoked_at = now() WHERE id = ${revoked.grantId}`

        const answers = []
        for (
          const profileId of [
            crypto.randomUUID(),
            "not-a-uuid",
            foreign.profileId,
            ungranted.profileId,
            archived.profileId,
            revoked.profileId
          ]
        ) {
          const response = yield* clientCredentials(app, profileId)
          assertOAuthError(response, 400, "invalid_grant")
          answers.push(response.text)
        }
        assert.strictEqual(new Set(answers).size, 1, answers.join("\n"))
        for (const seeded of [foreign, archived, revoked]) assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0)
      }))

    it.effect("malformed requests answer invalid_request or unsupported_grant_type in the OAuth format", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token malformed")
        const seeded = yield* seedGrant(app, ["connections"])
        assertOAuthError(yield* tokenBasic(app, { profile_id: seeded.profileId }), 400, "invalid_request")
        assertOAuthError(yield* tokenBasic(app, { grant_type: "client_credentials" }), 400, "invalid_request")
        // authorization_code is served (decision 0022): without a code it is invalid_request.
        assertOAuthError(yield* tokenBasic(app, { grant_type: "authorization_code", redirect_uri: "https://partner.example/callback" }), 400, "invalid_request")
        for (const grantType of ["password", "refresh_token", "implicit"]) {
          assertOAuthError(
            yield* tokenBasic(app, { grant_type: grantType, profile_id: seeded.profileId }),
            400,
            "unsupported_grant_type"
          )
        }
        const repeated = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": FORM, authorization: basic(app.clientId, app.clientSecret) },
          body: `grant_type=client_credentials&profile_id=${seeded.profileId}&profile_id=${seeded.profileId}`
        })
        assertOAuthError(repeated, 400, "invalid_request")
        const text = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": "text/plain", authorization: basic(app.clientId, app.clientSecret) },
          body: "grant_type=client_credentials"
        })
        assertOAuthError(text, 400, "invalid_request")
        const notJson = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basic(app.clientId, app.clientSecret) },
          body: "{"
        })
        assertOAuthError(notJson, 400, "invalid_request")
        assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0)
      }))
  })

  describe("client authentication", () => {
    it.effect("a wrong secret is 401 invalid_client, with the Basic challenge", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token wrong secret")
        const seeded = yield* seedGrant(app, ["connections"])
        const params = { grant_type: "client_credentials", profile_id: seeded.profileId }
        const wrong = mintSecret(CredentialPrefix.clientSecret)
        const viaBasic = yield* post("/oauth/token", params, { authorization: basic(app.clientId, wrong) })
        assertOAuthError(viaBasic, 401, "invalid_client")
        assert.strictEqual(viaBasic.headers.get("www-authenticate"), CHALLENGE)

        const viaPost = yield* post("/oauth/token", { ...params, client_id: app.clientId, client_secret: wrong })
        assertOAuthError(viaPost, 401, "invalid_client")

        // Unknown client, malformed secret and wrong secret are one answer.
        const unknownClient = yield* post("/oauth/token", params, { authorization: basic("svc_app_unknown", app.clientSecret) })
        const malformed = yield* post("/oauth/token", params, { authorization: basic(app.clientId, "svc_secret_short") })
        assert.strictEqual(unknownClient.text, viaBasic.text)
        assert.strictEqual(malformed.text, viaBasic.text)
        assert.strictEqual(viaPost.text, viaBasic.text)
        assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0)
      }))

    it.effect("no client authentication is 401; both methods at once is invalid_request", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token auth methods")
        const seeded = yield* seedGrant(app, ["connections"])
        const params = { grant_type: "client_credentials", profile_id: seeded.profileId }
        const none = yield* post("/oauth/token", params)
        assertOAuthError(none, 401, "invalid_client")
        assert.strictEqual(none.headers.get("www-authenticate"), CHALLENGE)
        assertOAuthError(yield* post("/oauth/token", { ...params, client_id: app.clientId }), 401, "invalid_client")
        assertOAuthError(
          yield* post("/oauth/token", params, { authorization: "Bearer svc_live_whatever" }),
          401,
          "invalid_client"
        )
        assertOAuthError(yield* post("/oauth/token", params, { authorization: "Basic %%%" }), 401, "invalid_client")

        const both = yield* post(
          "/oauth/token",
          { ...params, client_id: app.clientId, client_secret: app.clientSecret },
          { authorization: basic(app.clientId, app.clientSecret) }
        )
        assertOAuthError(both, 400, "invalid_request")
        const mismatched = yield* post("/oauth/token", { ...params, client_id: "svc_app_other" }, {
          authorization: basic(app.clientId, app.clientSecret)
        })
        assertOAuthError(mismatched, 400, "invalid_request")
        assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0)
      }))

    it.effect("a deleted app and a rotated-away secret stop authenticating at once", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token rotated")
        const seeded = yield* seedGrant(app, ["connections"])
        assert.strictEqual((yield* clientCredentials(app, seeded.profileId)).status, 200)
        const rotated = yield* call(`/api/v1/admin/oauth-apps/${app.id}/rotate-client-secret`, {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }
        })
        assertOAuthError(yield* clientCredentials(app, seeded.profileId), 401, "invalid_client")
        const renewed = { ...app, clientSecret: rotated.json.data.client_secret }
        assert.strictEqual((yield* clientCredentials(renewed, seeded.profileId)).status, 200)
        yield* call(`/api/v1/admin/oauth-apps/${app.id}`, { method: "DELETE", headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
        assertOAuthError(yield* clientCredentials(renewed, seeded.profileId), 401, "invalid_client")
      }))
  })

  describe("healthcare-family profiles (S5)", () => {
    it.effect("keys never carry customers:read or visitors:read, even from analytics_pii or attribution", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token healthcare")
        const agency = yield* seedGrant(app, ["analytics_pii"], { healthcareAgency: true })
        const response = yield* clientCredentials(app, agency.profileId)
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.json.scope, ANALYTICS.join(" "))
        const [row] = yield* keysOfGrant(agency.grantId)
        assert.deepStrictEqual(row?.scopes, ANALYTICS)

        for (const privacyMode of ["platform_safe", "hipaa"] as const) {
          const seeded = yield* seedGrant(app, ["attribution"], { privacyMode })
          const minted = yield* clientCredentials(app, seeded.profileId)
          assert.strictEqual(minted.status, 200, minted.text)
          const scopes: Array<string> = minted.json.scope.split(" ")
          assert.notInclude(scopes, "customers:read")
          assert.notInclude(scopes, "visitors:read")
          assert.include(scopes, "conversions:read")
        }

        // Asking only for what is withheld leaves nothing to mint.
        assertOAuthError(yield* clientCredentials(app, agency.profileId, { scope: "customers:read" }), 400, "invalid_scope")
        const narrowed = yield* clientCredentials(app, agency.profileId, { scope: "customers:read analytics:read" })
        assert.strictEqual(narrowed.json.scope, "analytics:read")

        const standard = yield* seedGrant(app, ["analytics_pii"])
        const pii = yield* clientCredentials(app, standard.profileId)
        assert.strictEqual(pii.json.scope, [...ANALYTICS, "customers:read", "visitors:read"].join(" "))
      }))

    it.effect("S5.4: a profile that turns healthcare-family while the key is created gets a narrowed key", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token recheck")
        const seeded = yield* seedGrant(app, ["analytics_pii"])
        // Stands in for a concurrent switch: the mode changes between the first read and the re-check.
        const response = yield* withTrigger(
          "api_keys",
          seeded.profileId,
          "UPDATE profiles SET privacy_mode = 'hipaa' WHERE id = NEW.profile_id;",
          clientCredentials(app, seeded.profileId)
        )
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.json.scope, ANALYTICS.join(" "))
        const [row] = yield* keysOfGrant(seeded.grantId)
        assert.deepStrictEqual(row?.scopes, ANALYTICS)
        const sql = yield* SqlClient
        const audited = yield* sql<{ details: { narrowed_after_mint?: boolean } }>`
          SELECT details FROM audit_events WHERE action = 'api_key.issued' AND target_id = ${row?.id ?? ""}`
        assert.strictEqual(audited[0]?.details.narrowed_after_mint, true)
      }))

    it.effect("a database failure while minting answers server_error (500) and leaves no key", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Token outage")
        const seeded = yield* seedGrant(app, ["analytics_pii"])
        // While writing the key, and after it (the audit row is the mint's last write).
        for (const table of ["api_keys", "audit_events"] as const) {
          const response = yield* withTrigger(
            table,
            seeded.profileId,
            "RAISE EXCEPTION 'simulated outage' USING ERRCODE = '57014';",
            clientCredentials(app, seeded.profileId)
          )
          assertOAuthError(response, 500, "server_error")
          assert.strictEqual(response.headers.get("pragma"), "no-cache")
          assert.strictEqual((yield* keysOfGrant(seeded.grantId)).length, 0, table)
        }
        assert.strictEqual((yield* clientCredentials(app, seeded.profileId)).status, 200)
      }))
  })
})

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("POST /oauth/revoke", (it) => {
  const revoke = (app: App, params: Record<string, string>) =>
    post("/oauth/revoke", params, { authorization: basic(app.clientId, app.clientSecret) })

  it.effect("revokes the app's own key: 200 with an empty body, and the key stops authenticating", () =>
    Effect.gen(function*() {
      const app = yield* newApp("Revoke own")
      const seeded = yield* seedGrant(app, ["connections"])
      const key: string = (yield* clientCredentials(app, seeded.profileId)).json.access_token
      assert.strictEqual((yield* connections(key)).status, 200)

      const response = yield* revoke(app, { token: key, token_type_hint: "access_token" })
      assert.strictEqual(response.status, 200, response.text)
      assert.strictEqual(response.text, "")
      assert.match(response.headers.get("x-request-id") ?? "", /^req_/)
      const [row] = yield* keysOfGrant(seeded.grantId)
      assert.isNotNull(row?.revoked_at)

      // Revocation reaches every runner within the 5 s auth cache.
      const { status } = yield* eventually(connections(key), (answer) => answer.status !== 200, {
        what: "the revoked token to be refused",
        within: "10 seconds",
        every: "250 millis"
      })
      assert.strictEqual(status, 401)

      const again = yield* post("/oauth/revoke", { token: key, client_id: app.clientId, client_secret: app.clientSecret })
      assert.strictEqual(again.status, 200)
      assert.strictEqual(again.text, "")
    }), { timeout: 30_000 })

  it.effect("unknown tokens and another app's keys answer 200 and stay untouched", () =>
    Effect.gen(function*() {
      const app = yield* newApp("Revoke unknown")
      const other = yield* newApp("Revoke other")
      const seeded = yield* seedGrant(other, ["connections"])
      const othersKey: string = (yield* clientCredentials(other, seeded.profileId)).json.access_token

      for (const token of [mintSecret(CredentialPrefix.apiKey), "not-a-token", othersKey]) {
        const response = yield* revoke(app, { token })
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.text, "")
      }
      const [row] = yield* keysOfGrant(seeded.grantId)
      assert.isNull(row?.revoked_at)
      assert.strictEqual((yield* connections(othersKey)).status, 200)
    }))

  it.effect("client authentication failures are 401 invalid_client; a missing token is invalid_request", () =>
    Effect.gen(function*() {
      const app = yield* newApp("Revoke auth")
      const seeded = yield* seedGrant(app, ["connections"])
      const key: string = (yield* clientCredentials(app, seeded.profileId)).json.access_token
      const wrong = yield* post("/oauth/revoke", { token: key }, {
        authorization: basic(app.clientId, mintSecret(CredentialPrefix.clientSecret))
      })
      assertOAuthError(wrong, 401, "invalid_client")
      assert.strictEqual(wrong.headers.get("www-authenticate"), CHALLENGE)
      assertOAuthError(yield* post("/oauth/revoke", { token: key }), 401, "invalid_client")
      assertOAuthError(yield* revoke(app, {}), 400, "invalid_request")
      const [row] = yield* keysOfGrant(seeded.grantId)
      assert.isNull(row?.revoked_at)
    }))

  it.effect("both operations are published with the app-client policy and the OAuth error format", () =>
    Effect.gen(function*() {
      const spec = (yield* call("/api/v1/openapi.json")).json
      for (const path of ["/oauth/token", "/oauth/revoke"]) {
        const op = spec.paths[path].post
        assert.deepStrictEqual(op["x-auth"], ["app_client"], path)
        assert.deepStrictEqual(op["x-scopes"], [], path)
        assert.strictEqual(op["x-idempotency"], "none", path)
        assert.strictEqual(op["x-scope-grain"], "app", path)
        assert.deepStrictEqual(op.security, [{ appClientBasic: [] }, {}], path)
        assert.property(op.requestBody.content, FORM, path)
        // Only the OAuth format: the envelope-answering middleware does not run on /oauth/*.
        assert.deepStrictEqual(Object.keys(op.responses).sort(), ["200", "400", "401", "500"], path)
        assert.notInclude(JSON.stringify(op.responses), "ErrorEnvelope", path)
        assert.property(op.responses["401"].headers, "www-authenticate", path)
      }
      assert.property(spec.paths["/oauth/token"].post.responses["200"].headers, "cache-control")
    }))
})
