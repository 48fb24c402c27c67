import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { postgresOptions } from "../../src/platform/database.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { seedEventsProfile } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { startTcpProxy } from "../support/tcp-proxy.ts"

const databaseUrl = process.env["DATABASE_URL"]
const operator = { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }

/** A TCP proxy in front of DATABASE_URL (closed with the scope), and app settings that reach the database through it. */
const behindProxy = Effect.gen(function*() {
  const target = postgresOptions(Redacted.make(databaseUrl ?? ""))
  const proxy = yield* Effect.acquireRelease(
    Effect.promise(() => startTcpProxy({ host: target.host, port: target.port })),
    (proxy) => Effect.promise(() => proxy.close())
  )
  const viaProxy = new URL(databaseUrl ?? "")
  viaProxy.hostname = "127.0.0.1"
  viaProxy.port = String(proxy.port)
  return { proxy, settings: testSettings({ databaseUrl: Option.some(Redacted.make(viaProxy.toString())) }) }
})

describe.skipIf(databaseUrl === undefined)("database outage (real PostgreSQL behind a cuttable proxy)", () => {
  it.live("requests answer 503 database_unavailable with Retry-After, then recover without a restart", () =>
    Effect.gen(function*() {
      const { proxy, settings } = yield* behindProxy

      yield* Effect.gen(function*() {
        const before = yield* call("/readyz")
        assert.strictEqual(before.status, 200)

        proxy.cut()
        for (const path of ["/readyz", "/api/v1/admin/status"]) {
          const down = yield* call(path, operator)
          assert.strictEqual(down.status, 503, path)
          assert.strictEqual(down.json.error.code, "database_unavailable")
          assert.strictEqual(down.headers.get("retry-after"), "2")
          assert.strictEqual(down.json.error.retry_after_seconds, 2)
          assert.strictEqual(down.json.error.request_id, down.headers.get("x-request-id"))
        }
        const alive = yield* call("/healthz")
        assert.strictEqual(alive.status, 200, "liveness does not depend on the database")

        proxy.restore()
        const recovered = yield* eventually(call("/api/v1/admin/status", operator), (answer) => answer.status === 200, {
          what: "the database to be reachable again",
          within: "5 seconds",
          every: "250 millis"
        })
        assert.strictEqual(recovered.status, 200)
        assert.strictEqual(recovered.json.data.database.reachable, true)
      }).pipe(Effect.provide(serveApp(settings)))
    }), 60_000)
})

/** One answer seen while the database was away: status, error code and Retry-After. */
interface Seen {
  readonly path: string
  readonly status: number
  readonly code: string | undefined
  readonly retryAfter: string | null
}

describe.skipIf(databaseUrl === undefined)("database restarting (SQLSTATE 57P03 from a proxy playing a server replaying its log)", () => {
  it.live("every request answers 503 database_unavailable with Retry-After while it starts up, never 500; 200 once it is up", () =>
    Effect.gen(function*() {
      const { proxy, settings } = yield* behindProxy

      yield* Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const requests: ReadonlyArray<readonly [string, RequestInit]> = [
          ["/readyz", {}],
          ["/api/v1/admin/oauth-apps", operator],
          ["/api/v1/admin/oauth-apps", {
            method: "POST",
            headers: { ...operator.headers, "content-type": "application/json" },
            body: JSON.stringify({ name: "restart", redirect_uris: ["https://partner.example/callback"] })
          }],
          ["/api/v1/events", {
            method: "POST",
            headers: { authorization: `Bearer ${profile.key}`, "content-type": "application/json" },
            body: JSON.stringify({ event_name: "signup" })
          }]
        ]
        for (const [path, init] of requests) {
          const up = yield* call(path, init)
          assert.isBelow(up.status, 300, `${path} before the restart: ${up.text}`)
        }

        proxy.startingUp()
        const seen: Array<Seen> = []
        const startedAt = Date.now()
        // Four clients, each cycling through the requests, until the window has lasted 1.5 s and
        // the proxy has turned away at least 20 connections with 57P03.
        const inWindow = () => Date.now() - startedAt < 1_500 || proxy.startingUpAnswers() < 20
        const client = (offset: number) =>
          Effect.gen(function*() {
            let n = offset
            while (inWindow()) {
              const [path, init] = requests[n++ % requests.length]!
              const answer = yield* call(path, init)
              seen.push({ path, status: answer.status, code: answer.json?.error?.code, retryAfter: answer.headers.get("retry-after") })
            }
          })
        yield* Effect.forEach([0, 1, 2, 3], client, { concurrency: "unbounded", discard: true })
        const count = (status: number) => seen.filter((answer) => answer.status === status).length
        console.info(`database starting up: ${seen.length} requests, ${count(503)} answered 503, ${count(500)} answered 500, ` +
          `${proxy.startingUpAnswers()} connections turned away with 57P03`)
        assert.isAtLeast(proxy.startingUpAnswers(), 20)
        assert.deepStrictEqual(
          seen.filter((answer) => !(answer.status === 503 && answer.code === "database_unavailable" && answer.retryAfter === "2")),
          []
        )
        assert.isAtLeast(seen.length, 20)

        proxy.restore()
        for (const [path, init] of requests) {
          const recovered = yield* eventually(call(path, init), (answer) => answer.status < 300, {
            what: `${path} to answer again once the database is up`,
            within: "10 seconds",
            every: "250 millis"
          })
          assert.isBelow(recovered.status, 300, path)
        }
      }).pipe(Effect.provide(serveApp(settings)))
    }), 60_000)
})
