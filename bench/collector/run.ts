/**
 * The tracker's collector (`npm run bench:collector`): `POST /t/collect` page views from N
 * keep-alive connections against the service on the PostgreSQL of `DATABASE_URL` (a fresh, empty
 * database is best: the tables grow by every run). Each answer is 204 only after the touch
 * committed (group commit, Touches.insertWebTouch).
 *
 * Seeded by SQL: BENCH_PROFILES profiles, each with a tracking key whose allowed origin is the
 * bodies' `Origin`. The collector allows 600 events a minute per tracking key and address, and the
 * bench sends from 127.0.0.1 only, so the profiles spread the load: their number bounds the rate
 * (10/s each; the default 1,000 allows 10,000/s). Bodies: a unique `event_id` each, an anonymous id
 * from a pool of 5,000 per profile (no customer bound: the lookup finds none), UTM and gclid in the URL.
 *
 * Printed: events/s, p50/p99, errors, CPU per event of the service, of PostgreSQL (every `postgres`
 * process) and of this load generator, how busy the machine was, and the touches stored.
 *
 * Settings (env): BENCH_CONNECTIONS (64), BENCH_DURATION_S (10), BENCH_WARMUP_S (6), BENCH_PROFILES (1000),
 * BENCH_START_S (120).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { CredentialPrefix, mintSecret } from "../../src/kernel/credentials/tokens.ts"
import { onDatabase as onDatabaseAt, fmt, pageView, TRACKED_ORIGIN, freePort, HOST, intFromEnv, load, type LoadRequest, percentile, startProcess, stopProcess, useSecretsKey, waitFor } from "../support.ts"


const onDatabase = <A>(url: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) => onDatabaseAt(url, "bench-collector", f)

const seed = (databaseUrl: string, profiles: number) =>
  onDatabase(databaseUrl, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      const keys: Array<string> = []
      for (let i = 0; i < profiles; i++) {
        const workspaceId = crypto.randomUUID()
        const profileId = crypto.randomUUID()
        const trackingKey = mintSecret(CredentialPrefix.trackingKey)
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${`bench collector ${i}`})`
        yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, ${`bench ${i}`}, 'USD')`
        yield* sql`INSERT INTO tracking_keys (id, profile_id, key) VALUES (${crypto.randomUUID()}, ${profileId}, ${trackingKey})`
        yield* sql`INSERT INTO tracking_settings (profile_id, allowed_origins) VALUES (${profileId}, ${[TRACKED_ORIGIN]})`
        keys.push(trackingKey)
      }
      return keys
    })))

const stored = (databaseUrl: string) =>
  onDatabase(databaseUrl, (sql) => Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM touches`, (rows) => rows[0]?.n ?? 0))

const bodies = (runId: string, keys: ReadonlyArray<string>) => (n: number): LoadRequest => ({
  method: "POST",
  ...pageView(keys[n % keys.length] ?? "", runId, n)
})

const main = async () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:collector needs DATABASE_URL (a PostgreSQL the bench may write to; a fresh, empty database is best); nothing measured")
    process.exitCode = 1
    return
  }
  const connections = intFromEnv("BENCH_CONNECTIONS", 64, 1000)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 10, 120)
  const warmupSeconds = intFromEnv("BENCH_WARMUP_S", 6, 60)
  const profiles = intFromEnv("BENCH_PROFILES", 1000, 10_000)
  const startMillis = intFromEnv("BENCH_START_S", 120, 1800) * 1000
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-collector-"))
  const service = startProcess(
    ["src/main/node.ts"],
    { ...process.env, DATABASE_URL: databaseUrl, SVC_SECRETS_KEY: useSecretsKey(), REDIS_URL: undefined, PORT: String(port), HOST, SVC_DATA_DIR: dataDir, LOG_LEVEL: "Warn" },
    "service"
  )
  try {
    await waitFor(port, service.child, startMillis).catch((error: unknown) => {
      throw new Error(`service did not start: ${String(error)}\n${service.output()}`)
    })
    const keys = await seed(databaseUrl, profiles)
    const before = await stored(databaseUrl)
    console.log(`node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up + ${durationSeconds} s; ${profiles} tracking keys; 127.0.0.1 only`)
    const result = await load(port, "/t/collect", 204, connections, warmupSeconds, durationSeconds, {}, service.child.pid, bodies(Date.now().toString(36), keys))
    const after = await stored(databaseUrl)
    const perEvent = (ms: number | undefined) => (ms === undefined || result.requests === 0 ? "n/a" : fmt((ms * 1000) / result.requests))
    console.log("")
    console.log("| events/s | p50 ms | p99 ms | errors | CPU µs/event: service / PostgreSQL / load generator | machine busy | touches stored (incl. warm-up) |")
    console.log("|---:|---:|---:|---:|---|---:|---:|")
    console.log(
      `| ${fmt(result.requests / result.seconds)} | ${fmt(percentile(result.latenciesMs, 0.5), 2)} | ${fmt(percentile(result.latenciesMs, 0.99), 2)} | ${result.errors} | ` +
        `${perEvent(result.serverCpuMs)} / ${perEvent(result.databaseCpuMs)} / ${perEvent(result.clientCpuMs)} | ` +
        `${result.machineBusy === undefined ? "n/a" : `${fmt(result.machineBusy * 100, 0)} %`} | ${after - before} |`
    )
    // Every acknowledged event is committed: at least as many touches as measured 204s.
    process.exitCode = result.errors === 0 && after - before >= result.requests ? 0 : 1
  } finally {
    await stopProcess(service.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
