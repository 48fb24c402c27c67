import { assert, it as test, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHash, randomBytes } from "node:crypto"
import { hashPassword } from "../../src/accounts/sessions/service.ts"
import { secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { openApiDocument } from "../../src/main/openapi.ts"
import { REGISTRATIONS_PER_ADDRESS_PER_HOUR } from "../../src/accounts/mcp-oauth/service.ts"
import { call as callServer, type HttpResult, serveApp, testSettings } from "../support/app.ts"
import { seedProfile } from "../support/tenancy.ts"

/** Statuses the `/oauth/mcp/*` operations answered in this file, by `method path` (checked at the end). */
const answered = new Map<string, Set<number>>()

/** The test server's `call`, recording what each `/oauth/mcp/*` operation answers. */
const call = (path: string, init: RequestInit = {}) =>
  Effect.tap(callServer(path, init), (response) =>
    Effect.sync(() => {
      const pathname = path.split("?")[0] ?? path
      if (!pathname.startsWith("/oauth/mcp/")) return
      const operation = `${(init.method ?? "GET").toLowerCase()} ${pathname}`
      const statuses = answered.get(operation) ?? new Set<number>()
      answered.set(operation, statuses.add(response.status))
    }))

const PASSWORD = "correct horse battery staple"
const FORM = "application/x-www-form-urlencoded"
const REDIRECT = "https://agent.example/callback"

/** A person with a scrypt password and an owner membership in a new workspace. */
const seedPasswordUser = Effect.fn("test.seedPasswordUser")(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const userId = crypto.randomUUID()
  const email = `${userId}@people.example`
  yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${userId}, ${email}, ${yield* hashPassword(PASSWORD)})`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${profile.workspaceId}, ${userId}, 'owner')`
  return { userId, email, profile }
})

const register = (body: unknown, contentType = "application/json") =>
  call("/oauth/mcp/register", { method: "POST", headers: { "content-type": contentType }, body: JSON.stringify(body) })

const registerClient = Effect.fn("test.registerClient")(function*(metadata: Record<string, unknown> = {}) {
  const response = yield* register({ redirect_uris: [REDIRECT], client_name: "Test agent", ...metadata })
  assert.strictEqual(response.status, 201, response.text)
  return response.json.client_id as string
})

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const post = (path: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  call(path, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": FORM, ...headers },
    body: new URLSearchParams(params).toString()
  })

const authorizeParams = (clientId: string, challenge: string, extra: Record<string, string> = {}) => ({
  response_type: "code",
  client_id: clientId,
  redirect_uri: REDIRECT,
  state: "state-123",
  code_challenge: challenge,
  code_challenge_method: "S256",
  ...extra
})

const authorize = (params: Record<string, string>, headers: Record<string, string> = {}) =>
  call(`/oauth/mcp/authorize?${new URLSearchParams(params).toString()}`, { redirect: "manual", headers })

/** The sign-in form's token and the pre-session cookie it matches (decision 0107). */
const formOf = (page: HttpResult) => {
  const token = /name="form_token" value="([^"]+)"/.exec(page.text)?.[1]
  const cookie = /__Host-svc_form=([^;]+)/.exec(page.headers.get("set-cookie") ?? "")?.[1]
  assert.isDefined(token, "the sign-in form carries a form token")
  assert.isDefined(cookie, "the sign-in form sets its cookie")
  return { token: token ?? "", cookie: `__Host-svc_form=${cookie ?? ""}` }
}

/** Opens the sign-in form, then posts it as the browser does (same origin, with its token and cookie). */
const signIn = Effect.fn("test.signIn")(function*(params: Record<string, string>, email: string, password = PASSWORD) {
  const form = formOf(yield* authorize(params))
  return yield* post(
    "/oauth/mcp/authorize/sign-in",
    { ...params, form_token: form.token, email, password },
    { cookie: form.cookie, "sec-fetch-site": "same-origin", origin: "null" }
  )
})

const cookieOf = (response: HttpResult) => {
  const match = /svc_session=([^;]+)/.exec(response.headers.get("set-cookie") ?? "")
  assert.isNotNull(match, "a svc_session cookie is set")
  return `svc_session=${match?.[1] ?? ""}`
}

const ticketOf = (response: HttpResult) => {
  const match = /name="ticket" value="([^"]+)"/.exec(response.text)
  assert.isNotNull(match, "the consent page carries a ticket")
  return match?.[1] ?? ""
}

const decide = (ticket: string | undefined, decision: string, cookie: string | undefined, headers: Record<string, string> = {}) =>
  post(
    "/oauth/mcp/authorize/decision",
    { ...(ticket === undefined ? {} : { ticket }), decision },
    { ...(cookie === undefined ? {} : { cookie }), ...headers }
  )

const token = (params: Record<string, string>) => post("/oauth/mcp/token", { grant_type: "authorization_code", ...params })

/** The headers every page of the consent flow carries. */
const assertPageHeaders = (response: HttpResult, status = 200) => {
  assert.strictEqual(response.status, status, response.text)
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/)
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
  assert.strictEqual(response.headers.get("x-frame-options"), "DENY")
  assert.match(response.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/)
  assert.match(response.headers.get("content-security-policy") ?? "", /default-src 'none'/)
  assert.isNull(response.headers.get("location"))
}

/** The error page: 400 (403 for a cross-site post), HTML, no redirect, no envelope. */
const assertErrorPage = (response: HttpResult, text: RegExp, status = 400) => {
  assertPageHeaders(response, status)
  assert.isUndefined(response.json)
  assert.match(response.text, /This authorization request cannot continue/)
  assert.match(response.text, text)
}

/** An OAuth error body: exactly error and error_description, never the envelope. */
const assertOAuthError = (response: HttpResult, status: number, error: string) => {
  assert.strictEqual(response.status, status, response.text)
  assert.deepStrictEqual(Object.keys(response.json).sort(), ["error", "error_description"])
  assert.strictEqual(response.json.error, error)
  assert.strictEqual(response.headers.get("cache-control"), "no-store")
}

const locationOf = (response: HttpResult) => {
  assert.strictEqual(response.status, 302, response.text)
  return new URL(response.headers.get("location") ?? "")
}

/** Register, sign in through the consent screen, and land on the consent page. */
const toConsent = Effect.fn("test.toConsent")(function*(
  options: { readonly scope?: string; readonly clientName?: string } = {}
) {
  const user = yield* seedPasswordUser()
  const clientId = yield* registerClient(options.clientName === undefined ? {} : { client_name: options.clientName })
  const { verifier, challenge } = pkce()
  const params = authorizeParams(clientId, challenge, options.scope === undefined ? {} : { scope: options.scope })
  const consent = yield* signIn(params, user.email)
  assertPageHeaders(consent)
  return { user, clientId, verifier, challenge, params, consent, cookie: cookieOf(consent), ticket: ticketOf(consent) }
})

/** The whole flow up to an authorization code. */
const toCode = Effect.fn("test.toCode")(function*(options: { readonly scope?: string } = {}) {
  const flow = yield* toConsent(options)
  const approved = yield* decide(flow.ticket, "approve", flow.cookie)
  const location = locationOf(approved)
  return { ...flow, code: location.searchParams.get("code") ?? "" }
})

const exchange = (flow: { readonly clientId: string; readonly code: string; readonly verifier: string }) =>
  token({ client_id: flow.clientId, code: flow.code, redirect_uri: REDIRECT, code_verifier: flow.verifier })

layer(serveApp(testSettings()), { timeout: "90 seconds", excludeTestServices: true })("agent OAuth (/oauth/mcp)", (it) => {
  it.effect("the RFC 8414 metadata names the issuer, the endpoints, PKCE S256, public clients and the MCP grants", () =>
    Effect.gen(function*() {
      const response = yield* call("/.well-known/oauth-authorization-server")
      assert.strictEqual(response.status, 200)
      assert.deepStrictEqual(response.json, {
        issuer: "http://svc.test",
        authorization_endpoint: "http://svc.test/oauth/mcp/authorize",
        token_endpoint: "http://svc.test/oauth/mcp/token",
        registration_endpoint: "http://svc.test/oauth/mcp/register",
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        scopes_supported: ["mcp:read", "mcp:read_pii", "mcp:write"]
      })
    }))

  it.effect("every route is in the OpenAPI document as public (x-auth [])", () =>
    Effect.gen(function*() {
      const spec = (yield* call("/api/v1/openapi.json")).json
      for (
        const [path, method] of [
          ["/.well-known/oauth-authorization-server", "get"],
          ["/oauth/mcp/register", "post"],
          ["/oauth/mcp/authorize", "get"],
          ["/oauth/mcp/authorize/sign-in", "post"],
          ["/oauth/mcp/authorize/decision", "post"],
          ["/oauth/mcp/token", "post"]
        ] as const
      ) {
        const operation = spec.paths[path]?.[method]
        assert.isDefined(operation, `${method} ${path}`)
        assert.deepStrictEqual(operation["x-auth"], [], path)
        assert.deepStrictEqual(operation["x-scopes"], [], path)
        assert.strictEqual(operation["x-idempotency"], "none", path)
      }
      const authorizeParameters = spec.paths["/oauth/mcp/authorize"].get.parameters.map((p: { name: string }) => p.name)
      for (const name of ["client_id", "redirect_uri", "code_challenge", "code_challenge_method", "state", "scope"]) {
        assert.include(authorizeParameters, name)
      }
      assert.property(spec.paths["/oauth/mcp/token"].post.responses, "400")
    }))

  it.effect("registration: 201 with client_id, issue time and the registered metadata; refresh_token is dropped", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const before = Math.floor(Date.now() / 1000)
      const response = yield* register({
        redirect_uris: [REDIRECT, "http://127.0.0.1:33418/cb", "http://[::1]/cb", "http://localhost:8080/cb"],
        client_name: "Claude-like agent",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        scope: "mcp:read mcp:write",
        logo_uri: "https://agent.example/logo.png"
      })
      assert.strictEqual(response.status, 201, response.text)
      assert.strictEqual(response.headers.get("cache-control"), "no-store")
      const body = response.json
      assert.match(body.client_id, /^svc_mcp_[0-9A-Za-z]{24}$/)
      assert.isTrue(body.client_id_issued_at >= before - 1 && body.client_id_issued_at <= before + 5)
      assert.deepStrictEqual({ ...body, client_id: "", client_id_issued_at: 0 }, {
        client_id: "",
        client_id_issued_at: 0,
        client_name: "Claude-like agent",
        redirect_uris: [REDIRECT, "http://127.0.0.1:33418/cb", "http://[::1]/cb", "http://localhost:8080/cb"],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code"],
        response_types: ["code"],
        scope: "mcp:read mcp:write"
      })
      const rows = yield* sql<{ client_name: string; grants: Array<string> }>`
        SELECT client_name, grants FROM mcp_clients WHERE client_id = ${body.client_id}`
      assert.deepStrictEqual(rows.map((row) => [row.client_name, row.grants]), [["Claude-like agent", ["mcp:read", "mcp:write"]]])

      const minimal = yield* register({ redirect_uris: [REDIRECT] })
      assert.strictEqual(minimal.status, 201)
      assert.notProperty(minimal.json, "client_name")
      assert.strictEqual(minimal.json.scope, "mcp:read mcp:read_pii mcp:write")
    }))

  it.effect("registration refuses in the RFC 7591 format: redirect URIs, auth method, grant and response types, scope, body", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const marker = `refused-${crypto.randomUUID()}`
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{}, "invalid_redirect_uri"],
        [{ redirect_uris: [] }, "invalid_redirect_uri"],
        [{ redirect_uris: "https://agent.example/cb" }, "invalid_redirect_uri"],
        [{ redirect_uris: ["http://agent.example/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["http://192.168.1.10/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["myapp://callback"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["https://agent.example/cb#fragment"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["https://user:pw@agent.example/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: ["/relative/cb"] }, "invalid_redirect_uri"],
        [{ redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_basic" }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_post" }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], grant_types: ["client_credentials"] }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], grant_types: ["authorization_code", "implicit"] }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], response_types: ["token"] }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], scope: "mcp:read admin" }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], client_name: 42 }, "invalid_client_metadata"],
        [{ redirect_uris: [REDIRECT], client_name: "x".repeat(101) }, "invalid_client_metadata"],
        [[REDIRECT], "invalid_client_metadata"]
      ]
      for (const [body, error] of cases) {
        const withMarker = typeof body === "object" && body !== null && !Array.isArray(body) && !("client_name" in body)
          ? { ...body, client_name: marker }
          : body
        const response = yield* register(withMarker)
        assertOAuthError(response, 400, error)
        assert.match(response.headers.get("x-request-id") ?? "", /^req_/)
      }
      const notJson = yield* call("/oauth/mcp/register", { method: "POST", headers: { "content-type": "application/json" }, body: "{" })
      assertOAuthError(notJson, 400, "invalid_client_metadata")
      const form = yield* call("/oauth/mcp/register", {
        method: "POST",
        headers: { "content-type": FORM },
        body: `redirect_uris=${encodeURIComponent(REDIRECT)}`
      })
      assertOAuthError(form, 400, "invalid_client_metadata")
      const stored = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM mcp_clients WHERE client_name = ${marker}`
      assert.strictEqual(stored[0]?.count, 0)
    }))

  it.effect("full flow: sign-in form, consent, approve, code, PKCE token that lists workspaces and is refused on /me", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const user = yield* seedPasswordUser()
      const clientId = yield* registerClient({ client_name: "<script>alert(1)</script> Agent" })
      const { verifier, challenge } = pkce()
      const params = authorizeParams(clientId, challenge, { scope: "mcp:read mcp:write" })

      // No session: the sign-in form, carrying the request along.
      const form = yield* authorize(params)
      assertPageHeaders(form)
      assert.match(form.text, /action="\/oauth\/mcp\/authorize\/sign-in"/)
      assert.match(form.text, /type="password" name="password"/)
      assert.include(form.text, `name="code_challenge" value="${challenge}"`)
      assert.include(form.text, `name="client_id" value="${clientId}"`)
      assert.notInclude(form.text, "<script>alert(1)</script>")
      assert.include(form.text, "&lt;script&gt;alert(1)&lt;/script&gt; Agent")

      // A wrong password shows the form again, with the error and no cookie.
      const wrong = yield* signIn(params, user.email, "not the password")
      assertPageHeaders(wrong)
      assert.match(wrong.text, /Unknown email or wrong password/)
      assert.isNull(wrong.headers.get("set-cookie"))
      assert.notMatch(wrong.text, /name="ticket"/)

      // The right password: a session cookie and the consent screen.
      const consent = yield* signIn(params, user.email)
      assertPageHeaders(consent)
      const setCookie = consent.headers.get("set-cookie") ?? ""
      assert.match(setCookie, /^svc_session=svc_sess_[0-9A-Za-z]+;/)
      for (const attribute of [/;\s*HttpOnly/i, /;\s*Secure/i, /;\s*SameSite=Lax/i, /;\s*Path=\//i]) assert.match(setCookie, attribute)
      assert.notInclude(consent.text, "<script>alert(1)</script>")
      assert.include(consent.text, "&lt;script&gt;alert(1)&lt;/script&gt; Agent")
      assert.include(consent.text, "agent.example")
      assert.include(consent.text, user.email)
      assert.include(consent.text, "<code>mcp:read</code>")
      assert.include(consent.text, "<code>mcp:write</code>")
      assert.notInclude(consent.text, "<code>mcp:read_pii</code>")
      assert.match(consent.headers.get("content-security-policy") ?? "", /form-action 'self' https:\/\/agent\.example/)
      const cookie = cookieOf(consent)
      const ticket = ticketOf(consent)
      const tickets = yield* sql<{ ticket_hash: string; user_id: string; grants: Array<string> }>`
        SELECT ticket_hash, user_id, grants FROM mcp_consent_tickets WHERE client_id = ${clientId}`
      assert.deepStrictEqual(tickets.map((row) => [row.ticket_hash, row.user_id, row.grants]), [
        [secretDigest(ticket), user.userId, ["mcp:read", "mcp:write"]]
      ])

      // With the session, the authorization request goes straight to the consent screen.
      const again = yield* authorize(params, { cookie })
      assertPageHeaders(again)
      assert.match(again.text, /name="ticket"/)
      assert.notMatch(again.text, /type="password"/)

      // Approve: a code and the state, back at the redirect URI.
      const approved = yield* decide(ticket, "approve", cookie)
      assert.strictEqual(approved.headers.get("cache-control"), "no-store")
      const location = locationOf(approved)
      assert.strictEqual(`${location.origin}${location.pathname}`, REDIRECT)
      assert.strictEqual(location.searchParams.get("state"), "state-123")
      const code = location.searchParams.get("code") ?? ""
      assert.match(code, /^[0-9A-Za-z]{43}$/)
      const codes = yield* sql<{ code_hash: string; user_id: string; grants: Array<string>; code_challenge: string; minutes: number }>`
        SELECT code_hash, user_id, grants, code_challenge,
               extract(epoch FROM expires_at - created_at)::float8 / 60 AS minutes
        FROM mcp_authorization_codes WHERE client_id = ${clientId}`
      assert.strictEqual(codes.length, 1)
      assert.strictEqual(codes[0]?.code_hash, secretDigest(code))
      assert.strictEqual(codes[0]?.user_id, user.userId)
      assert.strictEqual(codes[0]?.code_challenge, challenge)
      assert.strictEqual(codes[0]?.minutes, 10)

      // The ticket is single use.
      assertErrorPage(yield* decide(ticket, "approve", cookie), /expired, was already answered/)

      // The code and the verifier: an MCP user token.
      const issued = yield* token({ client_id: clientId, code, redirect_uri: REDIRECT, code_verifier: verifier })
      assert.strictEqual(issued.status, 200, issued.text)
      assert.strictEqual(issued.headers.get("cache-control"), "no-store")
      assert.strictEqual(issued.headers.get("pragma"), "no-cache")
      assert.deepStrictEqual(Object.keys(issued.json).sort(), ["access_token", "expires_in", "scope", "token_type"])
      assert.match(issued.json.access_token, /^svc_user_[0-9A-Za-z]{38}$/)
      assert.strictEqual(issued.json.token_type, "Bearer")
      assert.strictEqual(issued.json.scope, "mcp:read mcp:write")
      assert.strictEqual(issued.json.expires_in, 90 * 86_400)
      const rows = yield* sql<{
        id: string
        user_id: string
        grants: Array<string>
        mcp_client_id: string
        rate_limit_units_per_minute: number
        days: number
      }>`
        SELECT id, user_id, grants, mcp_client_id, rate_limit_units_per_minute,
               extract(epoch FROM expires_at - now())::float8 / 86400 AS days
        FROM user_tokens WHERE secret_hash = ${secretDigest(issued.json.access_token)}`
      assert.strictEqual(rows.length, 1)
      assert.strictEqual(rows[0]?.user_id, user.userId)
      assert.deepStrictEqual(rows[0]?.grants, ["mcp:read", "mcp:write"])
      assert.strictEqual(rows[0]?.mcp_client_id, clientId)
      assert.strictEqual(rows[0]?.rate_limit_units_per_minute, 120)
      assert.isTrue((rows[0]?.days ?? 0) > 89.9 && (rows[0]?.days ?? 0) <= 90)
      const audited = yield* sql<{ actor_kind: string; actor_user_id: string }>`
        SELECT actor_kind, actor_user_id FROM audit_events WHERE action = 'user_token.created' AND target_id = ${rows[0]?.id ?? ""}`
      assert.deepStrictEqual(audited.map((row) => [row.actor_kind, row.actor_user_id]), [["session", user.userId]])
      const used = yield* sql<{ used: boolean; token_id: string }>`
        SELECT used_at IS NOT NULL AS used, token_id FROM mcp_authorization_codes WHERE code_hash = ${secretDigest(code)}`
      assert.deepStrictEqual(used.map((row) => [row.used, row.token_id]), [[true, rows[0]?.id]])

      // The token works on /api/v1 and never on /api/v1/me/**.
      const bearer = { authorization: `Bearer ${issued.json.access_token}` }
      const listed = yield* call("/api/v1/workspaces", { headers: bearer })
      assert.strictEqual(listed.status, 200, listed.text)
      assert.deepStrictEqual(
        listed.json.data.map((workspace: { workspace_id: string }) => workspace.workspace_id),
        [user.profile.workspaceId]
      )
      const me = yield* call("/api/v1/me", { headers: bearer })
      assert.strictEqual(me.status, 403)
      assert.strictEqual(me.json.error.code, "insufficient_scope")
      const mint = yield* call("/api/v1/me/mcp-tokens", { method: "POST", headers: { ...bearer, "content-type": "application/json" }, body: "{}" })
      assert.strictEqual(mint.status, 403)
      assert.strictEqual(mint.json.error.code, "insufficient_scope")
    }))

  it.effect("the default scope is mcp:read; a scope outside the grants or the client's registration is invalid_scope", () =>
    Effect.gen(function*() {
      const flow = yield* toCode()
      const issued = yield* exchange(flow)
      assert.strictEqual(issued.status, 200)
      assert.strictEqual(issued.json.scope, "mcp:read")

      const { challenge } = pkce()
      const unknown = locationOf(yield* authorize(authorizeParams(flow.clientId, challenge, { scope: "mcp:read admin" })))
      assert.strictEqual(unknown.searchParams.get("error"), "invalid_scope")
      assert.strictEqual(unknown.searchParams.get("state"), "state-123")
      const readOnly = yield* registerClient({ scope: "mcp:read" })
      const outside = locationOf(yield* authorize(authorizeParams(readOnly, challenge, { scope: "mcp:write" })))
      assert.strictEqual(outside.searchParams.get("error"), "invalid_scope")
    }))

  it.effect("another client, another redirect_uri, an unknown code: invalid_grant; the right exchange still works once", () =>
    Effect.gen(function*() {
      const flow = yield* toCode()
      const otherClient = yield* registerClient()
      const attempts = [
        { client_id: otherClient, code: flow.code, redirect_uri: REDIRECT, code_verifier: flow.verifier },
        { client_id: flow.clientId, code: flow.code, redirect_uri: "https://agent.example/other", code_verifier: flow.verifier },
        { client_id: flow.clientId, code: "not-a-code", redirect_uri: REDIRECT, code_verifier: flow.verifier }
      ]
      for (const attempt of attempts) assertOAuthError(yield* token(attempt), 400, "invalid_grant")
      const sql = yield* SqlClient
      const minted = yield* sql<{ count: number }>`
        SELECT count(*)::int AS count FROM user_tokens WHERE mcp_client_id = ${flow.clientId}`
      assert.strictEqual(minted[0]?.count, 0)
      const issued = yield* exchange(flow)
      assert.strictEqual(issued.status, 200)
    }))

  // Both refusals of decision 0106, the same as the partner flow's /oauth/token (test/api/oauth-authorize.test.ts).
  const verifierRefusals: ReadonlyArray<readonly [string, () => Record<string, string>, string]> = [
    ["a wrong verifier", () => ({ code_verifier: pkce().verifier }), "The code_verifier does not match the code_challenge."],
    ["a missing verifier", () => ({}), "code_verifier is required: the code was issued with a code_challenge."]
  ]
  for (const [name, verifierOf, description] of verifierRefusals) {
    it.effect(`${name} is invalid_grant and spends the code (decision 0106): the right verifier is refused afterwards`, () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const flow = yield* toCode()
        const refused = yield* token({ client_id: flow.clientId, code: flow.code, redirect_uri: REDIRECT, ...verifierOf() })
        assertOAuthError(refused, 400, "invalid_grant")
        assert.strictEqual(refused.json.error_description, description)
        const codes = yield* sql<{ used: boolean; token_id: string | null }>`
          SELECT used_at IS NOT NULL AS used, token_id FROM mcp_authorization_codes WHERE code_hash = ${secretDigest(flow.code)}`
        assert.deepStrictEqual(codes, [{ used: true, token_id: null }])
        const again = yield* exchange(flow)
        assertOAuthError(again, 400, "invalid_grant")
        assert.strictEqual(again.json.error_description, "The authorization code was already used.")
        const minted = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM user_tokens WHERE mcp_client_id = ${flow.clientId}`
        assert.strictEqual(minted[0]?.count, 0)
      }))
  }

  it.effect("malformed token requests: invalid_request, unsupported_grant_type, and invalid_client for an unknown client", () =>
    Effect.gen(function*() {
      const flow = yield* toCode()
      const base = { client_id: flow.clientId, code: flow.code, redirect_uri: REDIRECT, code_verifier: flow.verifier }
      assertOAuthError(yield* token({ ...base, code_verifier: "too-short" }), 400, "invalid_request")
      assertOAuthError(yield* token({ ...base, code_verifier: `${"a".repeat(43)}!` }), 400, "invalid_request")
      const { redirect_uri: _redirect, ...noRedirect } = base
      assertOAuthError(yield* token(noRedirect), 400, "invalid_request")
      assertOAuthError(yield* post("/oauth/mcp/token", { ...base, grant_type: "client_credentials" }), 400, "unsupported_grant_type")
      assertOAuthError(yield* post("/oauth/mcp/token", base), 400, "invalid_request")
      const unknown = yield* token({ ...base, client_id: "svc_mcp_unknown" })
      assert.strictEqual(unknown.status, 401)
      assert.strictEqual(unknown.json.error, "invalid_client")
      // JSON works like the form.
      const json = yield* call("/oauth/mcp/token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ grant_type: "authorization_code", ...base })
      })
      assert.strictEqual(json.status, 200, json.text)
    }))

  it.effect("a code used twice: invalid_grant, and the token issued for it is revoked", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const flow = yield* toCode()
      const first = yield* exchange(flow)
      assert.strictEqual(first.status, 200)
      const bearer = { authorization: `Bearer ${first.json.access_token}` }
      assert.strictEqual((yield* call("/api/v1/workspaces", { headers: bearer })).status, 200)

      assertOAuthError(yield* exchange(flow), 400, "invalid_grant")
      const rows = yield* sql<{ revoked: boolean }>`
        SELECT revoked_at IS NOT NULL AS revoked FROM user_tokens WHERE secret_hash = ${secretDigest(first.json.access_token)}`
      assert.deepStrictEqual(rows.map((row) => row.revoked), [true])
      const refused = yield* call("/api/v1/workspaces", { headers: bearer })
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(refused.json.error.code, "unauthorized")
      const audited = yield* sql<{ count: number }>`
        SELECT count(*)::int AS count FROM audit_events WHERE action = 'user_token.revoked'
          AND target_id = (SELECT id::text FROM user_tokens WHERE secret_hash = ${secretDigest(first.json.access_token)})`
      assert.strictEqual(audited[0]?.count, 1)
    }))

  it.effect("an expired code is invalid_grant and mints nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const flow = yield* toCode()
      yield* sql`UPDATE mcp_authorization_codes SET expires_at = now() - interval '1 second' WHERE code_hash = ${secretDigest(flow.code)}`
      assertOAuthError(yield* exchange(flow), 400, "invalid_grant")
      const minted = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM user_tokens WHERE mcp_client_id = ${flow.clientId}`
      assert.strictEqual(minted[0]?.count, 0)
    }))

  it.effect("deny: back to the redirect URI with error=access_denied and the state, no code", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const flow = yield* toConsent()
      const denied = locationOf(yield* decide(flow.ticket, "deny", flow.cookie))
      assert.strictEqual(`${denied.origin}${denied.pathname}`, REDIRECT)
      assert.strictEqual(denied.searchParams.get("error"), "access_denied")
      assert.strictEqual(denied.searchParams.get("state"), "state-123")
      assert.isNull(denied.searchParams.get("code"))
      const codes = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM mcp_authorization_codes WHERE client_id = ${flow.clientId}`
      assert.strictEqual(codes[0]?.count, 0)
    }))

  it.effect("PKCE is required: a missing challenge, plain or a missing method, or a malformed challenge redirect invalid_request", () =>
    Effect.gen(function*() {
      const clientId = yield* registerClient()
      const { challenge } = pkce()
      const { code_challenge: _challenge, ...noChallenge } = authorizeParams(clientId, challenge)
      const { code_challenge_method: _method, ...noMethod } = authorizeParams(clientId, challenge)
      for (
        const params of [
          noChallenge,
          noMethod,
          authorizeParams(clientId, challenge, { code_challenge_method: "plain" }),
          authorizeParams(clientId, "too-short-for-s256", {}),
          authorizeParams(clientId, challenge, { response_type: "" })
        ]
      ) {
        const location = locationOf(yield* authorize(params))
        assert.strictEqual(`${location.origin}${location.pathname}`, REDIRECT)
        assert.strictEqual(location.searchParams.get("error"), "invalid_request")
        assert.strictEqual(location.searchParams.get("state"), "state-123")
        assert.isNotNull(location.searchParams.get("error_description"))
      }
      const token = locationOf(yield* authorize(authorizeParams(clientId, challenge, { response_type: "token" })))
      assert.strictEqual(token.searchParams.get("error"), "unsupported_response_type")
    }))

  it.effect("an unknown client or an unregistered redirect_uri: an error page, never a redirect", () =>
    Effect.gen(function*() {
      const clientId = yield* registerClient()
      const { challenge } = pkce()
      assertErrorPage(yield* authorize(authorizeParams("svc_mcp_nobody", challenge)), /not registered/)
      const { client_id: _client, ...noClient } = authorizeParams(clientId, challenge)
      assertErrorPage(yield* authorize(noClient), /client_id/)
      assertErrorPage(
        yield* authorize(authorizeParams(clientId, challenge, { redirect_uri: "https://evil.example/callback" })),
        /redirect URI of this request is not registered/
      )
      const { redirect_uri: _redirect, ...noRedirect } = authorizeParams(clientId, challenge)
      assertErrorPage(yield* authorize(noRedirect), /redirect_uri/)
      // Even with PKCE missing too, nothing goes to an unregistered address.
      const { code_challenge: _c, ...bare } = authorizeParams(clientId, challenge, { redirect_uri: "https://evil.example/cb" })
      assertErrorPage(yield* authorize(bare), /not registered/)
    }))

  it.effect("a loopback redirect URI may change its port at request time (RFC 8252); other hosts may not", () =>
    Effect.gen(function*() {
      const clientId = yield* registerClient({ redirect_uris: ["http://127.0.0.1:4000/callback"] })
      const { challenge } = pkce()
      const otherPort = yield* authorize(
        authorizeParams(clientId, challenge, { redirect_uri: "http://127.0.0.1:51234/callback" })
      )
      assertPageHeaders(otherPort)
      assert.match(otherPort.text, /type="password"/)
      assertErrorPage(
        yield* authorize(authorizeParams(clientId, challenge, { redirect_uri: "http://127.0.0.1:51234/other" })),
        /not registered/
      )
    }))

  it.effect("approve needs the page's ticket and the session it was shown to", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const flow = yield* toConsent()
      const other = yield* toConsent()

      assertErrorPage(yield* decide(undefined, "approve", flow.cookie), /not answered/)
      assertErrorPage(yield* decide(flow.ticket, "approve", undefined), /not signed in/)
      assertErrorPage(yield* decide("forged-ticket", "approve", flow.cookie), /expired, was already answered/)
      // Another person's session cannot use this ticket, and the attempt does not use it up.
      assertErrorPage(yield* decide(flow.ticket, "approve", other.cookie), /belongs to another sign-in/)
      // A cross-site post (Fetch Metadata) is refused before anything is read.
      assertErrorPage(yield* decide(flow.ticket, "approve", flow.cookie, { "sec-fetch-site": "cross-site" }), /another site/, 403)
      assertErrorPage(yield* decide(flow.ticket, "maybe", flow.cookie), /not answered/)
      const codes = yield* sql<{ count: number }>`
        SELECT count(*)::int AS count FROM mcp_authorization_codes WHERE client_id IN (${flow.clientId}, ${other.clientId})`
      assert.strictEqual(codes[0]?.count, 0)

      // The ticket still works for its own session, once; an expired one does not.
      const approved = locationOf(yield* decide(flow.ticket, "approve", flow.cookie))
      assert.isNotNull(approved.searchParams.get("code"))
      yield* sql`UPDATE mcp_consent_tickets SET expires_at = now() - interval '1 second' WHERE ticket_hash = ${secretDigest(other.ticket)}`
      assertErrorPage(yield* decide(other.ticket, "approve", other.cookie), /expired/)
    }))

  it.effect("a signed-out session cannot answer the consent screen", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const flow = yield* toConsent()
      yield* sql`UPDATE sessions SET revoked_at = now() WHERE secret_hash = ${secretDigest(flow.cookie.slice("svc_session=".length))}`
      assertErrorPage(yield* decide(flow.ticket, "approve", flow.cookie), /not signed in/)
      // Back at the authorization request, the person is asked to sign in again.
      const form = yield* authorize(flow.params, { cookie: flow.cookie })
      assertPageHeaders(form)
      assert.match(form.text, /type="password"/)
    }))
})

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("agent OAuth registration limit", (it) => {
  it.effect(`registration allows ${REGISTRATIONS_PER_ADDRESS_PER_HOUR} clients per address per hour, then 429 with Retry-After`, () =>
    Effect.gen(function*() {
      for (let i = 0; i < REGISTRATIONS_PER_ADDRESS_PER_HOUR; i++) {
        const response = yield* register({ redirect_uris: [REDIRECT] })
        assert.strictEqual(response.status, 201, `registration ${i + 1}`)
      }
      const refused = yield* register({ redirect_uris: [REDIRECT] })
      assert.strictEqual(refused.status, 429)
      assert.strictEqual(refused.json.error, "rate_limit_exceeded")
      assert.isString(refused.json.error_description)
      const retryAfter = Number(refused.headers.get("retry-after"))
      assert.isTrue(retryAfter > 0 && retryAfter <= 3600, String(retryAfter))
      assert.strictEqual(refused.json.retry_after_seconds, retryAfter)
    }))
})

// Runs after the tests above (vitest keeps a file's order): every status they saw an operation
// answer is in that operation's published responses, and the consent pages' error statuses are
// published as the HTML pages they are.
test("the published responses of /oauth/mcp/* list every status the tests above saw; error pages are text/html", () => {
  const paths = openApiDocument().paths as Record<string, Record<string, { readonly responses: Record<string, { readonly content?: Record<string, unknown> }> }>>
  const responsesOf = (operation: string) => {
    const [method = "", path = ""] = operation.split(" ")
    const published = paths[path]?.[method]?.responses
    assert.isDefined(published, operation)
    return published ?? {}
  }
  for (const [operation, statuses] of answered) {
    const published = Object.keys(responsesOf(operation))
    for (const status of statuses) assert.include(published, String(status), `${operation} answered ${status}`)
  }
  const pages: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    ["get /oauth/mcp/authorize", ["200", "302", "400"]],
    ["post /oauth/mcp/authorize/sign-in", ["200", "302", "400", "403"]],
    ["post /oauth/mcp/authorize/decision", ["302", "400", "403"]]
  ]
  for (const [operation, statuses] of pages) {
    const published = responsesOf(operation)
    assert.includeMembers(Object.keys(published), [...statuses], operation)
    for (const status of statuses.filter((status) => status !== "302")) {
      assert.property(published[status]?.content ?? {}, "text/html", `${operation} ${status}`)
    }
  }
})
