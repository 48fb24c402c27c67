/**
 * People can sign in (decision 0053): an operator's one-time link sets a password, the person
 * signs in, mints an MCP user token and signs out; links are single use; a reset signs the
 * person out everywhere; the quickstart reuses what it made. Sign-in throttling: login-throttle.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, OPERATOR_TOKEN, serveAppWithRequestClock, testSettings } from "../support/app.ts"

const operator = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }
const post = (path: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) =>
  call(path, { method: "POST", headers, body: JSON.stringify(body) })

const tokenOf = (url: string) => new URL(url).searchParams.get("token") ?? ""

const signIn = (email: string, password: string) =>
  Effect.map(post("/api/v1/sessions", { email, password }), (response) => ({
    status: response.status,
    cookie: `svc_session=${/svc_session=([^;]+)/.exec(response.headers.get("set-cookie") ?? "")?.[1] ?? ""}`,
    csrf: String(response.json?.data?.csrf_token ?? "")
  }))

layer(serveAppWithRequestClock(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("people and passwords", (it) => {
  it.effect("invite link → set password → sign in → mint an MCP user token → sign out", () =>
    Effect.gen(function*() {
      const email = `${crypto.randomUUID()}@people.example`
      const invited = yield* post("/api/v1/admin/people/password-links", { email, purpose: "invite" }, operator)
      assert.strictEqual(invited.status, 201, invited.text)
      assert.isTrue(invited.json.data.created_person)
      assert.match(invited.json.data.url, /\/account\/password\?token=[0-9A-Za-z]{43}$/)
      const token = tokenOf(invited.json.data.url)

      // No password yet: sign-in fails like any wrong password.
      assert.strictEqual((yield* signIn(email, "correct horse battery")).status, 401)

      const page = yield* call(`/account/password?token=${token}`)
      assert.strictEqual(page.status, 200)
      assert.include(page.text, email)
      assert.include(page.headers.get("content-security-policy") ?? "", "frame-ancestors 'none'")
      assert.strictEqual(page.headers.get("referrer-policy"), "no-referrer")

      const short = yield* post("/api/v1/passwords/set", { token, password: "short" })
      assert.strictEqual(short.status, 400)
      assert.strictEqual(short.json.error.code, "validation_error")
      const set = yield* post("/api/v1/passwords/set", { token, password: "correct horse battery" })
      assert.strictEqual(set.status, 200, set.text)
      assert.strictEqual(set.json.data.email, email)
      const again = yield* post("/api/v1/passwords/set", { token, password: "another horse battery" })
      assert.strictEqual(again.status, 400)
      assert.strictEqual(again.json.error.code, "invalid_request")
      assert.strictEqual((yield* call(`/account/password?token=${token}`)).status, 400)

      const sql = yield* SqlClient
      const [stored] = yield* sql<{ password_hash: string }>`SELECT password_hash FROM users WHERE lower(email) = ${email}`
      assert.match(stored?.password_hash ?? "", /^scrypt\$32768\$8\$1\$/)

      const session = yield* signIn(email, "correct horse battery")
      assert.strictEqual(session.status, 201)
      const minted = yield* call("/api/v1/me/mcp-tokens", {
        method: "POST",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
        body: JSON.stringify({ grants: ["mcp:read"] })
      })
      assert.strictEqual(minted.status, 201, minted.text)
      assert.match(minted.json.data.token, /^svc_user_/)
      const me = yield* call("/api/v1/me", { headers: { cookie: session.cookie } })
      assert.strictEqual(me.json.data.user.email, email)

      const out = yield* call("/api/v1/sessions/current", {
        method: "DELETE",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf }
      })
      assert.strictEqual(out.status, 204)
      const afterOut = yield* call("/api/v1/me/mcp-tokens", {
        method: "POST",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
        body: "{}"
      })
      assert.strictEqual(afterOut.status, 401)
    }))

  it.effect("a reset link (existing people only) sets a new password through the form and signs the person out everywhere", () =>
    Effect.gen(function*() {
      const email = `${crypto.randomUUID()}@people.example`
      const unknown = yield* post("/api/v1/admin/people/password-links", { email, purpose: "reset" }, operator)
      assert.strictEqual(unknown.status, 404)
      const invited = yield* post("/api/v1/admin/people/password-links", { email, purpose: "invite" }, operator)
      yield* post("/api/v1/passwords/set", { token: tokenOf(invited.json.data.url), password: "first password 1" })
      const session = yield* signIn(email, "first password 1")
      assert.strictEqual(session.status, 201)

      const first = yield* post("/api/v1/admin/people/password-links", { email, purpose: "reset" }, operator)
      const reset = yield* post("/api/v1/admin/people/password-links", { email, purpose: "reset" }, operator)
      assert.strictEqual(reset.status, 201)
      assert.isFalse(reset.json.data.created_person)
      // A new link voids the earlier one.
      assert.strictEqual((yield* call(`/account/password?token=${tokenOf(first.json.data.url)}`)).status, 400)

      const token = tokenOf(reset.json.data.url)
      // The page sets the form's pre-session cookie and carries the token matching it (decision 0107).
      const page = yield* call(`/account/password?token=${token}`)
      const formToken = /name="form_token" value="([^"]+)"/.exec(page.text)?.[1] ?? ""
      const formCookie = /(__Host-svc_form=[^;]+)/.exec(page.headers.get("set-cookie") ?? "")?.[1] ?? ""
      const form = (password: string, confirmation: string) =>
        call("/account/password", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", cookie: formCookie, "sec-fetch-site": "same-origin" },
          body: new URLSearchParams({ form_token: formToken, token, password, password_confirmation: confirmation }).toString()
        })
      const mismatch = yield* form("second password 2", "something else")
      assert.strictEqual(mismatch.status, 400)
      assert.include(mismatch.text, "differ")
      const done = yield* form("second password 2", "second password 2")
      assert.strictEqual(done.status, 200, done.text)
      assert.include(done.text, "Password set")

      // The session opened before the reset is gone; the old password no longer works.
      assert.strictEqual((yield* call("/api/v1/me", { headers: { cookie: session.cookie } })).status === 200 &&
        (yield* call("/api/v1/me/mcp-tokens", {
          method: "POST",
          headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
          body: "{}"
        })).status === 201, false)
      assert.strictEqual((yield* signIn(email, "first password 1")).status, 401)
      assert.strictEqual((yield* signIn(email, "second password 2")).status, 201)
    }))

  it.effect("the quickstart makes a working account and reuses it on a second run, with a new API key", () =>
    Effect.gen(function*() {
      const email = `${crypto.randomUUID()}@quickstart.example`
      const first = yield* post("/api/v1/admin/quickstart", { email }, operator)
      assert.strictEqual(first.status, 201, first.text)
      const bundle = first.json.data
      assert.deepStrictEqual(bundle.created, { person: true, workspace: true, profile: true, definition: true })
      for (const scope of ["analytics:read", "events:write", "goals:write", "tracking:write"]) {
        assert.include(bundle.api_key_scopes, scope)
      }
      // The local service's origin (an http origin other than localhost is not a valid tracking origin).
      assert.isTrue(bundle.allowed_origins.some((origin: string) => origin.startsWith("http://localhost:")))
      const second = yield* post("/api/v1/admin/quickstart", { email }, operator)
      assert.strictEqual(second.status, 201)
      assert.deepStrictEqual(second.json.data.created, { person: false, workspace: false, profile: false, definition: false })
      assert.strictEqual(second.json.data.profile_id, bundle.profile_id)
      assert.strictEqual(second.json.data.tracking_key, bundle.tracking_key)
      assert.notStrictEqual(second.json.data.api_key, bundle.api_key)

      const event = yield* post("/api/v1/events", {
        event_name: "purchase",
        properties: { value: "49.00", currency: "USD" },
        user_traits: { external_id: "qs_customer_1" }
      }, { authorization: `Bearer ${bundle.api_key}`, "content-type": "application/json" })
      assert.strictEqual(event.status, 200, event.text)
      assert.isString(event.json.data.conversion_id)

      const anonymous = yield* post("/api/v1/admin/quickstart", {})
      assert.strictEqual(anonymous.status, 401)
    }))
})
