import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { SignJWT } from "jose"
import { createHash, randomBytes } from "node:crypto"
import { CredentialPrefix, isWellFormed, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, type HttpResult, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"

const CALLBACK = "https://partner.example/callback"
const OTHER_CALLBACK = "https://partner.example/other?tenant=7"
const FORM = "application/x-www-form-urlencoded"
const ANALYTICS = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]
const CONNECTIONS = ["connections:read", "connections:write"]

interface App {
  readonly id: string
  readonly clientId: string
  readonly clientSecret: string
  readonly jwtSecret: string
  readonly basic: string
}

const newApp = Effect.fn("test.newApp")(function*(
  name: string,
  options: { readonly profileResolution?: "email" | "external_ref" } = {}
) {
  const response = yield* call("/api/v1/admin/oauth-apps", {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      name,
      redirect_uris: [CALLBACK, OTHER_CALLBACK],
      ...(options.profileResolution === undefined ? {} : { profile_resolution: options.profileResolution })
    })
  })
  assert.strictEqual(response.status, 201, response.text)
  const data = response.json.data
  yield* Effect.addFinalizer(() =>
    Effect.ignore(call(`/api/v1/admin/oauth-apps/${data.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` }
    }))
  )
  return {
    id: data.id,
    clientId: data.client_id,
    clientSecret: data.client_secret,
    jwtSecret: data.jwt_secret,
    basic: `Basic ${Buffer.from(`${data.client_id}:${data.client_secret}`).toString("base64")}`
  } satisfies App
})

/** Partner provisioning, through the partner route. */
const provision = Effect.fn("test.provision")(function*(app: App, body: Record<string, unknown>) {
  const response = yield* call("/api/v1/profiles", {
    method: "POST",
    headers: { authorization: app.basic, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  assert.strictEqual(response.status, 201, response.text)
  return { profileId: response.json.data.profile_id as string, workspaceId: response.json.data.workspace_id as string }
})

interface HintOptions {
  readonly secret?: string
  readonly issuer?: string
  readonly subject?: string | null
  readonly expiresAt?: number | null
  readonly alg?: "HS256" | "HS512"
}

/** An id_token_hint the way a partner signs it: HS256 with the app's jwt secret. */
const hint = (app: App, claims: Record<string, unknown>, options: HintOptions = {}) =>
  Effect.promise(() => {
    let jwt = new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? "HS256" }).setIssuer(options.issuer ?? app.clientId)
      .setIssuedAt()
    if (options.subject !== null) jwt = jwt.setSubject(options.subject ?? "partner-user-1")
    if (options.expiresAt !== null) jwt = jwt.setExpirationTime(options.expiresAt ?? Math.floor(Date.now() / 1000) + 300)
    return jwt.sign(new TextEncoder().encode(options.secret ?? app.jwtSecret))
  })

const authorize = (params: Record<string, string>, headers: Record<string, string> = {}) =>
  call(`/oauth/authorize?${new URLSearchParams(params).toString()}`, { redirect: "manual", headers })

const request = (app: App, token: string, extra: Record<string, string> = {}) => ({
  response_type: "code",
  client_id: app.clientId,
  redirect_uri: CALLBACK,
  state: "st-ü 1&2",
  id_token_hint: token,
  ...extra
})

/** The redirect's target without its query, and the query as an object (each parameter once). */
const redirected = (response: HttpResult) => {
  assert.strictEqual(response.status, 302, response.text)
  const location = new URL(response.headers.get("location") ?? "")
  const params: Record<string, string> = {}
  for (const [name, value] of location.searchParams) {
    assert.notProperty(params, name, `${name} appears once`)
    params[name] = value
  }
  return { target: `${location.origin}${location.pathname}`, params }
}

const assertErrorRedirect = (
  response: HttpResult,
  error: string,
  description: string,
  state: string | null = "st-ü 1&2",
  target = CALLBACK
) => {
  const { target: at, params } = redirected(response)
  assert.strictEqual(at, target)
  assert.deepStrictEqual(params, { error, error_description: description, ...(state === null ? {} : { state }) })
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
}

const assertCodeRedirect = (response: HttpResult, state = "st-ü 1&2") => {
  const { target, params } = redirected(response)
  assert.strictEqual(target, CALLBACK)
  assert.deepStrictEqual(Object.keys(params).sort(), ["code", "state"])
  assert.strictEqual(params["state"], state)
  assert.match(params["code"] ?? "", /^[0-9A-Za-z]{43}$/)
  return params["code"] ?? ""
}

/** A page that never redirects. */
const assertPage = (response: HttpResult, status: number) => {
  assert.strictEqual(response.status, status, response.text)
  assert.isNull(response.headers.get("location"))
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/)
  assert.strictEqual(response.headers.get("x-frame-options"), "DENY")
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
  assert.match(response.headers.get("x-request-id") ?? "", /^req_/)
  assert.match(response.text, /^<!doctype html>/)
}

const token = (app: App, params: Record<string, string>) =>
  call("/oauth/token", {
    method: "POST",
    headers: { "content-type": FORM, authorization: app.basic },
    body: new URLSearchParams(params).toString()
  })

const exchange = (app: App, code: string, redirectUri = CALLBACK) =>
  token(app, { grant_type: "authorization_code", code, redirect_uri: redirectUri })

const connections = (key: string) => call("/api/v1/connections", { headers: { authorization: `Bearer ${key}` } })

const assertOAuthError = (response: HttpResult, status: number, error: string) => {
  assert.strictEqual(response.status, status, response.text)
  assert.deepStrictEqual(Object.keys(response.json).sort(), ["error", "error_description"])
  assert.strictEqual(response.json.error, error)
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
}

/** The consent screen's ticket and cookie. */
const consentOf = (response: HttpResult) => {
  assertPage(response, 200)
  const ticket = /name="ticket" value="([0-9A-Za-z]{43})"/.exec(response.text)?.[1]
  assert.isDefined(ticket)
  const [setCookie] = response.headers.getSetCookie()
  assert.isDefined(setCookie)
  assert.match(setCookie ?? "", /^svc_consent_[0-9a-f]{16}=[0-9A-Za-z]{43}; /)
  assert.match(setCookie ?? "", /HttpOnly/)
  assert.match(setCookie ?? "", /SameSite=Lax/)
  assert.match(setCookie ?? "", /Path=\/oauth\/authorize/)
  assert.match(setCookie ?? "", /Secure/)
  return { ticket: ticket ?? "", cookie: (setCookie ?? "").split(";")[0] ?? "" }
}

const answer = (form: Record<string, string>, cookie?: string) =>
  call("/oauth/authorize/consent", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": FORM, ...(cookie === undefined ? {} : { cookie }) },
    body: new URLSearchParams(form).toString()
  })

const grantOf = Effect.fn("test.grantOf")(function*(app: App, profileId: string) {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ id: string; connect_scopes: Array<string>; revoked_at: Date | null }>`
    SELECT id, connect_scopes, revoked_at FROM grants WHERE app_id = ${app.id} AND profile_id = ${profileId}`
  return row
})

const codeRow = Effect.fn("test.codeRow")(function*(code: string) {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ id: string; used_at: Date | null; api_key_id: string | null; profile_id: string }>`
    SELECT id, used_at, api_key_id, profile_id FROM oauth_authorization_codes WHERE code_hash = ${secretDigest(code)}`
  return row
})

const liveKeysOf = Effect.fn("test.liveKeysOf")(function*(app: App, profileId: string) {
  const sql = yield* SqlClient
  return yield* sql<{ id: string; scopes: Array<string> }>`
    SELECT id, scopes FROM api_keys WHERE oauth_app_id = ${app.id} AND profile_id = ${profileId} AND revoked_at IS NULL`
})

/** What the app owns: workspaces it created, profiles it provisioned, memberships in those workspaces. */
const footprint = Effect.fn("test.footprint")(function*(app: App) {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ workspaces: number; profiles: number; memberships: number }>`
    SELECT (SELECT count(*)::int FROM workspaces WHERE created_by_app_id = ${app.id}) AS workspaces,
           (SELECT count(*)::int FROM profiles WHERE provisioned_by_app_id = ${app.id}) AS profiles,
           (SELECT count(*)::int FROM workspace_memberships m JOIN workspaces w ON w.id = m.workspace_id
            WHERE w.created_by_app_id = ${app.id}) AS memberships`
  return row
})

const ref = () => `merchant-${crypto.randomUUID().slice(0, 8)}`

/** A PKCE pair the way a client makes one (RFC 7636 section 4.1, 4.2): 32 random bytes, S256. */
const pkcePair = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

/** Codes and consent tickets the app holds, and every key minted for it, revoked or not. */
const issuedFor = Effect.fn("test.issuedFor")(function*(app: App) {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ codes: number; tickets: number; keys: number }>`
    SELECT (SELECT count(*)::int FROM oauth_authorization_codes WHERE app_id = ${app.id}) AS codes,
           (SELECT count(*)::int FROM oauth_consent_tickets WHERE app_id = ${app.id}) AS tickets,
           (SELECT count(*)::int FROM api_keys WHERE oauth_app_id = ${app.id}) AS keys`
  return row
})

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("GET /oauth/authorize", (it) => {
  describe("requests that are never redirected (RFC 6749 section 4.1.2.1)", () => {
    it.effect("an unknown or missing client_id, or a redirect_uri not exactly registered, answers a 400 page", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize pages")
        const signed = yield* hint(app, { email: "someone@example.com" })
        const cases: Array<Record<string, string>> = [
          { ...request(app, signed), client_id: "svc_app_unknown000000000000000" },
          { ...request(app, signed), redirect_uri: "https://evil.example/callback" },
          { ...request(app, signed), redirect_uri: `${CALLBACK}/` },
          { ...request(app, signed), redirect_uri: "https://partner.example/other" },
          { ...request(app, signed), redirect_uri: "HTTPS://partner.example/callback" }
        ]
        const { client_id: _client, ...withoutClient } = request(app, signed)
        const { redirect_uri: _redirect, ...withoutRedirect } = request(app, signed)
        cases.push(withoutClient, withoutRedirect)
        for (const params of cases) assertPage(yield* authorize(params), 400)

        // Repeated client_id or redirect_uri cannot be trusted either.
        const query = new URLSearchParams(request(app, signed))
        query.append("redirect_uri", "https://evil.example/callback")
        assertPage(yield* call(`/oauth/authorize?${query.toString()}`, { redirect: "manual" }), 400)

        // A deleted app is unknown.
        yield* call(`/api/v1/admin/oauth-apps/${app.id}`, { method: "DELETE", headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
        assertPage(yield* authorize(request(app, signed)), 400)
      }))
  })

  describe("failures redirect with error, error_description and state", () => {
    it.effect("malformed requests, scopes that cannot be granted here, and bad hints", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize redirects")
        const other = yield* newApp("Authorize redirects, other app")
        const signed = yield* hint(app, { email: "someone@example.com" })
        const before = yield* footprint(app)

        const { response_type: _type, ...withoutType } = request(app, signed)
        assertErrorRedirect(yield* authorize(withoutType), "invalid_request", "response_type is required.")
        assertErrorRedirect(
          yield* authorize(request(app, signed, { response_type: "token" })),
          "unsupported_response_type",
          "Only response_type=code is served."
        )
        const repeated = new URLSearchParams(request(app, signed))
        repeated.append("scope", "analytics")
        repeated.append("scope", "connections")
        assertErrorRedirect(
          yield* call(`/oauth/authorize?${repeated.toString()}`, { redirect: "manual" }),
          "invalid_request",
          "Parameter scope is repeated."
        )

        assertErrorRedirect(
          yield* authorize(request(app, signed, { scope: "attribution" })),
          "invalid_scope",
          "attribution is set through the entitlement operation and is never requested."
        )
        assertErrorRedirect(
          yield* authorize(request(app, signed, { scope: "connections nope" })),
          "invalid_scope",
          "The scope names an unknown connect scope."
        )
        assertErrorRedirect(
          yield* authorize(request(app, signed, { scope: "analytics:read" })),
          "invalid_scope",
          "The scope names an unknown connect scope."
        )
        for (const scope of ["chat_app_a", "social_dm", "email", "calendar", "calendar_read", "commerce"]) {
          assertErrorRedirect(
            yield* authorize(request(app, signed, { scope: `connections ${scope}` })),
            "invalid_scope",
            `Provider consent is not served yet: ${scope} cannot be granted through this endpoint.`
          )
        }

        const { id_token_hint: _hint, ...withoutHint } = request(app, signed)
        assertErrorRedirect(yield* authorize(withoutHint), "invalid_request", "id_token_hint is required.")
        const now = Math.floor(Date.now() / 1000)
        const bad: Array<[string, string]> = [
          [yield* hint(app, { email: "a@example.com" }, { secret: other.jwtSecret }), "id_token_hint signature does not verify with this app's jwt secret."],
          [yield* hint(app, { email: "a@example.com" }, { alg: "HS512" }), "id_token_hint must be signed with HS256."],
          [yield* hint(app, { email: "a@example.com" }, { issuer: other.clientId }), "id_token_hint iss must be the client_id."],
          [yield* hint(app, { email: "a@example.com" }, { expiresAt: now - 120 }), "id_token_hint has expired."],
          [yield* hint(app, { email: "a@example.com" }, { expiresAt: null }), "id_token_hint must carry exp."],
          [yield* hint(app, { email: "a@example.com" }, { subject: null }), "id_token_hint must carry sub."],
          ["not.a.jwt", "id_token_hint is not a well-formed signed JWT."],
          [yield* hint(app, {}), "id_token_hint must carry an email claim."],
          [yield* hint(app, { email: "not-an-email" }), "id_token_hint email claim is not an email address."]
        ]
        for (const [token, description] of bad) {
          assertErrorRedirect(yield* authorize(request(app, token)), "invalid_request", description)
        }
        // Within the clock tolerance an expiry is still accepted.
        const lenient = yield* hint(app, { email: "a@example.com" }, { expiresAt: now - 30 })
        assertPage(yield* authorize(request(app, lenient)), 200)

        // Without state, none is added; the other registered redirect URI keeps its own query.
        const { state: _state, ...withoutState } = request(app, signed, { scope: "attribution" })
        assertErrorRedirect(
          yield* authorize(withoutState),
          "invalid_scope",
          "attribution is set through the entitlement operation and is never requested.",
          null
        )
        const elsewhere = yield* authorize(request(app, signed, { scope: "attribution", redirect_uri: OTHER_CALLBACK }))
        const { target, params } = redirected(elsewhere)
        assert.strictEqual(target, "https://partner.example/other")
        assert.strictEqual(params["tenant"], "7")
        assert.strictEqual(params["error"], "invalid_scope")

        assert.deepStrictEqual(yield* footprint(app), before)
      }))
  })

  describe("profile_resolution: external_ref", () => {
    it.effect("a missing, blank or unknown external_ref redirects invalid_request and creates nothing", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize external_ref failures", { profileResolution: "external_ref" })
        const sql = yield* SqlClient
        const archivedRef = ref()
        const archived = yield* provision(app, { external_ref: archivedRef })
        yield* call(`/api/v1/profiles/${archived.profileId}`, { method: "DELETE", headers: { authorization: app.basic } })
        const revokedRef = ref()
        const revoked = yield* provision(app, { external_ref: revokedRef })
        yield* sql`UPDATE grants SET revoked_at = now() WHERE app_id = ${app.id} AND profile_id = ${revoked.profileId}`
        const other = yield* newApp("Authorize external_ref, other app", { profileResolution: "external_ref" })
        const foreignRef = ref()
        yield* provision(other, { external_ref: foreignRef })
        const before = yield* footprint(app)

        for (const claims of [{ email: "a@example.com" }, { external_ref: "   " }, { external_ref: 42 }]) {
          assertErrorRedirect(yield* authorize(request(app, yield* hint(app, claims))), "invalid_request", "external_ref_required")
        }
        for (const externalRef of ["no-such-merchant", archivedRef, revokedRef, foreignRef]) {
          assertErrorRedirect(
            yield* authorize(request(app, yield* hint(app, { external_ref: externalRef }))),
            "invalid_request",
            "unknown_external_ref"
          )
        }
        assert.deepStrictEqual(yield* footprint(app), before)
        const [codes] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_authorization_codes WHERE app_id = ${app.id}`
        assert.strictEqual(codes?.n, 0)
        assert.isNotNull((yield* grantOf(app, revoked.profileId))?.revoked_at, "a revoked grant is not re-granted without a screen")
      }))

    it.effect("a known ref gets a code at once: no screen, no workspace or membership, an audit row, the grant widened", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize external_ref", { profileResolution: "external_ref" })
        const externalRef = ref()
        const profile = yield* provision(app, { external_ref: externalRef, email: "owner@shop.example" })
        const before = yield* footprint(app)
        const signed = yield* hint(app, { external_ref: externalRef, email: "whoever@example.com" })

        const response = yield* authorize(request(app, signed, { scope: "analytics" }))
        const code = assertCodeRedirect(response)
        assert.deepStrictEqual(response.headers.getSetCookie(), [])
        assert.deepStrictEqual(yield* footprint(app), before)
        assert.deepStrictEqual((yield* grantOf(app, profile.profileId))?.connect_scopes, ["connections", "analytics"])

        const sql = yield* SqlClient
        const audits = yield* sql<{ action: string; actor_kind: string; actor_id: string; details: Record<string, unknown> }>`
          SELECT action, actor_kind, actor_id, details FROM audit_events
          WHERE profile_id = ${profile.profileId} AND action = 'oauth.authorized'`
        assert.strictEqual(audits.length, 1)
        assert.strictEqual(audits[0]?.actor_kind, "app_client")
        assert.strictEqual(audits[0]?.actor_id, app.id)
        assert.deepStrictEqual(audits[0]?.details, {
          resolution: "external_ref",
          external_ref: externalRef,
          subject: "partner-user-1",
          requested: ["analytics"],
          scopes: ["connections", "analytics"],
          consent_screen: false
        })
        const stored = yield* codeRow(code)
        assert.strictEqual(stored?.profile_id, profile.profileId)
        assert.isNull(stored?.used_at ?? null)

        // The code buys a key under the grant, like client_credentials.
        const issued = yield* exchange(app, code)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.deepStrictEqual(Object.keys(issued.json).sort(), ["access_token", "profile_id", "scope", "token_type"])
        assert.strictEqual(issued.json.token_type, "Bearer")
        assert.strictEqual(issued.json.profile_id, profile.profileId)
        assert.strictEqual(issued.json.scope, [...CONNECTIONS, ...ANALYTICS].join(" "))
        assert.isTrue(isWellFormed(issued.json.access_token, CredentialPrefix.apiKey))
        assert.strictEqual(issued.headers.get("cache-control"), "no-store")
        assert.strictEqual((yield* connections(issued.json.access_token)).status, 200)
        const [key] = yield* sql<{ name: string; oauth_app_id: string; grant_id: string }>`
          SELECT name, oauth_app_id, grant_id FROM api_keys WHERE secret_hash = ${secretDigest(issued.json.access_token)}`
        assert.deepStrictEqual(key, {
          name: "oauth:authorization_code",
          oauth_app_id: app.id,
          grant_id: (yield* grantOf(app, profile.profileId))?.id ?? ""
        })

        // RFC 6749 section 10.5: a second use is refused and the key minted from the code stops.
        const again = yield* exchange(app, code)
        assertOAuthError(again, 400, "invalid_grant")
        assert.strictEqual((yield* connections(issued.json.access_token)).status, 401)
        const revokedAudit = yield* sql<{ details: Record<string, unknown> }>`
          SELECT details FROM audit_events WHERE action = 'api_key.revoked' AND profile_id = ${profile.profileId}`
        assert.deepStrictEqual(revokedAudit[0]?.details, { via: "authorization_code_replay" })
      }))

    it.effect("a scope already held leaves the grant as it was; attribution is kept", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize external_ref union", { profileResolution: "external_ref" })
        const externalRef = ref()
        const profile = yield* provision(app, { external_ref: externalRef, scopes: ["connections", "analytics"] })
        const sql = yield* SqlClient
        yield* sql`UPDATE grants SET connect_scopes = ${["attribution", "connections", "analytics"]}
                   WHERE app_id = ${app.id} AND profile_id = ${profile.profileId}`
        const signed = yield* hint(app, { external_ref: externalRef })
        assertCodeRedirect(yield* authorize(request(app, signed, { scope: "analytics" })))
        assert.deepStrictEqual((yield* grantOf(app, profile.profileId))?.connect_scopes, ["attribution", "connections", "analytics"])
        assertCodeRedirect(yield* authorize(request(app, signed, { scope: "attribution_write connections" })))
        assert.deepStrictEqual(
          (yield* grantOf(app, profile.profileId))?.connect_scopes,
          ["attribution", "connections", "analytics", "attribution_write"]
        )
      }))

    it.effect("analytics_pii on a healthcare-family profile redirects healthcare_scope_forbidden; the grant stays", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize external_ref healthcare", { profileResolution: "external_ref" })
        const externalRef = ref()
        const profile = yield* provision(app, { external_ref: externalRef, privacy_mode: "hipaa" })
        const signed = yield* hint(app, { external_ref: externalRef })
        assertErrorRedirect(
          yield* authorize(request(app, signed, { scope: "analytics_pii" })),
          "invalid_scope",
          "healthcare_scope_forbidden"
        )
        assert.deepStrictEqual((yield* grantOf(app, profile.profileId))?.connect_scopes, ["connections"])
        const sql = yield* SqlClient
        const [codes] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_authorization_codes WHERE app_id = ${app.id}`
        assert.strictEqual(codes?.n, 0)
      }))
  })

  describe("profile_resolution: email", () => {
    it.effect("the screen names the app, the scope and the matching profiles; approval needs the screen's cookie", () =>
      Effect.gen(function*() {
        const app = yield* newApp("<b>Partner & \"Co\"</b>")
        const first = yield* provision(app, { external_ref: ref(), name: "Shop <One>", email: "Owner@Shop.example" })
        const second = yield* provision(app, { external_ref: ref(), name: "Shop Two", email: "owner@shop.EXAMPLE" })
        yield* provision(app, { external_ref: ref(), name: "Someone else's", email: "other@shop.example" })
        const before = yield* footprint(app)
        // An external_ref claim is ignored in email mode.
        const signed = yield* hint(app, { email: "owner@shop.example", external_ref: "ignored" })

        const screen = yield* authorize(request(app, signed, { scope: "analytics" }))
        const { ticket, cookie } = consentOf(screen)
        assert.include(screen.text, "&lt;b&gt;Partner &amp; &quot;Co&quot;&lt;/b&gt;")
        assert.notInclude(screen.text, "<b>Partner")
        assert.include(screen.text, "Shop &lt;One&gt;")
        assert.include(screen.text, "Shop Two")
        assert.notInclude(screen.text, "Someone else")
        assert.include(screen.text, "<code>analytics</code>")
        assert.include(screen.text, `value="${first.profileId}"`)
        assert.include(screen.text, `value="${second.profileId}"`)
        assert.match(screen.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/)
        assert.match(screen.headers.get("content-security-policy") ?? "", /form-action 'self' https:\/\/partner\.example/)
        assert.strictEqual(screen.headers.get("referrer-policy"), "no-referrer")
        assert.isNull(screen.headers.get("location"))

        // A cross-site post carries no SameSite=Lax cookie: refused, and the ticket stays usable.
        assertPage(yield* answer({ ticket, decision: "approve", profile_id: second.profileId }), 403)
        const wrongCookie = `${cookie.split("=")[0]}=${"x".repeat(43)}`
        assertPage(yield* answer({ ticket, decision: "approve", profile_id: second.profileId }, wrongCookie), 403)
        // A profile that was not offered is refused without spending the ticket.
        assertPage(yield* answer({ ticket, decision: "approve", profile_id: crypto.randomUUID() }, cookie), 400)

        const approved = yield* answer({ ticket, decision: "approve", profile_id: second.profileId }, cookie)
        const code = assertCodeRedirect(approved)
        assert.deepStrictEqual((yield* grantOf(app, second.profileId))?.connect_scopes, ["connections", "analytics"])
        assert.deepStrictEqual((yield* grantOf(app, first.profileId))?.connect_scopes, ["connections"])
        assert.deepStrictEqual(yield* footprint(app), before)

        // Single use.
        assertPage(yield* answer({ ticket, decision: "approve", profile_id: second.profileId }, cookie), 400)
        assertPage(yield* answer({ ticket, decision: "deny" }, cookie), 400)

        const issued = yield* exchange(app, code)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, second.profileId)
        assert.strictEqual(issued.json.scope, [...CONNECTIONS, ...ANALYTICS].join(" "))

        const sql = yield* SqlClient
        const audits = yield* sql<{ details: Record<string, unknown> }>`
          SELECT details FROM audit_events WHERE profile_id = ${second.profileId} AND action = 'oauth.authorized'`
        assert.strictEqual(audits[0]?.details["consent_screen"], true)
        assert.strictEqual(audits[0]?.details["resolution"], "email")
      }))

    it.effect("deny redirects access_denied with state and grants nothing", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize deny")
        const profile = yield* provision(app, { external_ref: ref(), email: "deny@shop.example" })
        const signed = yield* hint(app, { email: "deny@shop.example" })
        const { ticket, cookie } = consentOf(yield* authorize(request(app, signed, { scope: "analytics" })))
        assertErrorRedirect(yield* answer({ ticket, decision: "deny" }, cookie), "access_denied", "The person denied the request.")
        assert.deepStrictEqual((yield* grantOf(app, profile.profileId))?.connect_scopes, ["connections"])
        assertPage(yield* answer({ ticket, decision: "approve" }, cookie), 400)

        // Malformed answers: no ticket, an unknown ticket, no decision.
        assertPage(yield* answer({ decision: "approve" }), 400)
        assertPage(yield* answer({ ticket: "a".repeat(43), decision: "approve" }, cookie), 400)
        const next = consentOf(yield* authorize(request(app, signed)))
        assertPage(yield* answer({ ticket: next.ticket }, next.cookie), 400)
        // An expired ticket.
        const sql = yield* SqlClient
        yield* sql`UPDATE oauth_consent_tickets SET expires_at = now() - interval '1 second'
                   WHERE ticket_hash = ${secretDigest(next.ticket)}`
        assertPage(yield* answer({ ticket: next.ticket, decision: "approve" }, next.cookie), 400)
      }))

    it.effect("with no matching profile, approval creates a workspace and profile owned by the person", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize email-keyed")
        const email = `new-${crypto.randomUUID().slice(0, 8)}@people.example`
        const signed = yield* hint(app, { email, name: "New Shop" })
        const screen = yield* authorize(request(app, signed))
        const { ticket, cookie } = consentOf(screen)
        assert.include(screen.text, "Approving creates a new workspace and profile")
        assert.notInclude(screen.text, "name=\"profile_id\"")
        assert.deepStrictEqual(yield* footprint(app), { workspaces: 0, profiles: 0, memberships: 0 })

        const code = assertCodeRedirect(yield* answer({ ticket, decision: "approve" }, cookie))
        assert.deepStrictEqual(yield* footprint(app), { workspaces: 1, profiles: 1, memberships: 1 })
        const sql = yield* SqlClient
        const [profile] = yield* sql<
          {
            id: string
            name: string
            email: string
            external_ref: string | null
            provisioned_external_ref: string | null
            workspace_id: string
            workspace_name: string
          }
        >`
          SELECT p.id, p.name, p.email, p.external_ref, p.provisioned_external_ref, p.workspace_id, w.name AS workspace_name
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id WHERE p.provisioned_by_app_id = ${app.id}`
        assert.strictEqual(profile?.name, "New Shop")
        assert.strictEqual(profile?.workspace_name, "New Shop")
        assert.strictEqual(profile?.email, email)
        assert.isNull(profile?.external_ref ?? null)
        assert.isNull(profile?.provisioned_external_ref ?? null)
        const [owner] = yield* sql<{ role: string; email: string; password_hash: string | null }>`
          SELECT m.role, u.email, u.password_hash FROM workspace_memberships m JOIN users u ON u.id = m.user_id
          WHERE m.workspace_id = ${profile?.workspace_id ?? ""}`
        assert.deepStrictEqual(owner, { role: "owner", email, password_hash: null })
        assert.deepStrictEqual((yield* grantOf(app, profile?.id ?? ""))?.connect_scopes, ["connections"])
        const actions = yield* sql<{ action: string }>`
          SELECT action FROM audit_events WHERE profile_id = ${profile?.id ?? ""} ORDER BY occurred_at, action`
        assert.deepStrictEqual(actions.map((row) => row.action).sort(), ["oauth.authorized", "profile.provisioned"])

        const issued = yield* exchange(app, code)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, profile?.id)
        assert.strictEqual(issued.json.scope, CONNECTIONS.join(" "))
        assert.strictEqual((yield* connections(issued.json.access_token)).status, 200)

        // The same person again: now the profile matches, so the screen offers it.
        const again = yield* authorize(request(app, yield* hint(app, { email: email.toUpperCase() })))
        consentOf(again)
        assert.include(again.text, `value="${profile?.id}"`)
      }))

    it.effect("analytics_pii: healthcare-family matches are not offered; when none is left the request redirects", () =>
      Effect.gen(function*() {
        const app = yield* newApp("Authorize email healthcare")
        const hipaa = yield* provision(app, { external_ref: ref(), email: "clinic@health.example", privacy_mode: "hipaa" })
        const signed = yield* hint(app, { email: "clinic@health.example" })
        assertErrorRedirect(
          yield* authorize(request(app, signed, { scope: "analytics_pii" })),
          "invalid_scope",
          "healthcare_scope_forbidden"
        )
        assert.deepStrictEqual((yield* grantOf(app, hipaa.profileId))?.connect_scopes, ["connections"])

        const standard = yield* provision(app, { external_ref: ref(), email: "clinic@health.example" })
        const screen = yield* authorize(request(app, signed, { scope: "analytics_pii" }))
        const { ticket, cookie } = consentOf(screen)
        assert.notInclude(screen.text, hipaa.profileId)
        assert.include(screen.text, standard.profileId)

        // The standard profile turns healthcare-family before approval: refused, the ticket spent, the grant as it was.
        const sql = yield* SqlClient
        yield* sql`UPDATE profiles SET privacy_mode = 'platform_safe' WHERE id = ${standard.profileId}`
        assertErrorRedirect(
          yield* answer({ ticket, decision: "approve", profile_id: standard.profileId }, cookie),
          "invalid_scope",
          "healthcare_scope_forbidden"
        )
        assert.deepStrictEqual((yield* grantOf(app, standard.profileId))?.connect_scopes, ["connections"])
        assertPage(yield* answer({ ticket, decision: "approve", profile_id: standard.profileId }, cookie), 400)
      }))
  })

  describe("POST /oauth/token grant_type=authorization_code", () => {
    /** An external_ref app with a provisioned profile and a fresh code for it. */
    const codeFor = Effect.fn("test.codeFor")(function*(name: string, scopes: ReadonlyArray<string>, scope: string) {
      const app = yield* newApp(name, { profileResolution: "external_ref" })
      const externalRef = ref()
      const profile = yield* provision(app, { external_ref: externalRef, scopes })
      const signed = yield* hint(app, { external_ref: externalRef })
      const code = assertCodeRedirect(yield* authorize(request(app, signed, { scope })))
      return { app, profile, code, signed }
    })

    it.effect("a wrong redirect_uri is invalid_grant and spends the code", () =>
      Effect.gen(function*() {
        const { app, profile, code } = yield* codeFor("Exchange redirect", ["connections"], "connections")
        const wrong = yield* exchange(app, code, OTHER_CALLBACK)
        assertOAuthError(wrong, 400, "invalid_grant")
        assert.strictEqual(wrong.json.error_description, "redirect_uri differs from the one the code was issued for.")
        assertOAuthError(yield* exchange(app, code), 400, "invalid_grant")
        assert.deepStrictEqual(yield* liveKeysOf(app, profile.profileId), [])
      }))

    it.effect("another client's attempt is invalid_grant and leaves the code to its own client", () =>
      Effect.gen(function*() {
        const { app, profile, code } = yield* codeFor("Exchange foreign", ["connections"], "connections")
        const other = yield* newApp("Exchange foreign, other app")
        const foreign = yield* exchange(other, code)
        assertOAuthError(foreign, 400, "invalid_grant")
        const unknown = yield* exchange(app, "A".repeat(43))
        assert.strictEqual(unknown.text, foreign.text, "unknown and foreign codes are one answer")
        assertOAuthError(yield* exchange(app, "short"), 400, "invalid_grant")
        assert.isNull((yield* codeRow(code))?.used_at ?? null)
        const issued = yield* exchange(app, code)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, profile.profileId)
      }))

    it.effect("an expired code is invalid_grant; code and redirect_uri are required; post authentication works", () =>
      Effect.gen(function*() {
        const { app, profile, code } = yield* codeFor("Exchange expiry", ["connections"], "connections")
        const sql = yield* SqlClient
        yield* sql`UPDATE oauth_authorization_codes SET expires_at = now() - interval '1 second'
                   WHERE code_hash = ${secretDigest(code)}`
        assertOAuthError(yield* exchange(app, code), 400, "invalid_grant")
        assert.deepStrictEqual(yield* liveKeysOf(app, profile.profileId), [])

        assertOAuthError(yield* token(app, { grant_type: "authorization_code", redirect_uri: CALLBACK }), 400, "invalid_request")
        const fresh = yield* codeFor("Exchange required params", ["connections"], "connections")
        assertOAuthError(yield* token(fresh.app, { grant_type: "authorization_code", code: fresh.code }), 400, "invalid_request")
        const posted = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": FORM },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code: fresh.code,
            redirect_uri: CALLBACK,
            client_id: fresh.app.clientId,
            client_secret: fresh.app.clientSecret
          }).toString()
        })
        assert.strictEqual(posted.status, 200, posted.text)
        assert.strictEqual(posted.json.scope, CONNECTIONS.join(" "))
      }))

    it.effect("S5.4: a profile turned healthcare-family after consent answers server_error; no key survives, the code is spent", () =>
      Effect.gen(function*() {
        const { app, profile, code, signed } = yield* codeFor("Exchange S5.4", ["connections"], "analytics_pii")
        const sql = yield* SqlClient
        yield* sql`UPDATE workspaces SET is_healthcare_agency = true WHERE id = ${profile.workspaceId}`
        const refused = yield* exchange(app, code)
        assertOAuthError(refused, 500, "server_error")
        assert.strictEqual(
          refused.json.error_description,
          "The profile became healthcare-family after consent; no key was minted. Run consent again."
        )
        assert.deepStrictEqual(yield* liveKeysOf(app, profile.profileId), [])
        const [anyKey] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(anyKey?.n, 0)
        const stored = yield* codeRow(code)
        assert.isNotNull(stored?.used_at ?? null)
        assert.isNull(stored?.api_key_id ?? null)
        assertOAuthError(yield* exchange(app, code), 400, "invalid_grant")

        // Consent again: the new code carries no person scopes, and client_credentials withholds them as before.
        const again = assertCodeRedirect(yield* authorize(request(app, signed, { scope: "analytics" })))
        const issued = yield* exchange(app, again)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.scope, [...CONNECTIONS, ...ANALYTICS].join(" "))
      }))

    it.effect("S5.4 during the mint itself: the re-check after the key is written refuses, and the key is rolled back", () =>
      Effect.gen(function*() {
        const { app, profile, code } = yield* codeFor("Exchange S5.4 race", ["connections"], "analytics_pii")
        const sql = yield* SqlClient
        const name = `oauth_authorize_test_${crypto.randomUUID().replaceAll("-", "")}`
        yield* sql.unsafe(`
          CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF NEW.profile_id = '${profile.profileId}'::uuid THEN
              UPDATE profiles SET privacy_mode = 'hipaa' WHERE id = NEW.profile_id;
            END IF;
            RETURN NEW;
          END $$`)
        yield* sql.unsafe(`CREATE TRIGGER ${name} AFTER INSERT ON api_keys FOR EACH ROW EXECUTE FUNCTION ${name}()`)
        const refused = yield* exchange(app, code).pipe(
          Effect.ensuring(Effect.orDie(Effect.andThen(
            sql.unsafe(`DROP TRIGGER ${name} ON api_keys`),
            sql.unsafe(`DROP FUNCTION ${name}()`)
          )))
        )
        assertOAuthError(refused, 500, "server_error")
        const [anyKey] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(anyKey?.n, 0)
        assert.isNotNull((yield* codeRow(code))?.used_at ?? null)
      }))

    it.effect("a code whose grant was revoked since consent is invalid_grant", () =>
      Effect.gen(function*() {
        const { app, profile, code } = yield* codeFor("Exchange revoked grant", ["connections"], "analytics")
        const sql = yield* SqlClient
        yield* sql`UPDATE grants SET revoked_at = now() WHERE app_id = ${app.id} AND profile_id = ${profile.profileId}`
        assertOAuthError(yield* exchange(app, code), 400, "invalid_grant")
        assert.deepStrictEqual(yield* liveKeysOf(app, profile.profileId), [])
      }))
  })

  describe("PKCE (RFC 7636; decision 0106)", () => {
    it.effect("S256 round trip: the challenge is stored with the code and the verifier buys the key (external_ref)", () =>
      Effect.gen(function*() {
        const app = yield* newApp("PKCE external_ref", { profileResolution: "external_ref" })
        const externalRef = ref()
        const profile = yield* provision(app, { external_ref: externalRef })
        const signed = yield* hint(app, { external_ref: externalRef })
        // The example of RFC 7636 appendix B pins the transform independently of this file's helper.
        const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        const code = assertCodeRedirect(
          yield* authorize(request(app, signed, { code_challenge: challenge, code_challenge_method: "S256" }))
        )
        const sql = yield* SqlClient
        const [stored] = yield* sql<{ code_challenge: string | null }>`
          SELECT code_challenge FROM oauth_authorization_codes WHERE code_hash = ${secretDigest(code)}`
        assert.strictEqual(stored?.code_challenge, challenge)

        const issued = yield* token(app, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier })
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, profile.profileId)
        assert.strictEqual((yield* connections(issued.json.access_token)).status, 200)
        assert.strictEqual((yield* codeRow(code))?.api_key_id, (yield* liveKeysOf(app, profile.profileId))[0]?.id)
      }))

    it.effect("S256 round trip through the consent screen: the ticket carries the challenge to the code (email)", () =>
      Effect.gen(function*() {
        const app = yield* newApp("PKCE email")
        const profile = yield* provision(app, { external_ref: ref(), email: "pkce@shop.example" })
        const signed = yield* hint(app, { email: "pkce@shop.example" })
        const { verifier, challenge } = pkcePair()
        const { ticket, cookie } = consentOf(
          yield* authorize(request(app, signed, { code_challenge: challenge, code_challenge_method: "S256" }))
        )
        const sql = yield* SqlClient
        const [stored] = yield* sql<{ code_challenge: string | null }>`
          SELECT code_challenge FROM oauth_consent_tickets WHERE ticket_hash = ${secretDigest(ticket)}`
        assert.strictEqual(stored?.code_challenge, challenge)
        const code = assertCodeRedirect(yield* answer({ ticket, decision: "approve", profile_id: profile.profileId }, cookie))
        const issued = yield* token(app, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier })
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, profile.profileId)
        assert.strictEqual(issued.json.scope, CONNECTIONS.join(" "))
      }))

    it.effect("plain, another method, a half-sent pair or a malformed challenge redirects invalid_request; nothing is issued", () =>
      Effect.gen(function*() {
        const byRef = yield* newApp("PKCE refusals, external_ref", { profileResolution: "external_ref" })
        const externalRef = ref()
        const profile = yield* provision(byRef, { external_ref: externalRef })
        const byEmail = yield* newApp("PKCE refusals, email")
        yield* provision(byEmail, { external_ref: ref(), email: "refused@shop.example" })
        const { verifier, challenge } = pkcePair()
        const wrongMethod = "code_challenge_method must be S256; plain is not accepted."
        const malformed = "code_challenge must be the 43-character BASE64URL SHA-256 of the verifier."
        const cases: Array<[Record<string, string>, string]> = [
          [{ code_challenge: verifier, code_challenge_method: "plain" }, wrongMethod],
          [{ code_challenge: challenge, code_challenge_method: "plain" }, wrongMethod],
          [{ code_challenge: challenge, code_challenge_method: "s256" }, wrongMethod],
          [{ code_challenge: challenge, code_challenge_method: "S512" }, wrongMethod],
          // RFC 7636 reads a missing method as plain.
          [{ code_challenge: challenge }, wrongMethod],
          [{ code_challenge_method: "S256" }, "code_challenge_method was sent without code_challenge."],
          [{ code_challenge: challenge.slice(0, 42), code_challenge_method: "S256" }, malformed],
          [{ code_challenge: `${challenge}A`, code_challenge_method: "S256" }, malformed],
          [{ code_challenge: `${challenge}=`, code_challenge_method: "S256" }, malformed],
          [{ code_challenge: `${challenge.slice(0, 42)}+`, code_challenge_method: "S256" }, malformed],
          [{ code_challenge: `${challenge.slice(0, 42)}.`, code_challenge_method: "S256" }, malformed],
          [{ code_challenge: "a".repeat(128), code_challenge_method: "S256" }, malformed]
        ]
        const before = { byRef: yield* issuedFor(byRef), byEmail: yield* issuedFor(byEmail) }
        for (const app of [byRef, byEmail]) {
          const signed = yield* hint(app, app === byRef ? { external_ref: externalRef } : { email: "refused@shop.example" })
          for (const [extra, description] of cases) {
            const response = yield* authorize(request(app, signed, { scope: "analytics", ...extra }))
            assertErrorRedirect(response, "invalid_request", description)
            assert.deepStrictEqual(response.headers.getSetCookie(), [])
          }
          const repeated = new URLSearchParams(request(app, signed, { code_challenge: challenge, code_challenge_method: "S256" }))
          repeated.append("code_challenge", pkcePair().challenge)
          assertErrorRedirect(
            yield* call(`/oauth/authorize?${repeated.toString()}`, { redirect: "manual" }),
            "invalid_request",
            "Parameter code_challenge is repeated."
          )
        }
        // No code, no ticket, no key, and the grant was not widened to the requested scope.
        assert.deepStrictEqual(yield* issuedFor(byRef), before.byRef)
        assert.deepStrictEqual(yield* issuedFor(byEmail), before.byEmail)
        assert.deepStrictEqual(before.byRef, { codes: 0, tickets: 0, keys: 0 })
        assert.deepStrictEqual((yield* grantOf(byRef, profile.profileId))?.connect_scopes, ["connections"])
      }))

    /** An external_ref app with a provisioned profile and a fresh code, issued with a challenge unless `pkce` is false. */
    const pkceCode = Effect.fn("test.pkceCode")(function*(name: string, pkce = true) {
      const app = yield* newApp(name, { profileResolution: "external_ref" })
      const externalRef = ref()
      const profile = yield* provision(app, { external_ref: externalRef })
      const signed = yield* hint(app, { external_ref: externalRef })
      const pair = pkcePair()
      const extra: Record<string, string> = pkce ? { code_challenge: pair.challenge, code_challenge_method: "S256" } : {}
      const code = assertCodeRedirect(yield* authorize(request(app, signed, extra)))
      return { app, profile, code, verifier: pair.verifier }
    })

    const exchangeWith = (app: App, code: string, verifier?: string) =>
      token(app, {
        grant_type: "authorization_code",
        code,
        redirect_uri: CALLBACK,
        ...(verifier === undefined ? {} : { code_verifier: verifier })
      })

    /** Refused with invalid_grant, the code spent with no key behind it, and the right request refused afterwards. */
    const assertSpentWithoutKey = Effect.fn("test.assertSpentWithoutKey")(function*(
      flow: { readonly app: App; readonly profile: { readonly profileId: string }; readonly code: string },
      refused: HttpResult,
      description: string,
      retry: ReturnType<typeof exchangeWith>
    ) {
      assertOAuthError(refused, 400, "invalid_grant")
      assert.strictEqual(refused.json.error_description, description)
      const stored = yield* codeRow(flow.code)
      assert.isNotNull(stored?.used_at ?? null, "a refused verifier spends the code")
      assert.isNull(stored?.api_key_id ?? null)
      assert.deepStrictEqual(yield* issuedFor(flow.app), { codes: 1, tickets: 0, keys: 0 })
      const again = yield* retry
      assertOAuthError(again, 400, "invalid_grant")
      assert.strictEqual(again.json.error_description, "The authorization code is invalid, expired or already used.")
      assert.deepStrictEqual(yield* issuedFor(flow.app), { codes: 1, tickets: 0, keys: 0 })
    })

    it.effect("a wrong verifier is invalid_grant, mints nothing and spends the code: the right verifier is refused afterwards", () =>
      Effect.gen(function*() {
        const flow = yield* pkceCode("PKCE wrong verifier")
        const refused = yield* exchangeWith(flow.app, flow.code, pkcePair().verifier)
        yield* assertSpentWithoutKey(
          flow,
          refused,
          "The code_verifier does not match the code_challenge.",
          exchangeWith(flow.app, flow.code, flow.verifier)
        )
      }))

    it.effect("a missing verifier for a code issued with a challenge is invalid_grant and spends the code", () =>
      Effect.gen(function*() {
        const flow = yield* pkceCode("PKCE missing verifier")
        const refused = yield* exchangeWith(flow.app, flow.code)
        yield* assertSpentWithoutKey(
          flow,
          refused,
          "code_verifier is required: the code was issued with a code_challenge.",
          exchangeWith(flow.app, flow.code, flow.verifier)
        )
      }))

    it.effect("a verifier for a code issued without a challenge is invalid_grant (downgrade) and spends the code", () =>
      Effect.gen(function*() {
        const flow = yield* pkceCode("PKCE downgrade", false)
        const sql = yield* SqlClient
        const stored = yield* sql<{ code_challenge: string | null }>`
          SELECT code_challenge FROM oauth_authorization_codes WHERE code_hash = ${secretDigest(flow.code)}`
        assert.deepStrictEqual(stored, [{ code_challenge: null }])
        const refused = yield* exchangeWith(flow.app, flow.code, flow.verifier)
        yield* assertSpentWithoutKey(
          flow,
          refused,
          "code_verifier was sent for a code issued without code_challenge.",
          exchangeWith(flow.app, flow.code)
        )
      }))

    /** A code issued for the given verifier's S256 challenge. */
    const pkceCodeWithVerifier = Effect.fn("test.pkceCodeWithVerifier")(function*(verifier: string) {
      const app = yield* newApp("PKCE given verifier", { profileResolution: "external_ref" })
      const externalRef = ref()
      yield* provision(app, { external_ref: externalRef })
      const signed = yield* hint(app, { external_ref: externalRef })
      const challenge = createHash("sha256").update(verifier).digest("base64url")
      const code = assertCodeRedirect(
        yield* authorize(request(app, signed, { code_challenge: challenge, code_challenge_method: "S256" }))
      )
      return { app, code, verifier }
    })

    it.effect("a malformed verifier is invalid_request and spends nothing; the right verifier then works once", () =>
      Effect.gen(function*() {
        const flow = yield* pkceCode("PKCE malformed verifier")
        for (const verifier of ["too-short", "a".repeat(42), "a".repeat(129), `${"a".repeat(43)}!`, `${"a".repeat(43)}+`]) {
          const refused = yield* exchangeWith(flow.app, flow.code, verifier)
          assertOAuthError(refused, 400, "invalid_request")
          assert.strictEqual(
            refused.json.error_description,
            "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)."
          )
        }
        assert.isNull((yield* codeRow(flow.code))?.used_at ?? null)
        assert.deepStrictEqual(yield* issuedFor(flow.app), { codes: 1, tickets: 0, keys: 0 })
        // The longest verifier RFC 7636 allows, with every unreserved character class.
        const longest = yield* pkceCodeWithVerifier(`${"Az09-._~".repeat(16)}`)
        const issuedLongest = yield* exchangeWith(longest.app, longest.code, longest.verifier)
        assert.strictEqual(issuedLongest.status, 200, issuedLongest.text)
        const issued = yield* exchangeWith(flow.app, flow.code, flow.verifier)
        assert.strictEqual(issued.status, 200, issued.text)
        assertOAuthError(yield* exchangeWith(flow.app, flow.code, flow.verifier), 400, "invalid_grant")
      }))

    it.effect("a code without PKCE still exchanges without a verifier (partner apps are confidential clients)", () =>
      Effect.gen(function*() {
        const flow = yield* pkceCode("PKCE optional", false)
        const issued = yield* exchangeWith(flow.app, flow.code)
        assert.strictEqual(issued.status, 200, issued.text)
        assert.strictEqual(issued.json.profile_id, flow.profile.profileId)
      }))
  })

  describe("published description", () => {
    it.effect("lists GET /oauth/authorize and POST /oauth/authorize/consent in the oauth group", () =>
      Effect.gen(function*() {
        const spec = (yield* call("/api/v1/openapi.json")).json
        const get = spec.paths["/oauth/authorize"]?.get
        const post = spec.paths["/oauth/authorize/consent"]?.post
        assert.isDefined(get)
        assert.isDefined(post)
        assert.deepStrictEqual(get.tags, ["oauth"])
        assert.deepStrictEqual(get["x-auth"], [])
        assert.includeMembers(
          get.parameters.map((parameter: { name: string }) => parameter.name),
          ["response_type", "client_id", "redirect_uri", "state", "scope", "id_token_hint", "code_challenge", "code_challenge_method"]
        )
        assert.include(get.description, "code_challenge_method=S256")
        const tokenPost = spec.paths["/oauth/token"]?.post
        const tokenForm = spec.components.schemas["OAuthTokenRequest"]
        assert.property(tokenForm.properties, "code_verifier")
        assert.include(tokenPost.description, "code_verifier")
        assert.includeMembers(Object.keys(get.responses), ["200", "302", "400"])
        assert.includeMembers(Object.keys(post.responses), ["302", "400", "403"])
        assert.property(post.requestBody.content, FORM)
      }))
  })
})
