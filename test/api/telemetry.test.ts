/**
 * Tracing and structured logs, end to end: the real app served over HTTP with an in-memory
 * span exporter; one request, then the span tree. Embedded PGlite in a temporary directory,
 * or the PostgreSQL named by DATABASE_URL.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { NodeHttpServer } from "@effect/platform-node"
import { SpanKind } from "@opentelemetry/api"
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { ConfigProvider, Context, Effect, Layer, Logger, Option, References, Tracer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { TestConsole } from "effect/testing"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppRoutes } from "../../src/main/app.ts"
import { launch } from "../../src/main/launch.ts"
import { AppConfig, type AppSettings, loadSettings } from "../../src/platform/config.ts"
import { jsonLogger, LoggingLayer } from "../../src/platform/logging.ts"
import { annotateRequestSpan, parseKeyValueList, TelemetryLayer, TelemetryTest } from "../../src/platform/telemetry.ts"
import { cleanTracestate, CurrentTraceState, currentTraceContext, parentFromW3c, spansRecorded, withLinkedJobSpan } from "../../src/platform/tracing.ts"
import { ReportWorker } from "../../src/analytics/reports/worker.ts"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { SqlClient } from "effect/sql/SqlClient"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const settingsFrom = (env: Record<string, string | undefined>): Effect.Effect<AppSettings> =>
  loadSettings.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)),
    Effect.orDie
  )

const temporaryDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "svc-telemetry-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const exporter = new InMemorySpanExporter()
const ADMIN_TOKEN = "telemetry-test-admin-token"
const RPC_TOKEN = "telemetry-test-rpc-token"

/** Served on an ephemeral port; the temporary directory outlives the database using it. */
const TracedApp = Layer.unwrap(
  Effect.gen(function*() {
    const dataDir = yield* temporaryDir
    const settings = yield* settingsFrom({
      SVC_DATA_DIR: dataDir,
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_RPC_TOKEN: RPC_TOKEN,
      DATABASE_URL: process.env["DATABASE_URL"],
      // Required on DATABASE_URL (decision 0105); on the embedded database it stays generated.
      SVC_SECRETS_KEY: process.env["DATABASE_URL"] ? randomBytes(32).toString("base64") : undefined,
      LOG_LEVEL: "Warn",
      OTEL_SERVICE_NAME: "svc-telemetry-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test"
    })
    return launch({
      settings,
      app: AppRoutes,
      server: (app) =>
        HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
        ),
      observability: Layer.merge(TelemetryTest(exporter), LoggingLayer)
    })
  })
)

/** Spans end after the response is written, so the client can get there first. */
const finishedSpansWhen = (ready: (spans: ReadonlyArray<ReadableSpan>) => boolean) =>
  eventually(Effect.sync(() => exporter.getFinishedSpans()), ready, {
    what: () => `the spans (finished: ${exporter.getFinishedSpans().map((span) => span.name).join(", ")})`,
    within: "2 seconds",
    every: "10 millis"
  })

const parentOf = (span: ReadableSpan, spans: ReadonlyArray<ReadableSpan>) =>
  spans.find((candidate) => candidate.spanContext().spanId === span.parentSpanContext?.spanId)

const descendsFrom = (span: ReadableSpan, ancestor: ReadableSpan, spans: ReadonlyArray<ReadableSpan>) => {
  for (let current = parentOf(span, spans); current !== undefined; current = parentOf(current, spans)) {
    if (current === ancestor) return true
  }
  return false
}

const isServerSpan = (span: ReadableSpan) => span.kind === SpanKind.SERVER

// Without the test services the clock is live, so connection timeouts behave as in production.
layer(TracedApp, { timeout: "60 seconds", excludeTestServices: true })("request tracing", (it) => {
  it.effect("GET /readyz: one server span with HTTP and request attributes, SQL spans beneath it", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      exporter.reset()
      const response = yield* Effect.promise(() => fetch(`${HttpServer.formatAddress(server.address)}/readyz`))
      yield* Effect.promise(() => response.arrayBuffer())
      assert.strictEqual(response.status, 200)
      const requestId = response.headers.get("x-request-id")
      assert.isNotNull(requestId)

      const spans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan))
      const servers = spans.filter(isServerSpan)
      assert.strictEqual(servers.length, 1, `server spans: ${servers.map((span) => span.name).join(", ")}`)
      const serverSpan = servers[0]!
      const attributes = serverSpan.attributes
      assert.strictEqual(attributes["http.request.method"], "GET")
      assert.strictEqual(attributes["http.response.status_code"], 200)
      assert.strictEqual(attributes["url.path"], "/readyz")
      assert.strictEqual(attributes["http.route"], "/readyz")
      assert.strictEqual(attributes["svc.request_id"], requestId)
      assert.isUndefined(serverSpan.parentSpanContext)

      const resource = serverSpan.resource.attributes
      assert.strictEqual(resource["service.name"], "svc-telemetry-test")
      assert.strictEqual(typeof resource["service.version"], "string")
      assert.strictEqual(resource["deployment.environment.name"], "test")

      // Background workers' statements land in the same exporter, in traces of their own.
      const sqlSpans = spans.filter((span) =>
        span.attributes["db.system.name"] === "postgresql" && span.spanContext().traceId === serverSpan.spanContext().traceId
      )
      assert.isAbove(sqlSpans.length, 0, `spans: ${spans.map((span) => span.name).join(", ")}`)
      for (const sqlSpan of sqlSpans) {
        assert.strictEqual(sqlSpan.kind, SpanKind.CLIENT)
        assert.strictEqual(typeof sqlSpan.attributes["db.query.text"], "string")
        assert.strictEqual(sqlSpan.spanContext().traceId, serverSpan.spanContext().traceId)
        assert.isTrue(descendsFrom(sqlSpan, serverSpan, spans), `${sqlSpan.name} is not under the server span`)
      }
      assert.isTrue(sqlSpans.some((span) => span.attributes["db.query.text"] === "SELECT 1"))
    }))

  it.effect("an entity call (RPC ProfileBumpRevocationEpoch) is a child span of its request, with its SQL beneath", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const client = yield* makeServiceClient({ url: `${HttpServer.formatAddress(server.address)}/rpc`, credential: RPC_TOKEN })
      exporter.reset()
      const state = yield* client.ProfileBumpRevocationEpoch({ profile_id: crypto.randomUUID() })
      assert.strictEqual(state.revocation_epoch, 1)

      const spans = yield* finishedSpansWhen((spans) =>
        spans.some(isServerSpan) && spans.some((span) => span.name.startsWith("Profile."))
      )
      // The HTTP request's span; the RPC server and the entity behaviour add server spans of their own beneath it.
      const serverSpan = spans.find((span) => isServerSpan(span) && span.attributes["http.request.method"] === "POST")
      assert.isDefined(serverSpan)
      if (serverSpan === undefined) return
      assert.strictEqual(serverSpan.attributes["http.route"], "/rpc")
      const entitySpans = spans.filter((span) => span.name.startsWith("Profile."))
      assert.isTrue(entitySpans.some((span) => span.name === "Profile.client.BumpRevocationEpoch"))
      assert.isAbove(entitySpans.length, 0, `spans: ${spans.map((span) => span.name).join(", ")}`)
      for (const entitySpan of entitySpans) {
        assert.isTrue(descendsFrom(entitySpan, serverSpan, spans), `${entitySpan.name} is not under the request`)
      }
      const upsert = spans.find((span) => String(span.attributes["db.query.text"] ?? "").includes("profile_state"))
      assert.isDefined(upsert, `spans: ${spans.map((span) => span.name).join(", ")}`)
      if (upsert !== undefined) assert.isTrue(descendsFrom(upsert, serverSpan, spans))
    }).pipe(Effect.scoped))

  it.effect("an authenticated request names the principal kind on its server span", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      exporter.reset()
      const response = yield* Effect.promise(() =>
        fetch(`${HttpServer.formatAddress(server.address)}/api/v1/admin/status`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
        })
      )
      yield* Effect.promise(() => response.arrayBuffer())
      assert.strictEqual(response.status, 200)
      const spans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan))
      const serverSpan = spans.find(isServerSpan)
      assert.strictEqual(serverSpan?.attributes["svc.principal.kind"], "operator")
      assert.strictEqual(serverSpan?.attributes["http.route"], "/api/v1/admin/status")
      assert.strictEqual(serverSpan?.attributes["svc.request_id"], response.headers.get("x-request-id"))
    }))

  it.effect("an incoming traceparent makes the server span its child", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      exporter.reset()
      const traceId = "0af7651916cd43dd8448eb211c80319c"
      const parentId = "b7ad6b7169203331"
      const response = yield* Effect.promise(() =>
        fetch(`${HttpServer.formatAddress(server.address)}/healthz`, {
          headers: { traceparent: `00-${traceId}-${parentId}-01` }
        })
      )
      yield* Effect.promise(() => response.arrayBuffer())
      const spans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan))
      const serverSpan = spans.find(isServerSpan)
      assert.isDefined(serverSpan)
      assert.strictEqual(serverSpan?.spanContext().traceId, traceId)
      assert.strictEqual(serverSpan?.parentSpanContext?.spanId, parentId)
    }))

  it.effect("traceparent with tracestate: the server span is `{method} {route}`, continues the trace and keeps the tracestate", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      exporter.reset()
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const parentId = "00f067aa0ba902b7"
      const response = yield* Effect.promise(() =>
        fetch(`${HttpServer.formatAddress(server.address)}/healthz?probe=1`, {
          headers: { traceparent: `00-${traceId}-${parentId}-01`, tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7" }
        })
      )
      yield* Effect.promise(() => response.arrayBuffer())
      const spans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan))
      const serverSpan = spans.find(isServerSpan)!
      assert.strictEqual(serverSpan.name, "GET /healthz")
      assert.strictEqual(serverSpan.spanContext().traceId, traceId)
      assert.strictEqual(serverSpan.parentSpanContext?.spanId, parentId)
      assert.strictEqual(serverSpan.spanContext().traceState?.serialize(), "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
      assert.strictEqual(serverSpan.attributes["url.path"], "/healthz")
      assert.strictEqual(serverSpan.attributes["http.route"], "/healthz")
      assert.strictEqual(serverSpan.attributes["server.address"], "127.0.0.1")
    }))

  it.effect("an unknown route keeps the bare `{method}` name; a malformed traceparent starts a new trace", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      exporter.reset()
      const response = yield* Effect.promise(() =>
        fetch(`${HttpServer.formatAddress(server.address)}/no/such/route`, {
          headers: { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01", tracestate: "a=b" }
        })
      )
      yield* Effect.promise(() => response.arrayBuffer())
      assert.strictEqual(response.status, 404)
      const spans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan))
      const serverSpan = spans.find(isServerSpan)!
      assert.strictEqual(serverSpan.name, "GET")
      assert.isUndefined(serverSpan.parentSpanContext)
      assert.isUndefined(serverSpan.spanContext().traceState)
      assert.strictEqual(serverSpan.attributes["http.response.status_code"], 404)
    }))

  it.effect("a scheduled report run is its own trace, linked to the request that scheduled it, with its tracestate", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const sql = yield* SqlClient
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["reports:write", "analytics:read"], rateLimitPerMinute: 10_000 })
      exporter.reset()
      const traceId = "5bf92f3577b34da6a3ce929d0e0e4736"
      const response = yield* Effect.promise(() =>
        fetch(`${HttpServer.formatAddress(server.address)}/api/v1/reports`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
            traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
            tracestate: "vendor=report"
          },
          body: JSON.stringify({ name: "Traced", reads: ["overview"], range: "yesterday", schedule: { frequency: "daily", hour: 6 }, recipients: ["t@example.com"] })
        })
      )
      const created = (yield* Effect.promise(() => response.json())) as { data: { id: string; schedule: Record<string, unknown> } }
      assert.strictEqual(response.status, 201)
      // The stored trace context is not part of the report.
      assert.deepStrictEqual(created.data.schedule, { frequency: "daily", hour: 6, weekday: null, day_of_month: null })
      yield* sql`UPDATE reports SET next_run_at = now() - interval '1 minute' WHERE id = ${created.data.id}`
      // This fiber's tracer is not the app's: the worker step runs under a tracer of the same kind with its own
      // exporter (shutting one down empties it). The app's worker polls too: whichever works the run, once.
      const jobs = new InMemorySpanExporter()
      const worker = yield* ReportWorker
      const jobSpans = yield* Effect.gen(function*() {
        yield* worker.runOnce
        return jobs.getFinishedSpans().slice()
      }).pipe(Effect.provide(TelemetryTest(jobs).pipe(Layer.provide(AppConfig.layerWith(yield* baseSettings)))))
      const [run] = yield* sql<{ id: string }>`SELECT id::text AS id FROM report_runs WHERE report_id = ${created.data.id}`
      assert.isDefined(run)
      const isJob = (span: ReadableSpan) => span.name === "process report_runs scheduled" && span.attributes["messaging.message.id"] === run!.id
      const requestSpans = yield* finishedSpansWhen((spans) => spans.some(isServerSpan) && (spans.some(isJob) || jobSpans.some(isJob)))
      const spans = [...requestSpans, ...jobSpans]
      const job = spans.find(isJob)!
      assert.strictEqual(job.kind, SpanKind.CONSUMER)
      assert.notStrictEqual(job.spanContext().traceId, traceId)
      assert.isUndefined(job.parentSpanContext)
      assert.strictEqual(job.attributes["svc.report_id"], created.data.id)
      assert.strictEqual(job.links.length, 1)
      const link = job.links[0]!
      assert.strictEqual(link.context.traceId, traceId)
      assert.strictEqual(link.attributes?.["w3c.tracestate"], "vendor=report")
      // The link names a span of the creating request's trace, beneath its server span.
      const serverSpan = spans.find((span) => isServerSpan(span) && span.spanContext().traceId === traceId)
      const linked = spans.find((span) => span.spanContext().spanId === link.context.spanId)
      assert.isDefined(serverSpan)
      assert.isDefined(linked)
      assert.isTrue(linked === serverSpan || descendsFrom(linked!, serverSpan!, spans))
      // The run's own work (its reads) is beneath the job span.
      assert.isTrue(spans.some((span) => span.name === "Reports.work" && span.parentSpanContext?.spanId === job.spanContext().spanId))
    }))

  it.effect("trace context in columns: the report's, not in its schedule JSON; a manual run taken over after a crash keeps its link", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const sql = yield* SqlClient
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["reports:write", "analytics:read"], rateLimitPerMinute: 10_000 })
      const base = HttpServer.formatAddress(server.address)
      const traceId = "6bf92f3577b34da6a3ce929d0e0e4736"
      const headers = {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        tracestate: "vendor=manual"
      }
      const response = yield* Effect.promise(() =>
        fetch(`${base}/api/v1/reports`, {
          method: "POST",
          headers,
          body: JSON.stringify({ name: "Manual", reads: ["overview"], range: "yesterday", schedule: { frequency: "daily", hour: 6 }, recipients: ["t@example.com"] })
        })
      )
      assert.strictEqual(response.status, 201)
      const created = (yield* Effect.promise(() => response.json())) as { data: { id: string } }
      const [stored] = yield* sql<{ traceparent: string | null; tracestate: string | null; queued: boolean }>`
        SELECT traceparent, tracestate, (schedule -> 'queued_by') IS NOT NULL AS queued FROM reports WHERE id = ${created.data.id}`
      assert.match(stored?.traceparent ?? "", new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      assert.strictEqual(stored?.tracestate, "vendor=manual")
      assert.isFalse(stored?.queued)
      const generated = yield* Effect.promise(() => fetch(`${base}/api/v1/reports/${created.data.id}/generate`, { method: "POST", headers }))
      assert.strictEqual(generated.status, 201)
      const run = ((yield* Effect.promise(() => generated.json())) as { data: { id: string } }).data
      // As if its process died mid-run: running, its lease expired.
      yield* sql`UPDATE report_runs SET status = 'running', lease_until = now() - interval '1 minute' WHERE id = ${run.id}`
      const jobs = new InMemorySpanExporter()
      const worker = yield* ReportWorker
      const isJob = (span: ReadableSpan) => span.name === "process report_runs manual" && span.attributes["messaging.message.id"] === run.id
      const jobSpans = yield* Effect.gen(function*() {
        yield* worker.runOnce
        return jobs.getFinishedSpans().slice()
      }).pipe(Effect.provide(TelemetryTest(jobs).pipe(Layer.provide(AppConfig.layerWith(yield* baseSettings)))))
      // The app's worker polls too: whichever took the run over.
      const spans = [...(yield* finishedSpansWhen((spans) => spans.some(isJob) || jobSpans.some(isJob))), ...jobSpans]
      const job = spans.find(isJob)!
      assert.notStrictEqual(job.spanContext().traceId, traceId)
      assert.strictEqual(job.links.length, 1)
      assert.strictEqual(job.links[0]!.context.traceId, traceId)
      assert.strictEqual(job.links[0]!.attributes?.["w3c.tracestate"], "vendor=manual")
      const [after] = yield* sql<{ status: string; attempts: number }>`SELECT status, attempts FROM report_runs WHERE id = ${run.id}`
      assert.deepStrictEqual(after, { status: "generated", attempts: 2 })
    }))

  it.effect("GET /metrics: Prometheus text with the request duration series, only for the operator", () =>
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const base = HttpServer.formatAddress(server.address)
      for (let i = 0; i < 3; i++) {
        const response = yield* Effect.promise(() => fetch(`${base}/healthz`))
        yield* Effect.promise(() => response.arrayBuffer())
      }
      // Readiness runs `SELECT 1`: a statement for the database metrics.
      const ready = yield* Effect.promise(() => fetch(`${base}/readyz`))
      yield* Effect.promise(() => ready.arrayBuffer())
      assert.strictEqual(ready.status, 200)
      const refused = yield* Effect.promise(() => fetch(`${base}/metrics`))
      const refusedBody = (yield* Effect.promise(() => refused.json())) as { error: { code: string; request_id: string } }
      assert.strictEqual(refused.status, 401)
      assert.strictEqual(refusedBody.error.code, "unauthorized")
      assert.strictEqual(refusedBody.error.request_id, refused.headers.get("x-request-id"))
      const wrong = yield* Effect.promise(() => fetch(`${base}/metrics`, { headers: { authorization: "Bearer not-the-token" } }))
      yield* Effect.promise(() => wrong.arrayBuffer())
      assert.strictEqual(wrong.status, 401)

      const response = yield* Effect.promise(() => fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
      const text = yield* Effect.promise(() => response.text())
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
      assert.include(text, "# TYPE http_server_request_duration histogram")
      const count = text.split("\n").find((line) =>
        line.startsWith("http_server_request_duration_count{") && line.includes(`http_route="/healthz"`) &&
        line.includes(`http_response_status_code="200"`) && line.includes(`http_request_method="GET"`)
      )
      assert.isDefined(count, text.slice(0, 2000))
      assert.isAtLeast(Number(count!.split(" ").at(-1)), 3)
      // The cluster's gauges and the queue backlogs (read at start, then every 15 s).
      assert.match(text, /^effect_cluster_shards(\{[^}]*\})? \d+$/m)
      for (const queue of ["outbox", "replays", "sync_jobs"]) {
        assert.match(text, new RegExp(`^svc_queue_depth\\{svc_queue="${queue}"\\} \\d+$`, "m"))
        assert.match(text, new RegExp(`^svc_queue_lag\\{svc_queue="${queue}"\\} [0-9.e+-]+$`, "m"))
      }
      assert.match(text, /^svc_rollup_lag [0-9.e+-]+$/m)
      // Pool gauges: this service's sessions by state on PostgreSQL; none on the embedded database.
      for (const state of ["idle", "used"]) {
        const series = new RegExp(`^db_client_connection_count\\{[^}]*db_client_connection_state="${state}"[^}]*\\} \\d+$`, "m")
        if (process.env.DATABASE_URL) assert.match(text, series)
        else assert.notMatch(text, series)
      }
      // Statement durations (decision 0101): the readiness probe's `SELECT 1` at least, and the pending gauge.
      const selects = text.split("\n").find((line) =>
        line.startsWith("db_client_operation_duration_count{") && line.includes(`db_operation_name="SELECT"`) &&
        line.includes(`db_system_name="postgresql"`) && !line.includes("error_type")
      )
      assert.isDefined(selects, text.split("\n").filter((line) => line.startsWith("db_")).join("\n"))
      assert.isAtLeast(Number(selects!.split(" ").at(-1)), 1)
      assert.match(text, /^db_client_connection_pending_requests\{db_system_name="postgresql"\} \d+$/m)
      // The refusals above are counted under their own status.
      assert.isTrue(text.split("\n").some((line) => line.startsWith("http_server_request_duration_count{") && line.includes(`http_route="/metrics"`) && line.includes(`http_response_status_code="401"`)))
    }))
})

const baseSettings = settingsFrom({ SVC_DATA_DIR: "/nonexistent", LOG_LEVEL: "Info" })

describe("TelemetryLayer", () => {
  it.effect("spansRecorded: false with the placeholder tracer (no endpoint), true with an exporter; the probe exports nothing", () =>
    Effect.gen(function*() {
      const settings = yield* baseSettings
      const placeholder = yield* spansRecorded.pipe(Effect.provide(TelemetryLayer.pipe(Layer.provide(AppConfig.layerWith(settings)))))
      assert.isFalse(placeholder)
      const exported = new InMemorySpanExporter()
      const recording = yield* spansRecorded.pipe(Effect.provide(TelemetryTest(exported).pipe(Layer.provide(AppConfig.layerWith(settings)))))
      assert.isTrue(recording)
      assert.deepStrictEqual(exported.getFinishedSpans(), [])
    }))

  it.effect("without an endpoint installs only the placeholder tracer of the database metrics: nothing is recorded or propagated", () =>
    Effect.gen(function*() {
      const settings = yield* baseSettings
      const [tracer, span, context] = yield* Effect.gen(function*() {
        return [
          yield* Tracer.Tracer,
          yield* Effect.withSpan(Effect.currentSpan, "probe"),
          yield* currentTraceContext.pipe(Effect.withSpan("GET /probe", { kind: "server" }))
        ] as const
      }).pipe(Effect.provide(TelemetryLayer.pipe(Layer.provide(AppConfig.layerWith(settings)))))
      assert.notStrictEqual(tracer, Tracer.nativeTracer)
      assert.isTrue(Context.get(span.annotations, Tracer.DisablePropagation))
      assert.strictEqual(span.traceId, "noop")
      assert.isFalse(span.sampled)
      assert.isTrue(Option.isNone(context))
    }))

  // Live clock: the OTLP metrics exporter it also starts flushes on the way out, with a time limit.
  it.live("with an endpoint installs the OpenTelemetry tracer", () =>
    Effect.gen(function*() {
      const settings = yield* baseSettings
      const withEndpoint: AppSettings = {
        ...settings,
        otel: { ...settings.otel, endpoint: Option.some("http://127.0.0.1:9"), headers: "authorization=Bearer%20x" }
      }
      const [tracer, enabled] = yield* Effect.gen(function*() {
        return [yield* Tracer.Tracer, yield* References.TracerEnabled] as const
      }).pipe(
        Effect.provide(TelemetryLayer.pipe(Layer.provide(AppConfig.layerWith(withEndpoint))))
      )
      assert.notStrictEqual(tracer, Tracer.nativeTracer)
      assert.isTrue(enabled)
    }))

  it.effect("a background job's span links to the trace that queued it, with its tracestate", () =>
    Effect.gen(function*() {
      const settings = yield* baseSettings
      const jobs = new InMemorySpanExporter()
      const result = yield* Effect.gen(function*() {
        // What a request stores with the row it queues, then what the worker does with it.
        const context = yield* Effect.provideService(currentTraceContext, CurrentTraceState, "vendor=abc").pipe(
          Effect.withSpan("GET /request", { kind: "server" })
        )
        const row = Option.getOrThrow(context)
        yield* Effect.void.pipe(withLinkedJobSpan("work_jobs test", { traceparent: row.traceparent, tracestate: row.tracestate }))
        // Read before the layer closes: shutting the exporter down empties it.
        return { row, finished: jobs.getFinishedSpans().slice() }
      }).pipe(Effect.provide(TelemetryTest(jobs).pipe(Layer.provide(AppConfig.layerWith(settings)))))
      const queued = result.row
      assert.strictEqual(queued.tracestate, "vendor=abc")
      const [request, job] = [
        result.finished.find((span) => span.name === "GET /request"),
        result.finished.find((span) => span.name === "process work_jobs test")
      ]
      assert.isDefined(request)
      assert.isDefined(job)
      assert.strictEqual(queued.traceparent, `00-${request!.spanContext().traceId}-${request!.spanContext().spanId}-01`)
      assert.strictEqual(job!.kind, SpanKind.CONSUMER)
      assert.notStrictEqual(job!.spanContext().traceId, request!.spanContext().traceId)
      assert.strictEqual(job!.links.length, 1)
      assert.strictEqual(job!.links[0]!.context.traceId, request!.spanContext().traceId)
      assert.strictEqual(job!.links[0]!.context.spanId, request!.spanContext().spanId)
      assert.strictEqual(job!.links[0]!.attributes?.["w3c.tracestate"], "vendor=abc")
      assert.strictEqual(job!.attributes["messaging.destination.name"], "work_jobs test")
    }))

  it("parses W3C trace context strictly and keeps a sane tracestate", () => {
    assert.isTrue(Option.isSome(parentFromW3c("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")))
    for (const bad of ["", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4bf92f35-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"]) {
      assert.isTrue(Option.isNone(parentFromW3c(bad)), bad)
    }
    assert.strictEqual(cleanTracestate(" a=1,b=2 "), "a=1,b=2")
    assert.strictEqual(cleanTracestate("x".repeat(513)), "")
    assert.strictEqual(cleanTracestate("a=\u0000"), "")
  })

  it.effect("annotateRequestSpan reaches the server span through nested spans", () =>
    Effect.gen(function*() {
      const [outer, inner] = yield* Effect.gen(function*() {
        const outer = yield* Effect.currentSpan
        const inner = yield* Effect.gen(function*() {
          yield* annotateRequestSpan({ "svc.profile_id": "p_1" })
          return yield* Effect.currentSpan
        }).pipe(Effect.withSpan("handler.step"))
        return [outer, inner] as const
      }).pipe(Effect.withSpan("GET", { kind: "server" }))
      assert.strictEqual(outer.attributes.get("svc.profile_id"), "p_1")
      assert.isFalse(inner.attributes.has("svc.profile_id"))
      yield* annotateRequestSpan({ "svc.profile_id": "outside" })
    }))

  it("parses OTLP key=value lists", () => {
    assert.deepStrictEqual(parseKeyValueList(""), {})
    assert.deepStrictEqual(
      parseKeyValueList(" api-key = abc%3D ,x-team=growth,broken,=novalue,bad=%E0%A4%A"),
      { "api-key": "abc=", "x-team": "growth" }
    )
  })
})

describe("LoggingLayer", () => {
  const capture = (lines: Array<string>) =>
    Logger.layer([Logger.make((options) => lines.push(jsonLogger.log(options)))])

  it.effect("JSON lines carry the annotations and the ids of the current span", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const span = yield* Effect.gen(function*() {
        yield* Effect.logInfo("inside")
        return yield* Effect.currentSpan
      }).pipe(
        Effect.withSpan("work"),
        Effect.annotateLogs("request_id", "req_123"),
        Effect.provide(capture(lines))
      )
      yield* Effect.logInfo("outside").pipe(Effect.provide(capture(lines)))
      const [inside, outside] = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      assert.strictEqual(inside?.["message"], "inside")
      assert.strictEqual(inside?.["level"], "INFO")
      assert.strictEqual(inside?.["request_id"], "req_123")
      assert.strictEqual(inside?.["trace_id"], span.traceId)
      assert.strictEqual(inside?.["span_id"], span.spanId)
      assert.isUndefined(outside?.["trace_id"])
    }))

  it.effect("omits placeholder ids when tracing is off", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      yield* Effect.logInfo("untraced").pipe(
        Effect.withSpan("work"),
        Effect.withTracerEnabled(false),
        Effect.provide(capture(lines))
      )
      const line = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>
      assert.strictEqual(line["message"], "untraced")
      assert.isUndefined(line["trace_id"])
      assert.isUndefined(line["span_id"])
    }))

  it.effect("writes one JSON object per line to the console at or above LOG_LEVEL", () =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom({ SVC_DATA_DIR: "/nonexistent", LOG_LEVEL: "Warn" })
      yield* Effect.gen(function*() {
        yield* Effect.logInfo("filtered out")
        yield* Effect.logWarning("kept", { detail: 1 })
      }).pipe(Effect.provide(LoggingLayer.pipe(Layer.provide(AppConfig.layerWith(settings)))))
      const lines = yield* TestConsole.logLines
      assert.strictEqual(lines.length, 1)
      const line = String(lines[0])
      assert.notInclude(line, "\n")
      const parsed = JSON.parse(line) as Record<string, unknown>
      assert.strictEqual(parsed["level"], "WARN")
      // `message` is always a string; the other parts go to `details` (decision 0051).
      assert.strictEqual(parsed["message"], "kept")
      assert.deepStrictEqual(parsed["details"], { detail: 1 })
    }).pipe(Effect.provide(TestConsole.layer)))
})
