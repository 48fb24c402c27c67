/**
 * Test harness: the real HTTP application served on an ephemeral port, on the machine's
 * PostgreSQL when DATABASE_URL is set, otherwise on an embedded PGlite in a temp directory.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Context, type Duration, Effect, Layer, Logger, Option, Redacted, References } from "effect"
import { TestClock } from "effect/testing"
import { HttpRouter, HttpServer } from "effect/http"
import { cpSync, existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { createServer } from "node:http"
import { AppRoutes } from "../../src/main/app.ts"
import { launch } from "../../src/main/launch.ts"
import {
  type AppSettings,
  DEFAULT_HANDOFF_TTL_SECONDS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  DEFAULT_SANDBOX_SECRET,
  DEFAULT_SHUTDOWN_GRACE_MS
} from "../../src/platform/config.ts"
import { CurrentRequestId } from "../../src/platform/request-id.ts"

export const OPERATOR_TOKEN = "test-operator-token-0123456789"
/** The secrets key of every test app: sandbox world handles are keyed by it (test/support/sandbox-world.ts). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString("base64")
/** Signs the link tokens of every test deployment (decision 0037); override with `Option.none()` to turn them off. */
export const LINK_TOKEN_SECRET = "test-link-token-secret-0123456789abcdef"

export const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), `svc-${prefix}-`))

/**
 * A data directory for an embedded database: a copy of the run's migrated template
 * (test/support/global-setup.ts) when there is one, else empty (initdb and every migration at start).
 */
export const migratedDataDir = (prefix = "data") => {
  const template = process.env["SVC_TEST_PGLITE_TEMPLATE"]
  if (template === undefined || !existsSync(template)) return tempDir(prefix)
  // Beside the template, so the run's teardown removes the copies with it (~40 MB each).
  const dir = mkdtempSync(join(dirname(template), `${prefix}-`))
  cpSync(template, dir, { recursive: true })
  return dir
}

export const testSettings = (overrides: Partial<AppSettings> = {}): AppSettings => {
  const databaseUrl = process.env["DATABASE_URL"]
  return {
    port: 0,
    host: "127.0.0.1",
    baseUrl: "http://svc.test",
    databaseUrl: databaseUrl ? Option.some(Redacted.make(databaseUrl)) : Option.none(),
    dataDir: databaseUrl ? tempDir("data") : migratedDataDir(),
    adminToken: Option.some(Redacted.make(OPERATOR_TOKEN)),
    rpcToken: Option.none(),
    secretsKey: Option.some(Redacted.make(TEST_SECRETS_KEY)),
    // Built, not loaded: the start-up rules of loadSettings (decision 0105) do not apply.
    productionShaped: false,
    redisUrl: Option.none(),
    linkTokenSecret: Option.some(Redacted.make(LINK_TOKEN_SECRET)),
    maxBodyBytes: 64 * 1024,
    shutdownGraceMs: DEFAULT_SHUTDOWN_GRACE_MS,
    keepAliveTimeoutMs: DEFAULT_KEEPALIVE_TIMEOUT_MS,
    logFormat: "json",
    logLevel: "Warn",
    otel: { endpoint: Option.none(), serviceName: "svc-test", headers: "", resourceAttributes: "" },
    cluster: {
      mode: "single",
      runnerHost: "127.0.0.1",
      runnerPort: 0,
      runnerAdvertiseHost: "127.0.0.1",
      shardsPerGroup: 30,
      healthCheckIntervalMs: 2000,
      shardLockRefreshIntervalMs: 2000,
      shardLockExpirationMs: 6000
    },
    providers: {
      mode: "sandbox",
      sandboxUrl: "http://svc.test/sandbox",
      servesSandbox: true,
      sandboxSecret: Redacted.make(DEFAULT_SANDBOX_SECRET),
      sandboxCallbackOrigins: [],
      handoffTtlSeconds: DEFAULT_HANDOFF_TTL_SECONDS
    },
    ...overrides
  }
}

export class TestServer extends Context.Service<TestServer, { readonly url: string }>()("test/TestServer") {}

const serverUrl = Layer.effect(TestServer)(
  Effect.map(HttpServer.HttpServer, (server) => {
    const address = server.address
    return { url: address._tag === "UnixPathAddress" ? "" : `http://127.0.0.1:${address.port}` }
  })
)

type AppLayer = Layer.Layer<never, unknown, Layer.Services<typeof AppRoutes>>

/** Serves `app` (default: the service's AppRoutes) with the core services over real HTTP. */
export const serveApp = (settings: AppSettings, app: AppLayer = AppRoutes) =>
  launch({
    settings,
    app,
    server: (app) =>
      serverUrl.pipe(
        Layer.provideMerge(HttpRouter.serve(app, { disableLogger: true, disableListenLog: true })),
        // `settings.port` is 0 (ephemeral) unless a test picked one (test/support/providers.ts).
        Layer.provide(NodeHttpServer.layer(createServer, { port: settings.port, host: "127.0.0.1" }))
      ),
    // As LOG_LEVEL does when serving: the default "Warn" keeps the access lines out of test output.
    observability: Layer.succeed(References.MinimumLogLevel)(settings.logLevel)
  })

export interface HttpResult {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** Parsed JSON body; `any` so assertions can walk it freely. */
  readonly json: any
}

/** One real HTTP request against the test server. */
/** `duplex: "half"` lets a test stream a request body (Node fetch needs it; the DOM type lacks it). */
export const call = (path: string, init: RequestInit & { readonly duplex?: "half" } = {}) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const response = yield* Effect.promise(() => fetch(`${url}${path}`, init))
    const text = yield* Effect.promise(() => response.text())
    let json: unknown = undefined
    if ((response.headers.get("content-type") ?? "").includes("json") && text.length > 0) json = JSON.parse(text)
    return { status: response.status, headers: response.headers, text, json } as HttpResult
  })

/**
 * A clock the test sets by hand, seen only by request handling (the deprecation table, the
 * rate-limit windows), while the runner, the database pool and their timers keep real time.
 */
export class RequestClock extends Context.Service<RequestClock, TestClock.TestClock>()("test/RequestClock") {}

const requestClockMiddleware = (clock: TestClock.TestClock) =>
  HttpRouter.middleware((httpEffect) => Effect.provideService(httpEffect, Clock.Clock, clock), { global: true })

/** Serves `app` whose requests read time from `RequestClock` (provided in the output). */
/** A JSON call with an API key (`Authorization: Bearer`), the body serialised when there is one. */
export const callAs = (key: string, method: string, path: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

export const serveAppWithRequestClock = (settings: AppSettings, app: AppLayer = AppRoutes) =>
  Layer.unwrap(
    Effect.map(TestClock.make(), (clock) =>
      serveApp(settings, Layer.merge(app, requestClockMiddleware(clock))).pipe(
        Layer.merge(Layer.succeed(RequestClock)(clock))
      ))
  )

export const setRequestTime = (iso: string) => Effect.flatMap(RequestClock, (clock) => clock.setTime(Date.parse(iso)))

export const adjustRequestTime = (duration: Duration.Input) =>
  Effect.flatMap(RequestClock, (clock) => clock.adjust(duration))

export interface CapturedLog {
  readonly level: string
  readonly message: unknown
  readonly requestId: string
}

/** A logger layer that records every line with the request id it was written for. */
export const captureLogs = (sink: Array<CapturedLog>) =>
  Logger.layer([
    Logger.make((options) => {
      sink.push({ level: options.logLevel, message: options.message, requestId: options.fiber.getRef(CurrentRequestId) })
    })
  ])

/** An answer's body without its request-scoped id, to compare two answers byte for byte. */
export const withoutRequestId = (text: string) => text.replace(/"request_id":"[^"]+"/, "")
