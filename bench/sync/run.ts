/**
 * Provider sync throughput (`npm run bench:sync`). Decision 0058; figures in bench/README.md.
 *
 * The sandbox providers run alone in a child process (`sandbox/main.ts`, as `npm run sandbox`
 * serves them), behind a counting HTTP proxy in this process (every answer's status is counted:
 * pages, 429s, 5xx). The service's own layers run in this process on the PostgreSQL of
 * `DATABASE_URL`: configuration, database pool, migrations, the connections repository, the
 * sessions, the provider ports (`ProvidersLayer`: the HTTP client with its default bucket and retries) and
 * the sync worker with its default settings (background fibers off: the bench steps it).
 *
 * 1. The sandbox generates one ad account with BENCH_ADS ads (5,000) (`{arrive: {kind:
 *    "generated_account", ads}}`); a grant for it is taken through the consent page and the token
 *    endpoint and stored as a live connection of a new profile (a person's: the add-on is on).
 * 2. A `structure` job, then a `backfill` job of BENCH_DAYS days (396: 13 months), each queued and
 *    run by `SyncWorker.runNext` (the worker's real path: claim, lease, pages streamed, batches
 *    written, renewals, success), timed.
 *
 * Printed: rows and rows/s per job, wall time, the process's peak RSS sampled every 50 ms (memory
 * bounded: pages are streamed, never held), the HTTP calls, 429s and 5xx the proxy saw, the
 * job's attempts (1 = no retry budget exhausted), and the CPU seconds of this process, the sandbox
 * process and PostgreSQL (whole processes: the proxy runs in this one). A job that does not end `done` in one attempt,
 * or whose written rows differ from the database's count, fails the run. The profile's rows are
 * deleted at the end (BENCH_KEEP=1 keeps them). BENCH_BATCH and BENCH_WRITERS override the worker's batch size
 * and insight write concurrency (to compare).
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { createServer, request as httpRequest } from "node:http"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { ConnectionSessions } from "../../src/connections/sessions.ts"
import { ConnectionsRepo } from "../../src/connections/repo.ts"
import { SyncJobsRepo } from "../../src/ingestion/sync/repo.ts"
import { defaultSyncWorkerSettings, SyncWorker, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { AppConfig, DEFAULT_SANDBOX_SECRET, loadSettings } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { RunnerLiveness } from "../../src/platform/liveness.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { sandboxClientSecret } from "../../src/connections/providers/endpoints.ts"
import { ProvidersLayer } from "../../src/connections/providers/layer.ts"
import { SANDBOX_WORLD_PARAM, sandboxWorlds } from "../../src/connections/providers/sandbox-world.ts"
import { commandCpuMs, fmt, freePort, HOST, intFromEnv, processCpuMs, runInProcessBench, sleep, startProcess, stopProcess } from "../support.ts"

const ADS = intFromEnv("BENCH_ADS", 5_000, 100_000)
const DAYS = intFromEnv("BENCH_DAYS", 396, 1_000)

// The bench and the sandbox it spawns key sandbox world handles with one key (decision 0109): the
// consent link names the bench profile's world, whose test controls its API key opens.
process.env["SVC_SECRETS_KEY"] ??= randomBytes(32).toString("base64")

/** What the counting proxy saw. */
const seen = { calls: 0, throttled: 0, failed: 0 }

/** Forwards every request to the sandbox and counts the answers' statuses. */
const startProxy = async (targetPort: number) => {
  const port = await freePort()
  const server = createServer((incoming, outgoing) => {
    const forwarded = httpRequest(
      { host: HOST, port: targetPort, path: incoming.url, method: incoming.method, headers: incoming.headers },
      (answer) => {
        seen.calls++
        if (answer.statusCode === 429) seen.throttled++
        else if ((answer.statusCode ?? 0) >= 500) seen.failed++
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(outgoing)
      }
    )
    forwarded.on("error", () => {
      outgoing.writeHead(502)
      outgoing.end()
    })
    incoming.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve))
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** Peak resident set size of this process, sampled every 50 ms while `during` runs. */
const peakRss = <A, E, R>(during: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    let peak = process.memoryUsage().rss
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 50)
    return during.pipe(
      Effect.map((value) => ({ value, peakMb: peak / 1024 / 1024 })),
      Effect.ensuring(Effect.sync(() => clearInterval(timer)))
    )
  })

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json") && text.length > 0
    return { status: response.status, location: response.headers.get("location"), body: isJson ? JSON.parse(text) : null }
  })

/** CPU ms so far of this process, the sandbox process and PostgreSQL (same machine, from /proc). */
const cpuNow = () => ({
  service: processCpuMs(process.pid) ?? 0,
  sandbox: processCpuMs(sandboxProcess.child.pid) ?? 0,
  postgres: commandCpuMs("postgres") ?? 0
})

const main = (sandboxUrl: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const box = yield* SecretBox
    const connections = yield* ConnectionsRepo
    const jobs = yield* SyncJobsRepo
    const worker = yield* SyncWorker
    const base = `${sandboxUrl}/adplatform`

    // 1. A profile with an API key (its sandbox world's test controls open with it), the generated
    //    account in that world (listed first: the next `one_account` consent reaches it), and a grant for it (not timed).
    const workspaceId = crypto.randomUUID()
    const profileId = crypto.randomUUID()
    const key = mintSecret(CredentialPrefix.apiKey)
    yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench:sync')`
    yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'bench:sync')`
    yield* sql`
      INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes)
      VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
              ${secretDigest(key)}, ${["connections:read"]})`
    const control = { authorization: `Bearer ${key}` }
    const state = yield* json(`${base}/_state`, { headers: control })
    if (state.status !== 200) return yield* Effect.fail(new Error(`_state: ${state.status} ${JSON.stringify(state.body)}`))
    const arrived = yield* json(`${base}/_state`, {
      method: "PATCH",
      headers: { ...control, "content-type": "application/json" },
      body: JSON.stringify({ arrive: { kind: "generated_account", ads: ADS } })
    })
    if (arrived.status !== 201) return yield* Effect.fail(new Error(`generated_account: ${arrived.status} ${JSON.stringify(arrived.body)}`))
    const account = arrived.body.account as { readonly id: string; readonly currency: string; readonly ads: number }
    const redirect = "http://127.0.0.1/callback"
    const consent = yield* json(
      `${base}/oauth/authorize?client_id=sandbox-adplatform&redirect_uri=${encodeURIComponent(redirect)}&state=bench` +
        `&${SANDBOX_WORLD_PARAM}=${encodeURIComponent(sandboxWorlds(box.keyedHash).handle(profileId))}`,
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ persona: "one_account", decision: "approve" }).toString(),
        redirect: "manual"
      }
    )
    const code = new URL(consent.location ?? "http://invalid/").searchParams.get("code")
    if (code === null) return yield* Effect.fail(new Error(`consent gave no code (${consent.status})`))
    const token = yield* json(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirect,
        client_id: state.body.app.client_id,
        // `_state` shows no secret: the app's derives from the sandbox's root, as the service derives it.
        client_secret: sandboxClientSecret(process.env["SVC_SANDBOX_SECRET"] ?? DEFAULT_SANDBOX_SECRET, "adplatform")
      })
    })
    if (typeof token.body?.access_token !== "string") return yield* Effect.fail(new Error(`token: ${token.status} ${JSON.stringify(token.body)}`))
    const { id: connectionId } = yield* connections.upsertFromGrant({
      profileId,
      provider: "adplatform",
      accountId: account.id,
      displayName: `Generated ${account.id}`,
      currency: account.currency,
      timezone: "UTC",
      providerUserId: null,
      tokens: {
        accessTokenSealed: box.seal(token.body.access_token),
        refreshTokenSealed: null,
        expiresAt: new Date(Date.now() + 24 * 3_600_000),
        scopes: String(token.body.scope ?? "").split(" ")
      },
      appId: null,
      handoffId: null,
      shop: null,
      status: "active",
      statusReason: null
    })

    // 2. Structure, then the 13-month backfill, each through the worker (timed).
    const runJob = (kind: "structure" | "backfill", windowDays: number | null) =>
      Effect.gen(function*() {
        const [queued] = yield* jobs.enqueue(profileId, [connectionId], kind, windowDays, "bench")
        if (queued === undefined) return yield* Effect.fail(new Error(`no ${kind} job queued`))
        const calls = { ...seen }
        const cpu = cpuNow()
        const started = performance.now()
        const { value: outcome, peakMb } = yield* peakRss(worker.runNext)
        const seconds = (performance.now() - started) / 1000
        const row = yield* jobs.find(profileId, queued.job_id)
        if (Option.isNone(outcome) || Option.isNone(row)) return yield* Effect.fail(new Error(`the ${kind} job was not run`))
        const job = row.value
        if (job.status !== "done" || job.attempts !== 1) {
          return yield* Effect.fail(new Error(`${kind}: ${job.status} after ${job.attempts} attempts (${job.error})`))
        }
        const p = job.progress
        const rows = kind === "structure" ? (p.campaigns ?? 0) + (p.ad_sets ?? 0) + (p.ads ?? 0) : p.insight_rows ?? 0
        console.log(
          `${kind.padEnd(9)} ${fmt(rows).padStart(10)} rows  ${fmt(seconds, 2).padStart(7)} s  ${fmt(rows / seconds).padStart(8)} rows/s  ` +
            `peak RSS ${fmt(peakMb)} MB  calls ${fmt(seen.calls - calls.calls)}  429 ${seen.throttled - calls.throttled}  ` +
            `5xx ${seen.failed - calls.failed}  attempts ${job.attempts}`
        )
        const used = cpuNow()
        console.log(
          `          CPU s: service ${fmt((used.service - cpu.service) / 1000, 1)}, sandbox ${fmt((used.sandbox - cpu.sandbox) / 1000, 1)}, ` +
            `postgres ${fmt((used.postgres - cpu.postgres) / 1000, 1)}`
        )
        return { rows, seconds }
      })

    console.log(`bench:sync — one ad account, ${fmt(ADS)} ads, ${DAYS} days of insights, through the sandbox over HTTP`)
    const wall = performance.now()
    const structure = yield* runJob("structure", null)
    const backfill = yield* runJob("backfill", DAYS)
    console.log(`total     ${fmt(structure.rows + backfill.rows).padStart(10)} rows  ${fmt((performance.now() - wall) / 1000, 2).padStart(7)} s wall`)

    const [stored] = yield* sql<{ ads: number; spend: number }>`
      SELECT (SELECT count(*)::int FROM ads WHERE profile_id = ${profileId}) AS ads,
             (SELECT count(*)::int FROM ad_spend WHERE profile_id = ${profileId}) AS spend`
    if (stored === undefined || stored.spend !== backfill.rows) {
      return yield* Effect.fail(new Error(`ad_spend holds ${stored?.spend} rows, the job wrote ${backfill.rows}`))
    }
    if (process.env["BENCH_KEEP"] !== "1") {
      yield* sql`DELETE FROM ad_spend WHERE profile_id = ${profileId}`
      yield* sql`DELETE FROM sync_jobs WHERE profile_id = ${profileId}`
      yield* sql`DELETE FROM ads WHERE profile_id = ${profileId}`
      yield* sql`DELETE FROM ad_sets WHERE profile_id = ${profileId}`
      yield* sql`DELETE FROM ad_campaigns WHERE profile_id = ${profileId}`
      yield* sql`DELETE FROM api_keys WHERE profile_id = ${profileId}`
    }
  })

const sandboxPort = await freePort()
const sandboxProcess = startProcess(["sandbox/main.ts"], { ...process.env, SVC_SANDBOX_PORT: String(sandboxPort), HOST }, "sandbox")
const proxy = await startProxy(sandboxPort)
const sandboxUrl = `http://${HOST}:${proxy.port}/sandbox`
for (let i = 0; i < 100; i++) {
  // Test media answers without a credential (test controls do not): the sandbox is up.
  const up = await fetch(`http://${HOST}:${sandboxPort}/sandbox/adplatform/media/ready.txt?bytes=0`).then((r) => r.ok, () => false)
  if (up) break
  await sleep(100)
}

await runInProcessBench("sync", "a PostgreSQL the bench may write a year of spend to", main(sandboxUrl), () => {
  const settings = Layer.effect(AppConfig)(Effect.map(loadSettings, (loaded) => ({
    ...loaded,
    providers: { ...loaded.providers, mode: "sandbox" as const, sandboxUrl, servesSandbox: false }
  })))
  // The worker's defaults, unless BENCH_BATCH asks for another batch size (to compare).
  const workerSettings = Layer.succeed(SyncWorkerSettings)({
    ...defaultSyncWorkerSettings,
    enabled: false,
    batchSize: intFromEnv("BENCH_BATCH", defaultSyncWorkerSettings.batchSize, 10_000),
    writeConcurrency: intFromEnv("BENCH_WRITERS", defaultSyncWorkerSettings.writeConcurrency, 16)
  })
  return Layer.mergeAll(SyncWorker.layer, SyncJobsRepo.layer, ConnectionsRepo.layer).pipe(
    Layer.provide(workerSettings),
    Layer.provide(ConnectionSessions.layer),
    Layer.provide(ProvidersLayer),
    Layer.provideMerge(SecretBox.layer),
    Layer.provideMerge(RunnerLiveness.layer),
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provide(settings)
  )
})
await proxy.close()
await stopProcess(sandboxProcess.child)
