/**
 * Login throttling (decisions 0025, 0107): failures count per (email, client address) and per
 * client address; nothing counts per email alone, so failures from one address never refuse the
 * right password from another. Each client is its own loopback address (test/support/peer.ts).
 */
import { assert, it as test, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import {
  hashPassword,
  LOGIN_FAILURE_WINDOW_MINUTES,
  LOGIN_FAILURES_PER_ADDRESS,
  LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS,
  throttleAddressOf
} from "../../src/accounts/sessions/service.ts"
import { adjustRequestTime, type HttpResult, serveAppWithRequestClock, testSettings } from "../support/app.ts"
import { callFrom, freshLoopbackAddress } from "../support/peer.ts"

const PASSWORD = "correct horse battery staple"
const WINDOW_SECONDS = LOGIN_FAILURE_WINDOW_MINUTES * 60

/** One scrypt hash of the password, shared by every person of this file. */
const hashed = Effect.runPromise(hashPassword(PASSWORD))

const seedUser = Effect.fn("test.seedUser")(function*() {
  const sql = yield* SqlClient
  const id = crypto.randomUUID()
  const email = `${id}@people.example`
  yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${id}, ${email}, ${yield* Effect.promise(() => hashed)})`
  return { id, email }
})

const login = (from: string, email: string, password: string) =>
  callFrom(from, "/api/v1/sessions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password })
  })

const sessionsOf = (userId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions WHERE user_id = ${userId}`, (rows) => rows[0]?.n))

const assertThrottled = (response: HttpResult, reason: string) => {
  assert.strictEqual(response.status, 429, response.text)
  assert.strictEqual(response.json.error.code, "rate_limit_exceeded")
  assert.strictEqual(response.json.error.status, 429)
  assert.strictEqual(response.json.error.reason, reason)
  const retryAfter = Number(response.headers.get("retry-after"))
  assert.strictEqual(response.json.error.retry_after_seconds, retryAfter)
  assert.isTrue(retryAfter > 0 && retryAfter <= WINDOW_SECONDS, String(retryAfter))
  assert.isNull(response.headers.get("set-cookie"))
  return retryAfter
}

const assertSignedIn = (response: HttpResult, what: string) => {
  assert.strictEqual(response.status, 201, `${what}: ${response.text}`)
  assert.match(response.headers.get("set-cookie") ?? "", /^svc_session=svc_sess_/)
}

layer(serveAppWithRequestClock(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("login throttling per email and address", (it) => {
  it.effect("10 failures from address A refuse that email from A (429 + Retry-After, even the right password); from B the right password signs in", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const attacker = freshLoopbackAddress()
      const person = freshLoopbackAddress()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS; attempt++) {
        const failed = yield* login(attacker, attempt % 2 === 0 ? user.email : user.email.toUpperCase(), "wrong password")
        assert.strictEqual(failed.status, 401, `attempt ${attempt + 1}`)
      }
      const retryAfter = assertThrottled(yield* login(attacker, user.email, "wrong password"), "login_throttled_email")
      assert.isTrue(retryAfter > WINDOW_SECONDS - 60, "a burst of ten failures holds the email at that address for about the window")
      // A throttled attempt does not check the password: the right one is refused too, no session.
      assertThrottled(yield* login(attacker, ` ${user.email.toUpperCase()} `, PASSWORD), "login_throttled_email")
      assert.strictEqual(yield* sessionsOf(user.id), 0)

      // The person, from their own address, is not locked out.
      assertSignedIn(yield* login(person, user.email, PASSWORD), "the right password from another address")
      assert.strictEqual(yield* sessionsOf(user.id), 1)
      // Another email from the attacker's address is not affected either.
      const other = yield* seedUser()
      assertSignedIn(yield* login(attacker, other.email, PASSWORD), "another email from the throttled address")

      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
      assertSignedIn(yield* login(attacker, user.email, PASSWORD), "after the window")
      assert.strictEqual(yield* sessionsOf(user.id), 2)
    }))

  it.effect("no per-email ceiling: failures for one email from many addresses never refuse the right password from a fresh one", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      for (let bot = 0; bot < 3; bot++) {
        const from = freshLoopbackAddress()
        for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS; attempt++) {
          assert.strictEqual((yield* login(from, user.email, "guess")).status, 401, `address ${bot + 1}, attempt ${attempt + 1}`)
        }
        assertThrottled(yield* login(from, user.email, PASSWORD), "login_throttled_email")
      }
      assertSignedIn(yield* login(freshLoopbackAddress(), user.email, PASSWORD), "a fresh address after 30 failures elsewhere")
      assert.strictEqual(yield* sessionsOf(user.id), 1)
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
    }))

  it.effect("a successful login does not consume the failure bucket", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const from = freshLoopbackAddress()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS - 1; attempt++) {
        assert.strictEqual((yield* login(from, user.email, "wrong password")).status, 401)
      }
      for (let attempt = 0; attempt < 3; attempt++) {
        assertSignedIn(yield* login(from, user.email, PASSWORD), `success ${attempt + 1}`)
      }
      // The tenth failure is still a plain 401; only the attempt after it is throttled.
      assert.strictEqual((yield* login(from, user.email, "wrong password")).status, 401)
      assertThrottled(yield* login(from, user.email, PASSWORD), "login_throttled_email")
      assert.strictEqual(yield* sessionsOf(user.id), 3)
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
    }))

  it.effect("unknown emails are counted like known ones (no hint that the email exists)", () =>
    Effect.gen(function*() {
      const unknown = `${crypto.randomUUID()}@nobody.example`
      const from = freshLoopbackAddress()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS; attempt++) {
        assert.strictEqual((yield* login(from, unknown, PASSWORD)).status, 401)
      }
      assertThrottled(yield* login(from, unknown, PASSWORD), "login_throttled_email")
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
    }))
})

layer(serveAppWithRequestClock(testSettings()), { timeout: "180 seconds", excludeTestServices: true })("login throttling per client address", (it) => {
  it.effect("after 50 failures from one address across many emails, every email is refused from it (429); other addresses are not", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      const sprayer = freshLoopbackAddress()
      // Spread over several emails, none reaching its own limit.
      const perEmail = LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS / 2
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_ADDRESS; attempt++) {
        const email = `spray-${Math.floor(attempt / perEmail)}@nobody.example`
        assert.strictEqual((yield* login(sprayer, email, "guess")).status, 401, `attempt ${attempt + 1}`)
      }
      assertThrottled(yield* login(sprayer, user.email, PASSWORD), "login_throttled_address")
      assert.strictEqual(yield* sessionsOf(user.id), 0)
      assertSignedIn(yield* login(freshLoopbackAddress(), user.email, PASSWORD), "from another address")
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
      assertSignedIn(yield* login(sprayer, user.email, PASSWORD), "after the window")
      assert.strictEqual(yield* sessionsOf(user.id), 2)
    }))
})

test("the throttled client address: IPv4 as connected; IPv6 by its /64 (one subscriber's block), however written", () => {
  assert.strictEqual(throttleAddressOf("203.0.113.9"), "203.0.113.9")
  assert.strictEqual(throttleAddressOf("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64")
  assert.strictEqual(throttleAddressOf("2001:0DB8:0001:0002:ffff:ffff:ffff:fffe"), "2001:db8:1:2::/64")
  assert.strictEqual(throttleAddressOf("2001:db8::1"), "2001:db8:0:0::/64")
  assert.notStrictEqual(throttleAddressOf("2001:db8:1:3::1"), throttleAddressOf("2001:db8:1:2::1"))
})
