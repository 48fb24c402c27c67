/**
 * Batched ingest over RPC against HTTP ingest, same run (`npm run bench:rpc`; decision 0082).
 *
 * One service process on the PostgreSQL of `DATABASE_URL` (required; a fresh database is best:
 * the tables grow by every run). Two profiles seeded by SQL, each with a default `purchase`
 * definition: one written through `POST /api/v1/events` (an API key, N keep-alive connections,
 * one event per request, the load generator of bench/support.ts), one through
 * `EventsIngestBatch` over WebSocket + MessagePack (an internal-service credential, W callers on
 * one socket, B events per call). Bodies are alike: a unique `idempotency_key`, a decimal value,
 * currency and a customer from a pool of BENCH_CUSTOMERS.
 *
 * The two paths alternate (HTTP, RPC, HTTP, RPC, ...) for BENCH_ROUNDS rounds of
 * BENCH_DURATION_S each after a warm-up of each, so that both see the same machine; the table
 * shows events/s and the p99 of a call (an HTTP request: one event; an RPC call: B events) per
 * round, and the ratio RPC / HTTP of events/s.
 *
 * Settings (env): BENCH_CONNECTIONS (32), BENCH_RPC_CALLERS (8), BENCH_BATCH (100),
 * BENCH_DURATION_S (8), BENCH_WARMUP_S (4), BENCH_ROUNDS (2), BENCH_CUSTOMERS (2000).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { postgresOptions } from "../../src/platform/database.ts"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { fmt, freePort, HOST, intFromEnv, load, percentile, startProcess, stopProcess, useSecretsKey, waitFor } from "../support.ts"

const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl === undefined || databaseUrl === "") {
  console.error("bench:rpc needs DATABASE_URL (e.g. createdb bench_rpc)")
  process.exit(1)
}

const connections = intFromEnv("BENCH_CONNECTIONS", 32, 1000)
const callers = intFromEnv("BENCH_RPC_CALLERS", 8, 256)
const batch = intFromEnv("BENCH_BATCH", 100, 500)
const durationSeconds = intFromEnv("BENCH_DURATION_S", 8, 120)
const warmupSeconds = intFromEnv("BENCH_WARMUP_S", 4, 60)
const rounds = intFromEnv("BENCH_ROUNDS", 2, 20)
const customers = intFromEnv("BENCH_CUSTOMERS", 2000, 1_000_000)

const pg = PgClient.layer({ ...postgresOptions(Redacted.make(databaseUrl)), maxConnections: 1, applicationName: "bench-rpc" })

/** A profile with a `purchase` definition, an API key and an RPC credential, both `events:write`. */
const seed = (label: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const workspaceId = crypto.randomUUID()
      const profileId = crypto.randomUUID()
      const key = mintSecret(CredentialPrefix.apiKey)
      const credential = mintSecret(CredentialPrefix.rpcCredential)
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${`bench rpc ${label}`})`
        yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, ${label}, 'USD')`
        yield* sql`
          INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes, rate_limit_per_minute)
          VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
                  ${secretDigest(key)}, ${["events:write"]}, 1000000000)`
        yield* sql`
          INSERT INTO rpc_credentials (id, name, prefix, secret_hash, scopes, profile_ids, rate_limit_per_minute)
          VALUES (${crypto.randomUUID()}, ${`bench ${label}`}, ${displayPrefix(credential, CredentialPrefix.rpcCredential)},
                  ${secretDigest(credential)}, ${["events:write"]}::text[], NULL, 1000000)`
        yield* sql`
          INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, is_default, counts_as_cash)
          VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'Purchase', 'event', ${["purchase"]}, true, true)`
      }))
      return { profileId, key, credential }
    }).pipe(Effect.provide(pg), Effect.scoped)
  )

const run = Date.now().toString(36)
const eventOf = (path: string, n: number) => ({
  event_name: "purchase",
  idempotency_key: `${run}-${path}-${n}`,
  properties: { value: `${(n % 500) + 0.25}`, currency: "USD" },
  user_traits: { external_id: `customer-${n % customers}` },
  action_source: "website" as const
})

interface Measured {
  readonly events: number
  readonly seconds: number
  readonly p99Ms: number
  readonly errors: number
}

const httpRound = async (port: number, key: string, seconds: number, warmup: number, offset: { n: number }): Promise<Measured> => {
  const result = await load(port, "/api/v1/events", 200, connections, warmup, seconds, {
    authorization: `Bearer ${key}`,
    "content-type": "application/json"
  }, undefined, () => ({ method: "POST", body: JSON.stringify(eventOf("http", offset.n++)) }))
  const sorted = Float64Array.from(result.latenciesMs).sort()
  return { events: result.requests, seconds: result.seconds, p99Ms: percentile(sorted, 0.99), errors: result.errors }
}

const rpcRound = (
  rpc: Effect.Success<ReturnType<typeof makeServiceClient>>,
  profileId: string,
  seconds: number,
  offset: { n: number }
) =>
  Effect.gen(function*() {
    const latencies: Array<number> = []
    let events = 0
    let errors = 0
    const started = performance.now()
    const until = started + seconds * 1000
    yield* Effect.forEach(Array.from({ length: callers }), () =>
      Effect.whileLoop({
        while: () => performance.now() < until,
        body: () =>
          Effect.suspend(() => {
            const events = Array.from({ length: batch }, () => eventOf("rpc", offset.n++))
            const at = performance.now()
            return Effect.map(rpc.EventsIngestBatch({ profile_id: profileId, events }), (answer) => ({ answer, ms: performance.now() - at }))
          }),
        step: ({ answer, ms }) => {
          latencies.push(ms)
          for (const result of answer.results) result.ok ? events++ : errors++
        }
      }), { concurrency: "unbounded", discard: true })
    const elapsed = (performance.now() - started) / 1000
    return { events, seconds: elapsed, p99Ms: percentile(Float64Array.from(latencies).sort(), 0.99), errors } satisfies Measured
  })

const main = async () => {
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-rpc-"))
  const service = startProcess(
    ["src/main/node.ts"],
    { ...process.env, DATABASE_URL: databaseUrl, SVC_SECRETS_KEY: useSecretsKey(), REDIS_URL: undefined, PORT: String(port), HOST, SVC_DATA_DIR: join(dataDir, "db"), LOG_LEVEL: "Warn" },
    "service"
  )
  const scope = await Effect.runPromise(Scope.make())
  try {
    await waitFor(port, service.child, 120_000).catch((error: unknown) => {
      throw new Error(`service did not start: ${String(error)}\n${service.output()}`)
    })
    const httpSide = await seed("http")
    const rpcSide = await seed("rpc")
    const rpc = await Effect.runPromise(
      Scope.provide(makeServiceClient({ url: `http://${HOST}:${port}`, credential: rpcSide.credential, transport: "websocket", serialization: "msgpack" }), scope)
    )
    console.log(
      `node ${process.versions.node}; HTTP: ${connections} connections, 1 event per request; RPC: WebSocket + MessagePack, ` +
        `${callers} callers, ${batch} events per call; ${warmupSeconds} s warm-up, ${rounds} rounds of ${durationSeconds} s each; 127.0.0.1`
    )
    const httpOffset = { n: 0 }
    const rpcOffset = { n: 0 }
    await Effect.runPromise(rpcRound(rpc, rpcSide.profileId, warmupSeconds, rpcOffset))
    console.log("| round | path | events/s | p99 of a call (ms) | refused |")
    console.log("|---|---|---:|---:|---:|")
    const ratios: Array<number> = []
    for (let round = 1; round <= rounds; round++) {
      const http = await httpRound(port, httpSide.key, durationSeconds, round === 1 ? warmupSeconds : 1, httpOffset)
      const viaRpc = await Effect.runPromise(rpcRound(rpc, rpcSide.profileId, durationSeconds, rpcOffset))
      const httpRate = http.events / http.seconds
      const rpcRate = viaRpc.events / viaRpc.seconds
      ratios.push(rpcRate / httpRate)
      console.log(`| ${round} | HTTP POST /api/v1/events | ${fmt(httpRate)} | ${fmt(http.p99Ms, 1)} | ${http.errors} |`)
      console.log(`| ${round} | RPC EventsIngestBatch (${batch}) | ${fmt(rpcRate)} | ${fmt(viaRpc.p99Ms, 1)} | ${viaRpc.errors} |`)
    }
    console.log(`RPC / HTTP events/s per round: ${ratios.map((r) => fmt(r, 2)).join(", ")}`)
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await stopProcess(service.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
