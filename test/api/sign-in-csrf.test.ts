/**
 * Login CSRF (issue 29 item 7, decision 0107): no form or endpoint that signs a person in (or
 * sets a password) takes a post another site makes. Browser forms must name this origin
 * (`Sec-Fetch-Site`, else `Origin`) and carry the page's form token matching its
 * `__Host-svc_form` cookie; the JSON sign-in refuses a browser naming another site and serves
 * clients that name none. A refusal writes nothing: no session row, no cookie, no password.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHash, randomBytes } from "node:crypto"
import { hashPassword, LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS } from "../../src/accounts/sessions/service.ts"
import { call, type HttpResult, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { callFrom, freshLoopbackAddress } from "../support/peer.ts"

const PASSWORD = "correct horse battery staple"
const FORM = "application/x-www-form-urlencoded"
const REDIRECT = "https://agent.example/callback"
/** testSettings' base URL. */
const OWN_ORIGIN = "http://svc.test"

/** Headers a browser sends on a form post another site makes, and the ones a post of our own pages sends. */
const FOREIGN: ReadonlyArray<readonly [string, Record<string, string>]> = [
  ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
  ["Sec-Fetch-Site: same-site", { "sec-fetch-site": "same-site" }],
  ["Sec-Fetch-Site: cross-site with our Origin", { "sec-fetch-site": "cross-site", origin: OWN_ORIGIN }],
  ["a foreign Origin without Sec-Fetch-Site", { origin: "https://evil.example" }],
  ["a look-alike Origin without Sec-Fetch-Site", { origin: "http://svc.test.evil.example" }]
]
const OWN: ReadonlyArray<readonly [string, Record<string, string>]> = [
  // Our pages send no referrer, so a browser serializes their form posts' Origin as null.
  ["Sec-Fetch-Site: same-origin with Origin: null", { "sec-fetch-site": "same-origin", origin: "null" }],
  ["our Origin without Sec-Fetch-Site", { origin: OWN_ORIGIN }]
]

const seedUser = Effect.fn("test.seedUser")(function*() {
  const sql = yield* SqlClient
  const id = crypto.randomUUID()
  const email = `${id}@people.example`
  yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${id}, ${email}, ${yield* hashPassword(PASSWORD)})`
  return { id, email }
})

const sessionsOf = (userId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions WHERE user_id = ${userId}`, (rows) => rows[0]?.n))

const formPost = (path: string, params: Record<string, string>, headers: Record<string, string>) =>
  call(path, { method: "POST", redirect: "manual", headers: { "content-type": FORM, ...headers }, body: new URLSearchParams(params).toString() })

/** The form token a page carries and the cookie it set (decision 0107). */
const formOf = (page: HttpResult) => {
  const token = /name="form_token" value="([^"]+)"/.exec(page.text)?.[1]
  const cookie = /__Host-svc_form=([^;]+)/.exec(page.headers.get("set-cookie") ?? "")?.[1]
  assert.isDefined(token, "the page carries a form token")
  assert.isDefined(cookie, "the page sets the form cookie")
  return { token: token ?? "", cookie: `__Host-svc_form=${cookie ?? ""}`, value: cookie ?? "" }
}

const assertRefusedPage = (response: HttpResult, text: RegExp) => {
  assert.strictEqual(response.status, 403, response.text)
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/)
  assert.isNull(response.headers.get("set-cookie"), "a refusal sets no cookie")
  assert.isNull(response.headers.get("location"))
  assert.match(response.text, text)
}

const registerClient = Effect.fn("test.registerClient")(function*() {
  const response = yield* call("/oauth/mcp/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "Test agent" })
  })
  assert.strictEqual(response.status, 201, response.text)
  return response.json.client_id as string
})

const authorizeParams = (clientId: string) => ({
  response_type: "code",
  client_id: clientId,
  redirect_uri: REDIRECT,
  state: "state-1",
  code_challenge: createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url"),
  code_challenge_method: "S256"
})

const authorize = (params: Record<string, string>, headers: Record<string, string> = {}) =>
  call(`/oauth/mcp/authorize?${new URLSearchParams(params).toString()}`, { redirect: "manual", headers })

const assertConsent = (response: HttpResult, what: string) => {
  assert.strictEqual(response.status, 200, `${what}: ${response.text}`)
  assert.match(response.text, /name="ticket"/, what)
  assert.match(response.headers.get("set-cookie") ?? "", /^svc_session=svc_sess_/, what)
}

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("sign-in CSRF", (it) => {
  it.effect("POST /api/v1/sessions: a browser naming another site is 403 insufficient_scope (csrf), no cookie, no session; our origin and non-browser clients sign in", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const login = (headers: Record<string, string>) =>
        call("/api/v1/sessions", {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ email: user.email, password: PASSWORD })
        })
      for (const [what, headers] of [...FOREIGN, ["Origin: null without Sec-Fetch-Site", { origin: "null" }] as const]) {
        const refused = yield* login(headers)
        assert.strictEqual(refused.status, 403, `${what}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, "insufficient_scope", what)
        assert.strictEqual(refused.json.error.reason, "csrf", what)
        assert.isNull(refused.headers.get("set-cookie"), what)
      }
      assert.strictEqual(yield* sessionsOf(user.id), 0)
      assert.strictEqual((yield* call("/api/v1/me")).status, 401)

      const allowed: ReadonlyArray<readonly [string, Record<string, string>]> = [
        ["neither header (curl, SDKs)", {}],
        ["Sec-Fetch-Site: same-origin", { "sec-fetch-site": "same-origin" }],
        ["Sec-Fetch-Site: none", { "sec-fetch-site": "none" }],
        ...OWN
      ]
      for (const [what, headers] of allowed) {
        const signedIn = yield* login(headers)
        assert.strictEqual(signedIn.status, 201, `${what}: ${signedIn.text}`)
        const cookie = /^(svc_session=[^;]+)/.exec(signedIn.headers.get("set-cookie") ?? "")?.[1]
        assert.isDefined(cookie, what)
        assert.strictEqual((yield* call("/api/v1/me", { headers: { cookie: cookie ?? "" } })).status, 200, what)
      }
      assert.strictEqual(yield* sessionsOf(user.id), allowed.length)
    }))

  it.effect("the MCP sign-in form sets a __Host- SameSite=Strict cookie and carries its token; other tabs share it", () =>
    Effect.gen(function*() {
      const params = authorizeParams(yield* registerClient())
      const page = yield* authorize(params)
      assert.strictEqual(page.status, 200, page.text)
      const form = formOf(page)
      const setCookie = page.headers.get("set-cookie") ?? ""
      for (const attribute of [/;\s*HttpOnly/i, /;\s*Secure/i, /;\s*SameSite=Strict/i, /;\s*Path=\/(;|$)/i, /;\s*Max-Age=86400/i]) {
        assert.match(setCookie, attribute)
      }
      assert.notMatch(setCookie, /domain=/i)
      assert.match(form.value, /^[0-9A-Za-z]{43}$/)
      // The page carries a digest of the cookie, never the cookie itself.
      assert.notInclude(page.text, form.value)
      const again = yield* authorize(params, { cookie: form.cookie })
      assert.isNull(again.headers.get("set-cookie"))
      assert.include(again.text, `name="form_token" value="${form.token}"`)
    }))

  it.effect("POST /oauth/mcp/authorize/sign-in: another site's post, or one without the page's token and cookie, is a 403 page; nobody is signed in", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const params = authorizeParams(yield* registerClient())
      const form = formOf(yield* authorize(params))
      const other = formOf(yield* authorize(params))
      const signIn = (fields: Record<string, string>, headers: Record<string, string>) =>
        formPost("/oauth/mcp/authorize/sign-in", { ...params, email: user.email, password: PASSWORD, ...fields }, headers)

      // With the valid token and cookie, a post naming another site is still refused.
      for (const [what, headers] of FOREIGN) {
        const refused = yield* signIn({ form_token: form.token }, { cookie: form.cookie, ...headers })
        assertRefusedPage(refused, /posted from another site/)
        assert.notMatch(refused.text, /name="ticket"/, what)
      }
      // A cross-site post that is not even a form is refused as cross-site, before its body matters.
      const notForm = yield* call("/oauth/mcp/authorize/sign-in", {
        method: "POST",
        headers: { "content-type": "text/plain", "sec-fetch-site": "cross-site" },
        body: new URLSearchParams({ ...params, email: user.email, password: PASSWORD }).toString()
      })
      assertRefusedPage(notForm, /posted from another site/)

      // Our own origin, but no proof that this browser opened the form here.
      const same = { "sec-fetch-site": "same-origin", origin: "null" }
      const stale: ReadonlyArray<readonly [Record<string, string>, Record<string, string>]> = [
        [{}, { cookie: form.cookie, ...same }],
        [{ form_token: "" }, { cookie: form.cookie, ...same }],
        [{ form_token: form.token.replace(/^./, (c) => (c === "a" ? "b" : "a")) }, { cookie: form.cookie, ...same }],
        [{ form_token: form.token }, same],
        [{ form_token: form.token }, { cookie: other.cookie, ...same }],
        [{ form_token: form.token }, { cookie: "__Host-svc_form=not-a-key", ...same }],
        // Origin: null without Sec-Fetch-Site (an old browser, or a sandboxed frame): the token decides.
        [{}, { cookie: form.cookie, origin: "null" }],
        // Neither header (a client that is not a browser): the token decides.
        [{ form_token: other.token }, { cookie: form.cookie }]
      ]
      for (const [fields, headers] of stale) assertRefusedPage(yield* signIn(fields, headers), /form token does not match/)
      assert.strictEqual(yield* sessionsOf(user.id), 0)

      // The page's own post signs in, whichever of the two headers the browser sends.
      for (const [what, headers] of OWN) {
        assertConsent(yield* signIn({ form_token: form.token }, { cookie: form.cookie, ...headers }), what)
      }
      assertConsent(yield* signIn({ form_token: other.token }, { cookie: other.cookie, origin: "null" }), "Origin: null with the token")
      assert.strictEqual(yield* sessionsOf(user.id), OWN.length + 1)
    }))

  it.effect("the consent decision refuses a foreign Origin without Sec-Fetch-Site too (shared check)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const user = yield* seedUser()
      const clientId = yield* registerClient()
      const params = authorizeParams(clientId)
      const form = formOf(yield* authorize(params))
      const consent = yield* formPost(
        "/oauth/mcp/authorize/sign-in",
        { ...params, email: user.email, password: PASSWORD, form_token: form.token },
        { cookie: form.cookie, "sec-fetch-site": "same-origin" }
      )
      assertConsent(consent, "sign-in")
      const session = /^(svc_session=[^;]+)/.exec(consent.headers.get("set-cookie") ?? "")?.[1] ?? ""
      const ticket = /name="ticket" value="([^"]+)"/.exec(consent.text)?.[1] ?? ""
      for (const [, headers] of FOREIGN) {
        assertRefusedPage(
          yield* formPost("/oauth/mcp/authorize/decision", { ticket, decision: "approve" }, { cookie: session, ...headers }),
          /another site/
        )
      }
      const codes = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM mcp_authorization_codes WHERE client_id = ${clientId}`
      assert.strictEqual(codes[0]?.n, 0)
      const approved = yield* formPost("/oauth/mcp/authorize/decision", { ticket, decision: "approve" }, { cookie: session, origin: "null" })
      assert.strictEqual(approved.status, 302, approved.text)
    }))

  it.effect("the MCP form is throttled per email and address: 429 + Retry-After at address A, while address B signs in", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const params = authorizeParams(yield* registerClient())
      const form = formOf(yield* authorize(params))
      const signInFrom = (from: string, password: string) =>
        callFrom(from, "/oauth/mcp/authorize/sign-in", {
          method: "POST",
          headers: { "content-type": FORM, cookie: form.cookie, "sec-fetch-site": "same-origin" },
          body: new URLSearchParams({ ...params, email: user.email, password, form_token: form.token }).toString()
        })
      const attacker = freshLoopbackAddress()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS; attempt++) {
        const wrong = yield* signInFrom(attacker, "wrong password")
        assert.strictEqual(wrong.status, 200, `attempt ${attempt + 1}`)
        assert.match(wrong.text, /Unknown email or wrong password/)
      }
      const throttled = yield* signInFrom(attacker, PASSWORD)
      assert.strictEqual(throttled.status, 429, throttled.text)
      const retryAfter = Number(throttled.headers.get("retry-after"))
      assert.isTrue(retryAfter > 0 && retryAfter <= 15 * 60, String(retryAfter))
      assert.match(throttled.text, /Too many failed sign-ins/)
      assert.match(throttled.text, /type="password"/)
      assert.isNull(throttled.headers.get("set-cookie"))
      assert.strictEqual(yield* sessionsOf(user.id), 0)

      assertConsent(yield* signInFrom(freshLoopbackAddress(), PASSWORD), "the right password from another address")
      assert.strictEqual(yield* sessionsOf(user.id), 1)
    }))

  it.effect("the set-password form refuses another site's post and one without its token: the link stays unused, no password is set", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const email = `${crypto.randomUUID()}@people.example`
      const invited = yield* call("/api/v1/admin/people/password-links", {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ email, purpose: "invite" })
      })
      assert.strictEqual(invited.status, 201, invited.text)
      const token = new URL(invited.json.data.url).searchParams.get("token") ?? ""
      const page = yield* call(`/account/password?token=${token}`)
      assert.strictEqual(page.status, 200)
      const form = formOf(page)
      const fields = { token, password: "a new password 1", password_confirmation: "a new password 1" }
      for (const [, headers] of FOREIGN) {
        assertRefusedPage(
          yield* formPost("/account/password", { ...fields, form_token: form.token }, { cookie: form.cookie, ...headers }),
          /posted from another site/
        )
      }
      assertRefusedPage(yield* formPost("/account/password", fields, { cookie: form.cookie, "sec-fetch-site": "same-origin" }), /not opened here/)
      assertRefusedPage(yield* formPost("/account/password", { ...fields, form_token: form.token }, { origin: "null" }), /not opened here/)
      const stored = yield* sql<{ password_hash: string | null }>`SELECT password_hash FROM users WHERE lower(email) = ${email}`
      assert.isNull(stored[0]?.password_hash)
      assert.strictEqual((yield* call(`/account/password?token=${token}`)).status, 200, "the link is still usable")

      const done = yield* formPost("/account/password", { ...fields, form_token: form.token }, { cookie: form.cookie, origin: "null" })
      assert.strictEqual(done.status, 200, done.text)
      assert.include(done.text, "Password set")
    }))
})
