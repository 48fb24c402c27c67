/**
 * Database client metrics (decision 0101) with tracing off, as a service without an OTLP
 * endpoint runs: `db.client.operation.duration` by operation (and `error.type` on failure) and
 * `db.client.connection.pending_requests`, scraped from `GET /metrics` after real requests.
 * PostgreSQL when DATABASE_URL is set, the embedded database otherwise.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Fiber, Layer, References, Tracer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { SqlClient } from "effect/sql/SqlClient"
import { createServer } from "node:http"
import { AppRoutes } from "../../src/main/app.ts"
import { launch } from "../../src/main/launch.ts"
import { operationOf } from "../../src/platform/db-metrics.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { TelemetryLayer } from "../../src/platform/telemetry.ts"
import { currentTraceContext } from "../../src/platform/tracing.ts"
import { call, OPERATOR_TOKEN, TestServer, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"

const settings = testSettings()

/** The service as `serviceMain` runs it without an OTLP endpoint: TelemetryLayer, no exporter. */
const Untraced = launch({
  settings,
  app: AppRoutes,
  server: (app) =>
    HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
    ),
  observability: Layer.merge(TelemetryLayer, Layer.succeed(References.MinimumLogLevel)("Warn"))
})

/** Runs `effect` as the service's own fibers run: under TelemetryLayer without an endpoint (the test's fiber has its own tracer otherwise). */
const asService = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, TelemetryLayer.pipe(Layer.provide(AppConfig.layerWith(settings))))

const App = Layer.effect(TestServer)(
  Effect.map(HttpServer.HttpServer, (server) => ({ url: HttpServer.formatAddress(server.address) }))
).pipe(Layer.provideMerge(Untraced))

const scrape = Effect.map(
  call("/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }),
  (response) => {
    assert.strictEqual(response.status, 200, response.text.slice(0, 500))
    return response.text.split("\n")
  }
)

/** The value of the one series of `name` whose labels include every one of `labels`, if present. */
const series = (lines: ReadonlyArray<string>, name: string, labels: ReadonlyArray<string>, absent: ReadonlyArray<string> = []) => {
  const found = lines.filter((line) =>
    line.startsWith(`${name}{`) && labels.every((label) => line.includes(label)) && absent.every((label) => !line.includes(label))
  )
  return found.length === 0 ? undefined : found.reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0)
}

const SELECT = ['db_system_name="postgresql"', 'db_operation_name="SELECT"']

layer(App, { timeout: "60 seconds", excludeTestServices: true })("database metrics with tracing off", (it) => {
  it.effect("statement durations by operation grow with requests; pending requests reported; nothing is traced", () =>
    Effect.gen(function*() {
      const before = series(yield* scrape, "db_client_operation_duration_count", SELECT, ["error_type"]) ?? 0
      for (let i = 0; i < 5; i++) {
        // Readiness runs `SELECT 1` on the database.
        const ready = yield* call("/readyz")
        assert.strictEqual(ready.status, 200, ready.text)
      }
      const after = yield* scrape
      const selects = series(after, "db_client_operation_duration_count", SELECT, ["error_type"])
      assert.isDefined(selects, after.filter((line) => line.startsWith("db_")).join("\n"))
      assert.isAtLeast(selects! - before, 5)
      // Buckets and sum come with the count; the bucket bounds are in seconds.
      assert.isDefined(series(after, "db_client_operation_duration_bucket", [...SELECT, 'le="0.0005"']))
      assert.isAbove(series(after, "db_client_operation_duration_sum", SELECT, ["error_type"]) ?? 0, 0)
      assert.include(after, "# TYPE db_client_operation_duration histogram")
      // The gauge is there; nothing waits at rest. (A background worker's statement may be queued
      // at the moment of one scrape on a loaded machine: at rest means it drains to 0.)
      assert.isDefined(series(after, "db_client_connection_pending_requests", ['db_system_name="postgresql"']))
      yield* eventually(scrape, (lines) => series(lines, "db_client_connection_pending_requests", ['db_system_name="postgresql"']) === 0, {
        what: "no statement waiting for a connection",
        within: "10 seconds"
      })

      // Tracing stays off: no trace context is stored or sent, as before the metrics tracer.
      const context = yield* asService(currentTraceContext.pipe(Effect.withSpan("probe", { kind: "server" })))
      assert.strictEqual(context._tag, "None")
      const span = yield* asService(Effect.currentSpan.pipe(Effect.withSpan("probe")))
      assert.strictEqual(span.traceId, "noop")
      assert.isTrue(Context.get(span.annotations, Tracer.DisablePropagation))
    }))

  it.effect("a failed statement is counted under its error.type; a transaction's statements under theirs", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const failed = yield* asService(sql`SELECT no_such_column_h2 FROM (SELECT 1) AS t`.pipe(Effect.flip))
      assert.strictEqual(failed._tag, "SqlError")
      yield* asService(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1`
        yield* sql`WITH x AS (SELECT 1 AS n) UPDATE profiles SET time_zone = time_zone WHERE id IN (SELECT NULL::uuid FROM x)`
      })))
      const lines = yield* scrape
      const errors = lines.filter((line) =>
        line.startsWith("db_client_operation_duration_count{") && line.includes('db_operation_name="SELECT"') && line.includes('error_type="SqlSyntaxError"')
      )
      assert.strictEqual(errors.length, 1, lines.filter((line) => line.startsWith("db_client_operation_duration_count")).join("\n"))
      assert.isAtLeast(Number(errors[0]!.split(" ").at(-1)), 1)
      assert.isAtLeast(series(lines, "db_client_operation_duration_count", ['db_operation_name="UPDATE"']) ?? 0, 1)
    }))

  // The embedded database is one session without a pool: its statements queue on the session, never for a connection.
  it.effect.skipIf(process.env["DATABASE_URL"] === undefined)("statements and transactions waiting for a pooled connection are pending until they get one", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const pendingNow = Effect.map(scrape, (lines) => series(lines, "db_client_connection_pending_requests", ['db_system_name="postgresql"']) ?? 0)
      // More concurrent sleepers than the pool has connections (10): single statements, then transactions.
      const rounds = [() => sql`SELECT pg_sleep(0.3)`, () => sql.withTransaction(sql`SELECT pg_sleep(0.3)`)]
      for (const sleeper of rounds) {
        const fiber = yield* Effect.forkChild(asService(Effect.forEach(Array.from({ length: 12 }), sleeper, { concurrency: "unbounded", discard: true })))
        let peak = 0
        for (let i = 0; i < 40 && peak < 2; i++) {
          yield* Effect.sleep("10 millis")
          peak = yield* pendingNow
        }
        yield* Fiber.join(fiber)
        assert.isAtLeast(peak, 2)
        // Back to 0 once they have their connections (a background worker's statement may be
        // between queueing and its connection at one scrape on a loaded machine).
        yield* eventually(pendingNow, (pending) => pending === 0, { what: "no statement left waiting", within: "10 seconds" })
      }
    }))
})

describe("operationOf", () => {
  it("names the statement's operation, the main one after WITH, `other` otherwise", () => {
    assert.strictEqual(operationOf("SELECT 1"), "SELECT")
    assert.strictEqual(operationOf("\n  insert INTO t VALUES (1)"), "INSERT")
    assert.strictEqual(operationOf("/* why */ -- note\nDELETE FROM t"), "DELETE")
    assert.strictEqual(operationOf("(SELECT 1) UNION (SELECT 2)"), "SELECT")
    assert.strictEqual(operationOf("WITH a AS (SELECT 1), b AS (DELETE FROM t RETURNING 'x)') INSERT INTO u SELECT * FROM a"), "INSERT")
    assert.strictEqual(operationOf("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r"), "SELECT")
    assert.strictEqual(operationOf("COMMIT"), "COMMIT")
    assert.strictEqual(operationOf("frobnicate everything"), "other")
    assert.strictEqual(operationOf(""), "other")
  })
})
