/**
 * Authentication overhead (`npm run bench:auth`).
 *
 * One service process on the PostgreSQL of `DATABASE_URL` (required: the bench lifts the key's
 * per-minute allowance in the database so that it measures authentication, not the limiter's
 * 429s, and an embedded database cannot be reached from outside its process). A partner app is
 * registered, provisions a profile and takes a key from /oauth/token, as a real client would.
 * Then, in the same run:
 * `GET /healthz` (no credential: the skeleton's unauthenticated path) against `GET /api/v1/me`
 * with the key (auth cache warm after the warm-up: digest, cache hit, scope check, rate-limit
 * bucket, principal). Goal: authentication costs under 20 % of throughput (ratio >= 0.80).
 *
 * Settings (env): BENCH_CONNECTIONS (50), BENCH_DURATION_S (10), BENCH_WARMUP_S (5).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fmt, freePort, HOST, intFromEnv, load, percentile, startProcess, stopProcess, waitFor } from "../support.ts"

const ADMIN_TOKEN = "bench-operator-token-0123456789"

const json = async (port: number, path: string, init: RequestInit) => {
  const response = await fetch(`http://${HOST}:${port}${path}`, { ...init, signal: AbortSignal.timeout(10_000) })
  const body: unknown = await response.json()
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${JSON.stringify(body)}`)
  return body as Record<string, any>
}

/** Operator registers an app; the app provisions a profile and mints a key, as in production. */
const mintKey = async (port: number): Promise<string> => {
  const app = (await json(port, "/api/v1/admin/oauth-apps", {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", redirect_uris: ["https://bench.example/cb"] })
  })).data
  const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString("base64")}`
  const profile = (await json(port, "/api/v1/profiles", {
    method: "POST",
    headers: { authorization: basic, "content-type": "application/json" },
    body: JSON.stringify({ external_ref: "bench-merchant", scopes: ["connections", "analytics"] })
  })).data
  const token = await json(port, "/oauth/token", {
    method: "POST",
    headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", profile_id: profile.profile_id }).toString()
  })
  return token.access_token
}

/** Lifts the key's per-minute allowance (the service re-reads it once its 5 s auth cache expires). */
const liftRateLimit = (databaseUrl: string, key: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const digest = createHash("sha256").update(key, "utf8").digest("hex")
      yield* sql`UPDATE api_keys SET rate_limit_per_minute = 1000000000 WHERE secret_hash = ${digest}`
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })), Effect.scoped)
  )

const main = async () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:auth needs DATABASE_URL (a PostgreSQL the bench may write to); nothing measured")
    process.exitCode = 1
    return
  }
  const connections = intFromEnv("BENCH_CONNECTIONS", 50, 500)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 10, 120)
  // At least the auth cache's lifetime, so the lifted allowance is in force when measuring starts.
  const warmupSeconds = Math.max(6, intFromEnv("BENCH_WARMUP_S", 6, 60))
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-auth-"))
  const service = startProcess(
    ["src/platform/main.node.ts"],
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL: undefined,
      PORT: String(port),
      HOST,
      SVC_DATA_DIR: join(dataDir, "db"),
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "Warn"
    },
    "service"
  )
  try {
    await waitFor(port, service.child, 120_000).catch((error: unknown) => {
      throw new Error(`service did not start: ${String(error)}\n${service.output()}`)
    })
    const key = await mintKey(port)
    await liftRateLimit(databaseUrl, key)
    console.log(`node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up + ${durationSeconds} s per run; 127.0.0.1 only`)
    const runs = [
      { label: "GET /healthz (no credential)", path: "/healthz", headers: {} },
      { label: "GET /api/v1/me (API key, cache warm)", path: "/api/v1/me", headers: { authorization: `Bearer ${key}` } }
    ]
    const rows = []
    for (const run of runs) {
      process.stdout.write(`  running ${run.label} ...`)
      const result = await load(port, run.path, 200, connections, warmupSeconds, durationSeconds, run.headers)
      const rps = result.requests / result.seconds
      rows.push({ ...run, rps, p50: percentile(result.latenciesMs, 0.5), p99: percentile(result.latenciesMs, 0.99), errors: result.errors })
      console.log(` ${fmt(rps)} req/s`)
    }
    console.log("")
    console.log("| path | req/s | p50 ms | p99 ms | errors |")
    console.log("|---|---:|---:|---:|---:|")
    for (const row of rows) console.log(`| ${row.label} | ${fmt(row.rps)} | ${fmt(row.p50, 2)} | ${fmt(row.p99, 2)} | ${row.errors} |`)
    const [open, authenticated] = rows
    if (open !== undefined && authenticated !== undefined) {
      const ratio = authenticated.rps / open.rps
      console.log("")
      console.log(`authenticated / unauthenticated throughput: ${fmt(ratio, 2)}x (authentication costs ${fmt((1 - ratio) * 100, 0)} %; goal < 20 %: ${ratio >= 0.8 ? "met" : "NOT met"})`)
    }
    process.exitCode = rows.some((row) => row.errors > 0) ? 1 : 0
  } finally {
    await stopProcess(service.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
