import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import {
  hashPassword,
  LOGIN_FAILURE_WINDOW_MINUTES,
  LOGIN_FAILURES_PER_ADDRESS,
  LOGIN_FAILURES_PER_EMAIL
} from "../../src/auth/sessions/service.ts"
import { adjustRequestTime, call, type HttpResult, serveAppWithRequestClock, testSettings } from "../support/app.ts"

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

const login = (email: string, password: string) =>
  call("/api/v1/sessions", {
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

layer(serveAppWithRequestClock(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("login throttling per email", (it) => {
  it.effect("after 10 failures the email is refused with 429 + Retry-After, even with the right password, until the window passes", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL; attempt++) {
        const failed = yield* login(attempt % 2 === 0 ? user.email : user.email.toUpperCase(), "wrong password")
        assert.strictEqual(failed.status, 401, `attempt ${attempt + 1}`)
      }
      const retryAfter = assertThrottled(yield* login(user.email, "wrong password"), "login_throttled_email")
      assert.isTrue(retryAfter > WINDOW_SECONDS - 60, "a burst of ten failures holds the email for about the window")
      // A throttled attempt does not check the password: the right one is refused too, no session.
      assertThrottled(yield* login(` ${user.email.toUpperCase()} `, PASSWORD), "login_throttled_email")
      assert.strictEqual(yield* sessionsOf(user.id), 0)

      // Another email from the same address is not affected.
      const other = yield* seedUser()
      assert.strictEqual((yield* login(other.email, PASSWORD)).status, 201)

      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
      const after = yield* login(user.email, PASSWORD)
      assert.strictEqual(after.status, 201, after.text)
      assert.strictEqual(yield* sessionsOf(user.id), 1)
    }))

  it.effect("a successful login does not consume the failure bucket", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL - 1; attempt++) {
        assert.strictEqual((yield* login(user.email, "wrong password")).status, 401)
      }
      for (let attempt = 0; attempt < 3; attempt++) {
        assert.strictEqual((yield* login(user.email, PASSWORD)).status, 201, `success ${attempt + 1}`)
      }
      // The tenth failure is still a plain 401; only the attempt after it is throttled.
      assert.strictEqual((yield* login(user.email, "wrong password")).status, 401)
      assertThrottled(yield* login(user.email, PASSWORD), "login_throttled_email")
      assert.strictEqual(yield* sessionsOf(user.id), 3)
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
    }))

  it.effect("unknown emails are counted like known ones (no hint that the email exists)", () =>
    Effect.gen(function*() {
      const unknown = `${crypto.randomUUID()}@nobody.example`
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_EMAIL; attempt++) {
        assert.strictEqual((yield* login(unknown, PASSWORD)).status, 401)
      }
      assertThrottled(yield* login(unknown, PASSWORD), "login_throttled_email")
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
    }))
})

layer(serveAppWithRequestClock(testSettings()), { timeout: "180 seconds", excludeTestServices: true })("login throttling per client address", (it) => {
  it.effect("after 50 failures from one address, every email is refused from it (429), without a password check", () =>
    Effect.gen(function*() {
      const user = yield* seedUser()
      // Spread over several emails, none reaching its own limit.
      const perEmail = LOGIN_FAILURES_PER_EMAIL / 2
      for (let attempt = 0; attempt < LOGIN_FAILURES_PER_ADDRESS; attempt++) {
        const email = `spray-${Math.floor(attempt / perEmail)}@nobody.example`
        assert.strictEqual((yield* login(email, "guess")).status, 401, `attempt ${attempt + 1}`)
      }
      assertThrottled(yield* login(user.email, PASSWORD), "login_throttled_address")
      assert.strictEqual(yield* sessionsOf(user.id), 0)
      yield* adjustRequestTime(`${WINDOW_SECONDS + 1} seconds`)
      assert.strictEqual((yield* login(user.email, PASSWORD)).status, 201)
    }))
})
