import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { postgresOptions } from "../../src/platform/database.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { startTcpProxy } from "../support/tcp-proxy.ts"

const databaseUrl = process.env["DATABASE_URL"]
const operator = { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }

describe.skipIf(databaseUrl === undefined)("database outage (real PostgreSQL behind a cuttable proxy)", () => {
  it.live("requests answer 503 database_unavailable with Retry-After, then recover without a restart", () =>
    Effect.gen(function*() {
      const target = postgresOptions(Redacted.make(databaseUrl ?? ""))
      const proxy = yield* Effect.acquireRelease(
        Effect.promise(() => startTcpProxy({ host: target.host, port: target.port })),
        (proxy) => Effect.promise(() => proxy.close())
      )
      const viaProxy = new URL(databaseUrl ?? "")
      viaProxy.hostname = "127.0.0.1"
      viaProxy.port = String(proxy.port)
      const settings = testSettings({ databaseUrl: Option.some(Redacted.make(viaProxy.toString())) })

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
