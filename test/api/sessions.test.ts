import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { hashPassword } from "../../src/accounts/sessions/service.ts"
import { secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { adjustRequestTime, call, serveAppWithRequestClock, testSettings } from "../support/app.ts"
import { seedProfile } from "../support/tenancy.ts"

const PASSWORD = "correct horse battery staple"

/** A person with a scrypt password and an owner membership in a new workspace. */
export const seedPasswordUser = Effect.fn("test.seedPasswordUser")(function*(
  options: { readonly password?: string | null } = {}
) {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const userId = crypto.randomUUID()
  const email = `${userId}@people.example`
  const password = options.password === undefined ? PASSWORD : options.password
  const hash = password === null ? null : yield* hashPassword(password)
  yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${userId}, ${email}, ${hash})`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${profile.workspaceId}, ${userId}, 'owner')`
  return { userId, email, profile }
})

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

const login = (email: string, password: string) => call("/api/v1/sessions", { method: "POST", ...json({ email, password }) })

/** Signs in and returns the cookie header value and the CSRF token. */
const signIn = (email: string) =>
  Effect.map(login(email, PASSWORD), (response) => {
    const setCookie = response.headers.get("set-cookie") ?? ""
    const match = /svc_session=([^;]+)/.exec(setCookie)
    assert.isNotNull(match)
    return { cookie: `svc_session=${match?.[1] ?? ""}`, secret: match?.[1] ?? "", csrf: String(response.json.data.csrf_token) }
  })

layer(serveAppWithRequestClock(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("console sessions", (it) => {
  it.effect("a right password signs in: 201, an HttpOnly Secure SameSite=Lax cookie, only digests stored", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const user = yield* seedPasswordUser()
      const response = yield* login(user.email.toUpperCase(), PASSWORD)
      assert.strictEqual(response.status, 201)
      assert.strictEqual(response.json.data.user_id, user.userId)
      assert.strictEqual(response.json.data.email, user.email)
      assert.match(response.json.data.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      const hours = (Date.parse(response.json.data.expires_at) - Date.now()) / 3_600_000
      assert.isTrue(hours > 11.9 && hours <= 12)
      const setCookie = response.headers.get("set-cookie") ?? ""
      assert.match(setCookie, /^svc_session=svc_sess_[0-9A-Za-z]+;/)
      for (const attribute of [/;\s*HttpOnly/i, /;\s*Secure/i, /;\s*SameSite=Lax/i, /;\s*Path=\//i, /;\s*Max-Age=43200/i]) {
        assert.match(setCookie, attribute)
      }
      const secret = /svc_session=([^;]+)/.exec(setCookie)?.[1] ?? ""
      const rows = yield* sql<{ secret_hash: string; csrf_token_hash: string }>`
        SELECT secret_hash, csrf_token_hash FROM sessions WHERE user_id = ${user.userId}`
      assert.strictEqual(rows.length, 1)
      assert.strictEqual(rows[0]?.secret_hash, secretDigest(secret))
      assert.strictEqual(rows[0]?.csrf_token_hash, secretDigest(response.json.data.csrf_token))
      const stored = yield* sql<{ password_hash: string }>`SELECT password_hash FROM users WHERE id = ${user.userId}`
      assert.match(stored[0]?.password_hash ?? "", /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/)
    }))

  it.effect("a wrong password, an unknown email and a person without a password get the same 401", () =>
    Effect.gen(function*() {
      const user = yield* seedPasswordUser()
      const passwordless = yield* seedPasswordUser({ password: null })
      const answers = [
        yield* login(user.email, "wrong password"),
        yield* login(`${crypto.randomUUID()}@nobody.example`, PASSWORD),
        yield* login(passwordless.email, ""),
        yield* login(passwordless.email, PASSWORD)
      ]
      for (const answer of answers) {
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(answer.json.error.code, "unauthorized")
        assert.strictEqual(answer.json.error.message, answers[0]?.json.error.message)
        assert.isNull(answer.headers.get("set-cookie"))
      }
      const malformed = yield* call("/api/v1/sessions", { method: "POST", ...json({ email: user.email }) })
      assert.strictEqual(malformed.status, 400)
    }))

  it.effect("the session reaches GET /api/v1/me", () =>
    Effect.gen(function*() {
      const user = yield* seedPasswordUser()
      const session = yield* signIn(user.email)
      const me = yield* call("/api/v1/me", { headers: { cookie: session.cookie } })
      assert.strictEqual(me.status, 200)
      assert.strictEqual(me.json.data.kind, "session")
      assert.strictEqual(me.json.data.user.id, user.userId)
    }))

  it.effect("a session write needs X-CSRF-Token: missing or wrong is 403 insufficient_scope (reason csrf)", () =>
    Effect.gen(function*() {
      const user = yield* seedPasswordUser()
      const session = yield* signIn(user.email)
      const mint = (headers: Record<string, string>) => call("/api/v1/me/mcp-tokens", { method: "POST", ...json({}, headers) })
      for (const headers of [{ cookie: session.cookie }, { cookie: session.cookie, "x-csrf-token": "not-the-token" }]) {
        const refused = yield* mint(headers)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual(refused.json.error.reason, "csrf")
      }
      const minted = yield* mint({ cookie: session.cookie, "x-csrf-token": session.csrf })
      assert.strictEqual(minted.status, 201)
    }))

  it.effect("sign-out revokes the session and clears the cookie; the cookie then answers 401", () =>
    Effect.gen(function*() {
      const user = yield* seedPasswordUser()
      const session = yield* signIn(user.email)
      const noCsrf = yield* call("/api/v1/sessions/current", { method: "DELETE", headers: { cookie: session.cookie } })
      assert.strictEqual(noCsrf.status, 403)
      const out = yield* call("/api/v1/sessions/current", {
        method: "DELETE",
        headers: { cookie: session.cookie, "x-csrf-token": session.csrf }
      })
      assert.strictEqual(out.status, 204)
      const cleared = out.headers.get("set-cookie") ?? ""
      assert.match(cleared, /^svc_session=;/)
      assert.match(cleared, /Max-Age=0/i)
      // Writes stop at once (the CSRF check reads the session row)...
      const write = yield* call("/api/v1/me/mcp-tokens", {
        method: "POST",
        ...json({}, { cookie: session.cookie, "x-csrf-token": session.csrf })
      })
      assert.strictEqual(write.status, 401)
      // ...reads once the five-second credential cache has let go.
      yield* adjustRequestTime("6 seconds")
      const read = yield* call("/api/v1/me", { headers: { cookie: session.cookie } })
      assert.strictEqual(read.status, 401)
      assert.strictEqual(read.json.error.code, "unauthorized")
    }))

  it.effect("a session mints an MCP user token (shown once, audited) that authenticates; user tokens cannot mint", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const user = yield* seedPasswordUser()
      const session = yield* signIn(user.email)
      const headers = { cookie: session.cookie, "x-csrf-token": session.csrf }
      const minted = yield* call("/api/v1/me/mcp-tokens", { method: "POST", ...json({}, headers) })
      assert.strictEqual(minted.status, 201)
      const data = minted.json.data
      assert.match(data.token, /^svc_user_[0-9A-Za-z]{38}$/)
      assert.strictEqual(data.prefix, data.token.slice(0, 13))
      assert.deepStrictEqual(data.grants, ["mcp:read"])
      assert.strictEqual(data.rate_limit_units_per_minute, 120)
      assert.isNull(data.expires_at)
      const rows = yield* sql<{ secret_hash: string; user_id: string }>`SELECT secret_hash, user_id FROM user_tokens WHERE id = ${data.id}`
      assert.strictEqual(rows[0]?.secret_hash, secretDigest(data.token))
      assert.strictEqual(rows[0]?.user_id, user.userId)
      const audited = yield* sql<{ actor_kind: string; actor_user_id: string }>`
        SELECT actor_kind, actor_user_id FROM audit_events WHERE action = 'user_token.created' AND target_id = ${data.id}`
      assert.deepStrictEqual(audited.map((row) => [row.actor_kind, row.actor_user_id]), [["session", user.userId]])

      const custom = yield* call("/api/v1/me/mcp-tokens", {
        method: "POST",
        ...json({ grants: ["mcp:read", "mcp:write"], rate_limit_units_per_minute: 30, expires_in_days: 7 }, headers)
      })
      assert.strictEqual(custom.status, 201)
      assert.deepStrictEqual(custom.json.data.grants, ["mcp:read", "mcp:write"])
      assert.strictEqual(custom.json.data.rate_limit_units_per_minute, 30)
      const days = (Date.parse(custom.json.data.expires_at) - Date.now()) / 86_400_000
      assert.isTrue(days > 6.9 && days <= 7)
      const invalid = yield* call("/api/v1/me/mcp-tokens", {
        method: "POST",
        ...json({ grants: ["connections:read"], rate_limit_units_per_minute: 0 }, headers)
      })
      assert.strictEqual(invalid.status, 400)
      assert.strictEqual(invalid.json.error.code, "validation_error")

      const bearer = { authorization: `Bearer ${data.token}` }
      const listed = yield* call("/api/v1/workspaces", { headers: bearer })
      assert.strictEqual(listed.status, 200)
      assert.deepStrictEqual(listed.json.data.map((workspace: { workspace_id: string }) => workspace.workspace_id), [user.profile.workspaceId])
      // A bearer credential is not subject to the CSRF check; a user token is refused by kind.
      const again = yield* call("/api/v1/me/mcp-tokens", { method: "POST", ...json({}, bearer) })
      assert.strictEqual(again.status, 403)
      assert.strictEqual(again.json.error.code, "insufficient_scope")
      assert.strictEqual(again.json.error.reason, "credential_kind_not_accepted")
      assert.strictEqual((yield* call("/api/v1/me", { headers: bearer })).status, 403)
    }))
})
