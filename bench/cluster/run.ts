/**
 * One runner against three on one PostgreSQL (`npm run bench:cluster`; issue 35 part 6; figures in
 * bench/README.md, "cluster").
 *
 * The service runs as real child processes (`src/main/node.ts`, `SVC_CLUSTER_MODE=socket`, the
 * production cluster intervals), first one runner, then three on a fresh database each time
 * (`bench_cluster_wt`, dropped and created again, dropped at the end). Every runner is a whole
 * service: HTTP, background workers, a pool of 10, its share of the 300 shards. The load generator
 * is this process: a load balancer in front of the runners' HTTP ports (round robin over the runners
 * whose `/readyz` answered 200 at the last probe, every 250 ms, and not since refused a connection),
 * as a Kubernetes Service or a proxy would be.
 *
 * Load, the same for both: BENCH_PROFILES (12) profiles, each with an API key, a tracking key and
 * one experiment; requests spread over the profiles and mixed as
 *   outcome     POST /api/v1/events (200), ingest: a unique key, a pooled customer
 *   touch       POST /t/collect (204), ingest: a page view with UTM tags and a click id
 *   overview    GET /api/v1/overview?days=30 (200), an analytics read
 *   experiment  GET /api/v1/experiments/:id (200), a read through the Experiment entity: a shard's
 *               owner answers it, so with three runners two in three go over the runner sockets.
 * in the ratio 7 : 7 : 3 : 3. Touches leave from 16 loopback addresses (127.0.0.2-17) so that the
 * collector's per-address limit (600 a minute per tracking key) is not what is measured.
 *
 * Phases per configuration:
 *   fixed       BENCH_RATE (200) requests/s offered open loop (latency counted from the moment a
 *               request was due, so a stall is not hidden), BENCH_WARMUP_S (8) then BENCH_DURATION_S (20).
 *   saturation  BENCH_CONCURRENCY (32) requests always in flight (closed loop), the same mix and
 *               durations: the most the configuration serves on this machine.
 * With three runners, then, twice (SIGTERM, then SIGKILL) under the fixed load: one runner (the
 * third) stopped, left down BENCH_DOWN_S (10), started again on the same ports (a StatefulSet pod
 * comes back under its address); shard ownership read every 250 ms from each live runner's
 * `/metrics` (`effect_cluster_shards`) and PostgreSQL's advisory locks (`pg_locks`, one per owned
 * shard); errors and the slowest request per second.
 *
 * Printed next to every figure: `uptime`'s load (other engineers share this 2-core machine) and the
 * CPU used per request by the runners, by this database's PostgreSQL backends and by this
 * process. Overhead of three runners against one: 1 - (3-runner saturation throughput / 1-runner),
 * goal ≤ 15 %, and the fixed-load CPU per request and p99 side by side.
 *
 * Env: DATABASE_URL (a PostgreSQL URL whose user may create databases; its database is only used
 * to create and drop `bench_cluster_wt`), BENCH_REDIS_URL (unset: each runner counts rate limits in
 * memory, which the keys' allowances of 10^9 a minute make moot), BENCH_RUNNERS ("1,3"), BENCH_MOVES
 * ("SIGTERM,SIGKILL"; "" for none), BENCH_WORKERS_ON ("1": only runner 1 works the queues, the others
 * start with SVC_WORKERS=off, decision 0139), BENCH_MIX (the kinds kept, e.g. "outcome" or "experiment":
 * one kind's cost apart), BENCH_IDLE_S (10: before the load, the CPU the runners and their backends use
 * with no request at all, per second: what each runner costs whatever the traffic). A runner that exits while starting is started again (as an
 * orchestrator would), at most twice; the restarts are printed.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { Agent, request as httpRequest } from "node:http"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { onDatabase as onDatabaseAt, fmt, pageView, TRACKED_ORIGIN, freePort, HOST, intFromEnv, machineCpuMs, percentile, processCpuMs, schedOf, sleep, startProcess, stopProcess } from "../support.ts"

const DB_NAME = "bench_cluster_wt"
const ADMIN_TOKEN = `bench-cluster-admin-${randomBytes(12).toString("hex")}`
const SECRETS_KEY = randomBytes(32).toString("base64")
const TOUCH_ADDRESSES = Array.from({ length: 16 }, (_, i) => `127.0.0.${i + 2}`)
const TOTAL_SHARDS = 300

const PROFILES = intFromEnv("BENCH_PROFILES", 12, 200)
const RATE = intFromEnv("BENCH_RATE", 200, 5_000)
const WARMUP_S = intFromEnv("BENCH_WARMUP_S", 8, 120)
const DURATION_S = intFromEnv("BENCH_DURATION_S", 20, 300)
const CONCURRENCY = intFromEnv("BENCH_CONCURRENCY", 32, 1_000)
/** Open loop: at most this many requests in flight; a request due beyond it counts as an error. */
const MAX_IN_FLIGHT = intFromEnv("BENCH_MAX_IN_FLIGHT", 256, 10_000)
const DOWN_S = intFromEnv("BENCH_DOWN_S", 10, 120)
const WORKERS_ON_FIRST_ONLY = process.env["BENCH_WORKERS_ON"] === "1"
/** How long a runner may take to answer `/readyz`: at load 30 on this machine one took over 7 minutes. */
const START_TIMEOUT_S = intFromEnv("BENCH_START_TIMEOUT_S", 900, 3_600)
const RUNNER_COUNTS = (process.env["BENCH_RUNNERS"] ?? "1,3").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0)
const MOVES = (process.env["BENCH_MOVES"] ?? "SIGTERM,SIGKILL").split(",").filter((s): s is "SIGTERM" | "SIGKILL" =>
  s === "SIGTERM" || s === "SIGKILL"
)

const KINDS = ["outcome", "touch", "overview", "experiment"] as const
type Kind = (typeof KINDS)[number]
/** 7 : 7 : 3 : 3, interleaved so that any 20 consecutive requests carry the whole mix. */
const FULL_MIX: ReadonlyArray<Kind> = [
  "outcome", "touch", "overview", "outcome", "touch", "experiment", "outcome", "touch", "outcome", "touch",
  "overview", "outcome", "touch", "experiment", "outcome", "touch", "overview", "outcome", "touch", "experiment"
]
const KEPT = process.env["BENCH_MIX"]?.split(",").filter((k): k is Kind => KINDS.some((kind) => kind === k))
const MIX: ReadonlyArray<Kind> = KEPT === undefined || KEPT.length === 0 ? FULL_MIX : FULL_MIX.filter((kind) => KEPT.includes(kind))
const MIX_NAME = KINDS.map((kind) => `${kind} ${MIX.filter((k) => k === kind).length}`).join(", ")
const IDLE_S = intFromEnv("BENCH_IDLE_S", 10, 300)

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")

// ---------------------------------------------------------------------------------------------
// The database: fresh per configuration.

const withUrl = (base: string, database: string) => {
  const url = new URL(base)
  url.pathname = `/${database}`
  return url.toString()
}

const onDatabase = <A>(url: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) => onDatabaseAt(url, "bench-cluster", f)

const recreateDatabase = (adminUrl: string) =>
  onDatabase(adminUrl, (sql) =>
    Effect.gen(function*() {
      yield* sql`DROP DATABASE IF EXISTS ${sql(DB_NAME)} WITH (FORCE)`
      yield* sql`CREATE DATABASE ${sql(DB_NAME)}`
    }))

const dropDatabase = (adminUrl: string) => onDatabase(adminUrl, (sql) => sql`DROP DATABASE IF EXISTS ${sql(DB_NAME)} WITH (FORCE)`)

interface Profile {
  readonly profileId: string
  readonly key: string
  readonly trackingKey: string
  experimentId: string
}

const seed = (databaseUrl: string) =>
  onDatabase(databaseUrl, (sql) =>
    Effect.gen(function*() {
      const profiles: Array<Profile> = []
      for (let i = 0; i < PROFILES; i++) {
        const workspaceId = crypto.randomUUID()
        const profileId = crypto.randomUUID()
        const key = mintSecret(CredentialPrefix.apiKey)
        const trackingKey = mintSecret(CredentialPrefix.trackingKey)
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${`bench cluster ${i}`})`
          yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, ${`bench ${i}`}, 'USD')`
          yield* sql`
            INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes, rate_limit_per_minute)
            VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
                    ${secretDigest(key)}, ${["events:write", "analytics:read", "campaigns:read", "campaigns:apply"]}, 1000000000)`
          yield* sql`
            INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, is_default, counts_as_cash)
            VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'Purchase', 'event', ${["purchase"]}, true, true)`
          yield* sql`INSERT INTO tracking_keys (id, profile_id, key) VALUES (${crypto.randomUUID()}, ${profileId}, ${trackingKey})`
          yield* sql`INSERT INTO tracking_settings (profile_id, allowed_origins) VALUES (${profileId}, ${[TRACKED_ORIGIN]})`
        }))
        profiles.push({ profileId, key, trackingKey, experimentId: "" })
      }
      return profiles
    }))

/** Rows the run wrote, to check that every acknowledged write is there. */
const written = (databaseUrl: string) =>
  onDatabase(databaseUrl, (sql) =>
    Effect.map(
      sql<{ events: number; touches: number }>`
        SELECT (SELECT count(*)::int FROM outcome_events) AS events, (SELECT count(*)::int FROM touches) AS touches`,
      (rows) => rows[0] ?? { events: 0, touches: 0 }
    ))

// ---------------------------------------------------------------------------------------------
// Runners.

interface Runner {
  readonly index: number
  readonly port: number
  readonly runnerPort: number
  readonly dataDir: string
  process: ReturnType<typeof startProcess>
  /** The load balancer sends to it: its last `/readyz` was 200 and no connection was refused since. */
  up: boolean
  readonly agent: Agent
  readonly touchAgents: ReadonlyArray<Agent>
}

const newAgent = (localAddress?: string) =>
  new Agent({ keepAlive: true, maxSockets: 64, ...(localAddress === undefined ? {} : { localAddress }) })

/** BENCH_CPU_PROF (a directory): every runner runs with `--cpu-prof` and writes its profile there when it stops. */
const PROFILE_DIR = process.env["BENCH_CPU_PROF"]

const spawnRunner = (runner: Pick<Runner, "index" | "port" | "runnerPort" | "dataDir">, databaseUrl: string) =>
  startProcess([...(PROFILE_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${resolve(PROFILE_DIR)}`]), "src/main/node.ts"], {
    ...process.env,
    HOST,
    PORT: String(runner.port),
    DATABASE_URL: databaseUrl,
    // In memory unless asked: at this machine's load a runner's Redis connect timed out at start (exit 1).
    REDIS_URL: process.env["BENCH_REDIS_URL"],
    SVC_CLUSTER_MODE: "socket",
    SVC_RUNNER_HOST: HOST,
    SVC_RUNNER_PORT: String(runner.runnerPort),
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_SECRETS_KEY: SECRETS_KEY,
    SVC_DATA_DIR: runner.dataDir,
    LOG_LEVEL: "Warn",
    // BENCH_WORKERS_ON=1: only the first runner works the queues (decision 0139); the others serve requests only.
    SVC_WORKERS: WORKERS_ON_FIRST_ONLY && runner.index > 1 ? "off" : "on"
  }, `runner ${runner.index}`)

/**
 * A request with a deadline: the health checks use 3 s, as the manifests' readiness probe; waiting
 * for a start uses 10 s, since at load 35 a starting runner's `/readyz` took longer than 2 s.
 */
const status = (port: number, path: string, headers: Record<string, string> = {}, timeoutMs = 3_000) =>
  fetch(`http://${HOST}:${port}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs) }).then(
    async (r) => ({ status: r.status, text: await r.text() }),
    () => ({ status: 0, text: "" })
  )

const waitUntil = async (what: string, timeoutMs: number, check: () => Promise<boolean>, runners: ReadonlyArray<Runner> = []) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await sleep(250)
  }
  throw new Error(`timed out waiting for ${what}\n${runners.map((r) => r.process.output()).join("\n")}`)
}

type Slot = Pick<Runner, "index" | "port" | "runnerPort" | "dataDir">

/** Spawns a runner and waits until its `/readyz` answers 200. */
const startRunner = async (slot: Slot, databaseUrl: string): Promise<Runner> => {
  const runner: Runner = {
    ...slot,
    process: spawnRunner(slot, databaseUrl),
    up: false,
    agent: newAgent(),
    touchAgents: TOUCH_ADDRESSES.map(newAgent)
  }
  await waitForReady(runner, databaseUrl)
  return runner
}

const waitForReady = async (runner: Runner, databaseUrl: string) => {
  let restarts = 0
  await waitUntil(`runner ${runner.index} to answer /readyz`, START_TIMEOUT_S * 1000, async () => {
    const child = runner.process.child
    if (child.exitCode !== null) {
      if (restarts === 2) throw new Error(`runner ${runner.index} exited ${child.exitCode} three times\n${runner.process.output()}`)
      restarts++
      console.log(`  runner ${runner.index} exited ${child.exitCode} while starting; started again:\n${runner.process.output().slice(-600)}`)
      runner.process = spawnRunner(runner, databaseUrl)
      return false
    }
    return (await status(runner.port, "/readyz", {}, 10_000)).status === 200
  }, [runner])
  runner.up = true
}

/** Shards a runner says it owns (`effect_cluster_shards`, summed over its series); undefined when it does not answer. */
const shardsOf = async (runner: Runner): Promise<number | undefined> => {
  const metrics = await status(runner.port, "/metrics", { authorization: `Bearer ${ADMIN_TOKEN}` }, 10_000)
  if (metrics.status !== 200) return undefined
  let total = 0
  let seen = false
  for (const line of metrics.text.split("\n")) {
    if (!/^effect_cluster_shards(\{| )/.test(line)) continue
    seen = true
    total += Number(line.slice(line.lastIndexOf(" ") + 1))
  }
  return seen ? total : undefined
}

/** Advisory locks granted in this database in effect/cluster's namespace: one per shard held (SqlRunnerStorage). */
const locksHeld = (databaseUrl: string) =>
  onDatabase(databaseUrl, (sql) =>
    Effect.map(
      sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      (rows) => rows[0]?.n ?? 0
    )).catch(() => -1)

/** CPU (ms) used so far by this database's PostgreSQL backends, by pid (so a backend counts only while it lives). */
const backendCpu = async (databaseUrl: string): Promise<Map<number, number>> => {
  const pids = await onDatabase(databaseUrl, (sql) =>
    Effect.map(sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`, (rows) => rows.map((r) => r.pid)))
  return new Map(pids.flatMap((pid) => {
    const ms = processCpuMs(pid)
    return ms === undefined ? [] : [[pid, ms] as const]
  }))
}

const cpuDelta = (before: Map<number, number>, after: Map<number, number>) => {
  let total = 0
  for (const [pid, ms] of after) {
    const start = before.get(pid)
    // A backend that started during the window counts from 0: pools open connections when needed.
    total += start === undefined ? ms : ms - start
  }
  return total
}

// ---------------------------------------------------------------------------------------------
// Load.

interface Sample {
  readonly kind: Kind
  readonly ok: boolean
  readonly ms: number
  /** When it completed (performance.now()). */
  readonly at: number
  readonly failure?: string
}

type Recorder = (sample: Sample) => void

const bodyFor = (kind: Kind, n: number, profile: Profile, runId: string): { method: string; path: string; body?: string; headers: Record<string, string>; expected: number } => {
  switch (kind) {
    case "outcome":
      return {
        method: "POST",
        path: "/api/v1/events",
        expected: 200,
        headers: { authorization: `Bearer ${profile.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          event_name: "purchase",
          idempotency_key: `${runId}-${n}`,
          occurred_at: new Date(Date.now() - (n % 86_400) * 1000).toISOString(),
          properties: { value: (n % 500) + 0.99, currency: "USD" },
          user_traits: { external_id: `cust-${(n * 7919) % 2000}` },
          action_source: "website",
          click_ids: { gclid: `gclid-${n.toString(36)}` }
        })
      }
    case "touch":
      return { method: "POST", path: "/t/collect", expected: 204, ...pageView(profile.trackingKey, runId, n) }
    case "overview":
      return { method: "GET", path: "/api/v1/overview?days=30", expected: 200, headers: { authorization: `Bearer ${profile.key}` } }
    case "experiment":
      return { method: "GET", path: `/api/v1/experiments/${profile.experimentId}`, expected: 200, headers: { authorization: `Bearer ${profile.key}` } }
  }
}

/** The load balancer: round robin over the runners that are up. */
const balancer = (runners: ReadonlyArray<Runner>) => {
  let next = 0
  return (): Runner | undefined => {
    for (let i = 0; i < runners.length; i++) {
      const runner = runners[(next + i) % runners.length]!
      if (runner.up) {
        next = (next + i + 1) % runners.length
        return runner
      }
    }
    return undefined
  }
}

/** Probes every runner's `/readyz` every 250 ms, as a load balancer's health check; returns its stop. */
const healthChecks = (runners: ReadonlyArray<Runner>) => {
  let running = true
  const loop = async () => {
    while (running) {
      await Promise.all(runners.map(async (runner) => {
        if (runner.process.child.exitCode !== null || runner.process.child.signalCode !== null) {
          runner.up = false
          return
        }
        runner.up = (await status(runner.port, "/readyz")).status === 200
      }))
      await sleep(250)
    }
  }
  const done = loop()
  return async () => {
    running = false
    await done
  }
}

const makeSender = (runners: ReadonlyArray<Runner>, profiles: ReadonlyArray<Profile>, runId: string) => {
  const pick = balancer(runners)
  let touchAddress = 0
  /** Sends request n; `dueAt` is when it was due (open loop) or sent (closed loop). */
  return (n: number, dueAt: number, record: Recorder): Promise<void> => {
    const kind = MIX[n % MIX.length]!
    const profile = profiles[Math.floor(n / MIX.length) % profiles.length]!
    const spec = bodyFor(kind, n, profile, runId)
    const runner = pick()
    if (runner === undefined) {
      record({ kind, ok: false, ms: 0, at: performance.now(), failure: "no runner up" })
      // Resolved after a pause, not at once: a closed loop would otherwise spin on microtasks and
      // starve the timers (the health checks that would find a runner up again, the phase's end).
      return sleep(50)
    }
    const agent = kind === "touch" ? runner.touchAgents[touchAddress++ % runner.touchAgents.length]! : runner.agent
    return new Promise((resolve) => {
      let settled = false
      const finish = (ok: boolean, failure?: string) => {
        if (settled) return
        settled = true
        const at = performance.now()
        record({ kind, ok, ms: at - dueAt, at, ...(failure === undefined ? {} : { failure }) })
        resolve()
      }
      const req = httpRequest({
        host: HOST,
        port: runner.port,
        method: spec.method,
        path: spec.path,
        agent,
        headers: { ...spec.headers, ...(spec.body === undefined ? {} : { "content-length": Buffer.byteLength(spec.body) }) }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const ok = res.statusCode === spec.expected
          finish(ok, ok ? undefined : `${res.statusCode} ${Buffer.concat(chunks).toString("utf8").slice(0, 160)}`)
        })
        res.on("error", () => finish(false, "response aborted"))
      })
      req.setTimeout(30_000, () => req.destroy(new Error("timeout")))
      req.on("error", (error: NodeJS.ErrnoException) => {
        // A refused or reset connection: the balancer stops sending there until its probe says ready.
        if (error.code === "ECONNREFUSED" || error.code === "ECONNRESET" || error.code === "EPIPE") runner.up = false
        finish(false, error.code ?? error.message)
      })
      req.end(spec.body)
    })
  }
}

type Sender = ReturnType<typeof makeSender>

/** Open loop: `rate` requests/s whatever the answers, until `stop()`; answers the requests' promises when stopped. */
const openLoop = (send: Sender, rate: number, record: Recorder, firstN: number) => {
  const started = performance.now()
  let sent = 0
  const pending = new Set<Promise<void>>()
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    while (sent < due) {
      const dueAt = started + (sent * 1000) / rate
      if (pending.size >= MAX_IN_FLIGHT) {
        // The runners fall behind: a request not sent is an error, not a backlog that outlives the phase.
        record({ kind: MIX[(firstN + sent) % MIX.length]!, ok: false, ms: 0, at: performance.now(), failure: `not sent: ${MAX_IN_FLIGHT} in flight` })
        sent++
        continue
      }
      const p = send(firstN + sent, dueAt, record)
      pending.add(p)
      void p.then(() => pending.delete(p))
      sent++
    }
  }, 5)
  return {
    sent: () => sent,
    stop: async () => {
      clearInterval(timer)
      await Promise.all(pending)
      return firstN + sent
    }
  }
}

/** Closed loop: `concurrency` requests always in flight until `stop()`. */
const closedLoop = (send: Sender, concurrency: number, record: Recorder, firstN: number) => {
  let n = firstN
  let running = true
  const workers = Array.from({ length: concurrency }, async () => {
    while (running) {
      const at = performance.now()
      await send(n++, at, record)
    }
  })
  return {
    stop: async () => {
      running = false
      await Promise.all(workers)
      return n
    }
  }
}

interface KindFigures {
  readonly ok: number
  readonly errors: number
  readonly p50: number
  readonly p99: number
  readonly failures: Map<string, number>
}

const summarise = (samples: ReadonlyArray<Sample>) => {
  const byKind = new Map<Kind, KindFigures>()
  for (const kind of KINDS) {
    const mine = samples.filter((s) => s.kind === kind)
    const latencies = Float64Array.from(mine.filter((s) => s.ok).map((s) => s.ms)).sort()
    const failures = new Map<string, number>()
    for (const s of mine) if (!s.ok) failures.set(s.failure ?? "?", (failures.get(s.failure ?? "?") ?? 0) + 1)
    byKind.set(kind, {
      ok: latencies.length,
      errors: mine.length - latencies.length,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      failures
    })
  }
  const all = Float64Array.from(samples.filter((s) => s.ok).map((s) => s.ms)).sort()
  return { byKind, ok: all.length, errors: samples.length - all.length, p50: percentile(all, 0.5), p99: percentile(all, 0.99) }
}

interface Measured {
  readonly config: string
  readonly phase: string
  readonly seconds: number
  readonly summary: ReturnType<typeof summarise>
  /** Per request: runners, this database's backends, this load generator (ms). */
  readonly cpu: { readonly runners: number; readonly database: number; readonly client: number }
  /** The runners' CPU per request split into user and system time, and their main threads' context switches per request. */
  readonly sched: { readonly userMs: number; readonly systemMs: number; readonly involuntary: number; readonly voluntary: number }
  readonly machineBusy: number
  readonly load: string
}

/** The runners' CPU time so far (ms); a runner gone meanwhile counts what was read of it before. */
const runnersCpuMs = (runners: ReadonlyArray<Runner>) => runners.reduce((sum, r) => sum + (processCpuMs(r.process.child.pid) ?? 0), 0)

/** CPU per second of the runners and of this database's backends over BENCH_IDLE_S with no load. */
const idleCpu = async (runners: ReadonlyArray<Runner>, databaseUrl: string) => {
  const before = { runners: runnersCpuMs(runners), database: await backendCpu(databaseUrl), at: performance.now() }
  await sleep(IDLE_S * 1000)
  const after = { runners: runnersCpuMs(runners), database: await backendCpu(databaseUrl), at: performance.now() }
  const seconds = (after.at - before.at) / 1000
  return { runners: (after.runners - before.runners) / seconds, database: cpuDelta(before.database, after.database) / seconds }
}

/** Runs the load for warm-up + duration and measures the duration's window. */
const measure = async (
  config: string,
  phase: "fixed" | "saturation",
  runners: ReadonlyArray<Runner>,
  send: Sender,
  databaseUrl: string,
  firstN: number
): Promise<{ measured: Measured; nextN: number }> => {
  const samples: Array<Sample> = []
  let measuring = false
  let windowStart = 0
  let windowEnd = Number.POSITIVE_INFINITY
  // A request counts when it completes inside the window (both loops; in the open loop it was also due there or waited).
  const record: Recorder = (s) => {
    if (measuring && s.at >= windowStart && s.at <= windowEnd) samples.push(s)
  }
  const loop = phase === "fixed" ? openLoop(send, RATE, record, firstN) : closedLoop(send, CONCURRENCY, record, firstN)
  await sleep(WARMUP_S * 1000)
  const runnerSched = () =>
    schedOf(runners.flatMap((r) => r.process.child.pid === undefined ? [] : [r.process.child.pid])) ??
      { userMs: Number.NaN, systemMs: Number.NaN, involuntary: Number.NaN, voluntary: Number.NaN }
  const schedBefore = runnerSched()
  const before = { runners: runnersCpuMs(runners), database: await backendCpu(databaseUrl), client: process.cpuUsage(), machine: machineCpuMs() }
  measuring = true
  windowStart = performance.now()
  await sleep(DURATION_S * 1000)
  windowEnd = performance.now()
  const after = { runners: runnersCpuMs(runners), database: await backendCpu(databaseUrl), client: process.cpuUsage(before.client), machine: machineCpuMs() }
  const schedAfter = runnerSched()
  const load = loadAverage()
  const nextN = await loop.stop()
  measuring = false
  const seconds = (windowEnd - windowStart) / 1000
  const summary = summarise(samples)
  const per = (ms: number) => (summary.ok + summary.errors === 0 ? Number.NaN : ms / (summary.ok + summary.errors))
  const machineBusy = before.machine !== undefined && after.machine !== undefined
    ? (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total)
    : Number.NaN
  return {
    measured: {
      config,
      phase,
      seconds,
      summary,
      cpu: {
        runners: per(after.runners - before.runners),
        database: per(cpuDelta(before.database, after.database)),
        client: per((after.client.user + after.client.system) / 1000)
      },
      sched: {
        userMs: per(schedAfter.userMs - schedBefore.userMs),
        systemMs: per(schedAfter.systemMs - schedBefore.systemMs),
        involuntary: per(schedAfter.involuntary - schedBefore.involuntary),
        voluntary: per(schedAfter.voluntary - schedBefore.voluntary)
      },
      machineBusy,
      load
    },
    nextN
  }
}

// ---------------------------------------------------------------------------------------------
// Moves: one runner stopped and started again under the fixed load.

interface MoveReport {
  readonly signal: "SIGTERM" | "SIGKILL"
  readonly lines: ReadonlyArray<string>
  readonly errors: number
}

const move = async (
  signal: "SIGTERM" | "SIGKILL",
  runners: Array<Runner>,
  send: Sender,
  databaseUrl: string,
  firstN: number
): Promise<{ report: MoveReport; nextN: number }> => {
  const victim = runners[runners.length - 1]!
  const survivors = runners.filter((r) => r !== victim)
  const samples: Array<Sample> = []
  const record: Recorder = (s) => samples.push(s)
  const lines: Array<string> = []
  const load = openLoop(send, RATE, record, firstN)
  await sleep(3_000)
  const before = await Promise.all(runners.map(shardsOf))
  const t0 = performance.now()
  const since = (t: number) => (t - t0) / 1000
  const exited = new Promise<void>((resolve) => victim.process.child.once("exit", () => resolve()))
  victim.process.child.kill(signal)
  if (signal === "SIGKILL") victim.up = false
  // Ownership as the live runners and PostgreSQL see it, every 250 ms, until the survivors hold every shard.
  let exitedAt = Number.NaN
  void exited.then(() => {
    exitedAt = performance.now()
  })
  let allHeldAt = Number.NaN
  let survivorShards: Array<number | undefined> = []
  const timeline: Array<string> = []
  while (performance.now() - t0 < 60_000) {
    survivorShards = await Promise.all(survivors.map(shardsOf))
    const locks = await locksHeld(databaseUrl)
    const sum = survivorShards.reduce<number>((a, b) => a + (b ?? 0), 0)
    timeline.push(`+${fmt(since(performance.now()), 2)} s ${survivorShards.join("/")} locks ${locks}`)
    if (sum === TOTAL_SHARDS && !Number.isNaN(exitedAt)) {
      allHeldAt = performance.now()
      break
    }
    await sleep(250)
  }
  await exited
  const downUntil = t0 + DOWN_S * 1000
  if (performance.now() < downUntil) await sleep(downUntil - performance.now())
  // Restart on the same ports and data directory, as a StatefulSet pod comes back under its address.
  const restartAt = performance.now()
  victim.process = spawnRunner(victim, databaseUrl)
  await waitForReady(victim, databaseUrl)
  const readyAt = performance.now()
  let settledAt = Number.NaN
  let after: Array<number | undefined> = []
  let stable = 0
  while (performance.now() - readyAt < 60_000) {
    after = await Promise.all(runners.map(shardsOf))
    const sum = after.reduce<number>((a, b) => a + (b ?? 0), 0)
    // Settled: every shard owned, the restarted runner back at its share, the same twice in a row.
    if (sum === TOTAL_SHARDS && (after[runners.length - 1] ?? 0) >= (before[runners.length - 1] ?? 1)) {
      if (++stable >= 2) {
        settledAt = performance.now()
        break
      }
    } else stable = 0
    await sleep(250)
  }
  await sleep(3_000)
  const nextN = await load.stop()
  const end = performance.now()

  const during = samples.filter((s) => s.at >= t0)
  const summary = summarise(during)
  const gained = survivors.map((r, i) => (survivorShards[i] ?? 0) - (before[i] ?? 0))
  lines.push(
    `${signal}: runner ${victim.index} owned ${before[runners.length - 1]} of ${TOTAL_SHARDS} shards (all: ${before.join("/")}); ` +
      `process exited after ${fmt(since(exitedAt), 2)} s`
  )
  lines.push(
    `  moved out: survivors took ${gained.join(" + ")} = ${gained.reduce((a, b) => a + b, 0)} shards; every shard owned again ` +
      `${Number.isNaN(allHeldAt) ? "NOT within 60 s" : `${fmt(since(allHeldAt), 2)} s after the ${signal}`}`
  )
  lines.push(
    `  restart (after ${DOWN_S} s down): /readyz 200 after ${fmt((readyAt - restartAt) / 1000, 1)} s; shards back ${after.join("/")}, ` +
      `${after[runners.length - 1]} moved back, settled ${Number.isNaN(settledAt) ? "NOT within 60 s" : `${fmt((settledAt - readyAt) / 1000, 2)} s after ready`}`
  )
  const kinds = KINDS.map((k) => {
    const f = summary.byKind.get(k)!
    return `${k} ${f.ok} ok / ${f.errors} err, p99 ${fmt(f.p99, 0)} ms`
  })
  lines.push(`  from the ${signal} to the end (${fmt((end - t0) / 1000, 1)} s, ${RATE}/s offered): ${kinds.join("; ")}`)
  const failures = new Map<string, number>()
  for (const s of during) if (!s.ok) failures.set(`${s.kind}: ${s.failure}`, (failures.get(`${s.kind}: ${s.failure}`) ?? 0) + 1)
  for (const [failure, count] of [...failures].sort((a, b) => b[1] - a[1]).slice(0, 8)) lines.push(`    ${count} x ${failure}`)
  // Per second from the stop: completions, errors, slowest request; experiment reads apart (the entity path).
  const seconds = Math.ceil((end - t0) / 1000)
  const perSecond: Array<string> = []
  for (let s = 0; s < seconds; s++) {
    const inSecond = during.filter((x) => x.at >= t0 + s * 1000 && x.at < t0 + (s + 1) * 1000)
    const errors = inSecond.filter((x) => !x.ok).length
    const entity = inSecond.filter((x) => x.kind === "experiment")
    const slowest = inSecond.reduce((m, x) => Math.max(m, x.ms), 0)
    const entitySlowest = entity.reduce((m, x) => Math.max(m, x.ms), 0)
    perSecond.push(`${s}:${inSecond.length - errors}/${errors}/${fmt(slowest)}|${fmt(entitySlowest)}`)
  }
  lines.push(`  per second from the ${signal} (ok/errors/slowest ms|slowest experiment read ms):`)
  for (let i = 0; i < perSecond.length; i += 8) lines.push(`    ${perSecond.slice(i, i + 8).join("  ")}`)
  const lastBad = during.filter((x) => !x.ok || (x.kind === "experiment" && x.ms > 1_000)).reduce((m, x) => Math.max(m, x.at), Number.NEGATIVE_INFINITY)
  lines.push(
    `  last failed request or experiment read slower than 1 s: ${lastBad === Number.NEGATIVE_INFINITY ? "none" : `+${fmt(since(lastBad), 2)} s`}`
  )
  lines.push(`  survivors' shards / advisory locks held, every 250 ms: ${timeline.slice(0, 40).join(", ")}`)
  return { report: { signal, lines, errors: summary.errors }, nextN }
}

// ---------------------------------------------------------------------------------------------
// A configuration: N runners, fixed then saturation, then the moves (N > 1).

const runConfiguration = async (count: number, adminUrl: string, databaseUrl: string) => {
  await recreateDatabase(adminUrl)
  const runners: Array<Runner> = []
  const dirs: Array<string> = []
  try {
    const slots: Array<Slot> = []
    for (let i = 0; i < count; i++) {
      const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-cluster-"))
      dirs.push(dataDir)
      slots.push({ index: i + 1, port: await freePort(), runnerPort: await freePort(), dataDir })
    }
    const t0 = performance.now()
    // The first migrates the fresh database; the others join once it serves.
    runners.push(await startRunner(slots[0]!, databaseUrl))
    runners.push(...await Promise.all(slots.slice(1).map((slot) => startRunner(slot, databaseUrl))))
    await waitUntil("the shards to be split over every runner", 120_000, async () => {
      const shards = await Promise.all(runners.map(shardsOf))
      return shards.every((s) => (s ?? 0) > 0) && shards.reduce<number>((a, b) => a + (b ?? 0), 0) === TOTAL_SHARDS
    }, runners)
    const shards = await Promise.all(runners.map(shardsOf))
    console.log(`\n${count} runner${count === 1 ? "" : "s"}: serving in ${fmt((performance.now() - t0) / 1000, 1)} s, shards ${shards.join("/")}, load ${loadAverage()}`)

    const profiles = await seed(databaseUrl)
    for (const [i, profile] of profiles.entries()) {
      const created = await fetch(`http://${HOST}:${runners[i % runners.length]!.port}/api/v1/experiments`, {
        method: "POST",
        headers: { authorization: `Bearer ${profile.key}`, "content-type": "application/json", "idempotency-key": `bench-${i}` },
        body: JSON.stringify({
          name: "bench holdout",
          kind: "audience_holdout",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10), end: new Date(Date.now() + 35 * 86_400_000).toISOString().slice(0, 10) },
          holdout_fraction: 0.2
        })
      })
      const body = await created.text()
      if (created.status !== 201) throw new Error(`creating an experiment: ${created.status} ${body}`)
      profile.experimentId = (JSON.parse(body) as { data: { id: string } }).data.id
    }

    const stopChecks = healthChecks(runners)
    // No request at all: each runner's own work (queue polls, cluster heartbeats and lock refreshes).
    const idle = await idleCpu(runners, databaseUrl)
    console.log(`  idle ${IDLE_S} s: runners ${fmt(idle.runners, 1)} ms/s of CPU (${fmt(idle.runners / count, 1)} each), their PostgreSQL backends ${fmt(idle.database, 1)} ms/s`)
    const send = makeSender(runners, profiles, `${Date.now().toString(36)}-${count}`)
    let n = 0
    const results: Array<Measured> = []
    for (const phase of ["fixed", "saturation"] as const) {
      process.stdout.write(`  ${phase} ...`)
      const { measured, nextN } = await measure(`${count} runner${count === 1 ? "" : "s"}`, phase, runners, send, databaseUrl, n)
      n = nextN
      results.push(measured)
      const failures = new Map<string, number>()
      for (const f of measured.summary.byKind.values()) for (const [why, count] of f.failures) failures.set(why, (failures.get(why) ?? 0) + count)
      const top = [...failures].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([why, count]) => `${count} x ${why.slice(0, 80)}`)
      console.log(` ${fmt(measured.summary.ok / measured.seconds)} ok/s, ${measured.summary.errors} errors${top.length > 0 ? ` (${top.join("; ")})` : ""}, load ${measured.load}`)
    }
    const moves: Array<MoveReport> = []
    if (count > 1) {
      for (const signal of MOVES) {
        process.stdout.write(`  ${signal} one runner ...`)
        const { report, nextN } = await move(signal, runners, send, databaseUrl, n)
        n = nextN
        moves.push(report)
        console.log(` ${report.errors} errors, load ${loadAverage()}`)
      }
    }
    await stopChecks()
    const rows = await written(databaseUrl)
    return { results, moves, rows, acknowledged: n, idle }
  } finally {
    await Promise.all(runners.map((r) => stopProcess(r.process.child)))
    for (const r of runners) {
      r.agent.destroy()
      for (const a of r.touchAgents) a.destroy()
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  }
}

const printTable = (all: ReadonlyArray<Measured>) => {
  console.log(
    "| runners | phase | kind | ok/s | p50 ms | p99 ms | errors | CPU ms/request: runners / PostgreSQL / client | runners: user / system ms, switches involuntary / voluntary, per request | machine busy | load (1/5/15 min) |"
  )
  console.log("|---|---|---|---:|---:|---:|---:|---|---|---:|---|")
  for (const m of all) {
    const cpu = `${fmt(m.cpu.runners, 2)} / ${fmt(m.cpu.database, 2)} / ${fmt(m.cpu.client, 2)}`
    const sched = `${fmt(m.sched.userMs, 2)} / ${fmt(m.sched.systemMs, 2)}, ${fmt(m.sched.involuntary, 2)} / ${fmt(m.sched.voluntary, 2)}`
    console.log(
      `| ${m.config} | ${m.phase} | all | ${fmt(m.summary.ok / m.seconds)} | ${fmt(m.summary.p50, 1)} | ${fmt(m.summary.p99, 1)} | ${m.summary.errors} | ` +
        `${cpu} | ${sched} | ${fmt(m.machineBusy * 100)} % | ${m.load} |`
    )
    for (const kind of KINDS) {
      const f = m.summary.byKind.get(kind)!
      if (f.ok + f.errors === 0) continue
      console.log(`| | | ${kind} | ${fmt(f.ok / m.seconds)} | ${fmt(f.p50, 1)} | ${fmt(f.p99, 1)} | ${f.errors} | | | | |`)
    }
  }
}

const main = async () => {
  const adminUrl = process.env["DATABASE_URL"]
  if (adminUrl === undefined) {
    console.log(`bench:cluster needs DATABASE_URL (a PostgreSQL whose user may create and drop ${DB_NAME}); nothing measured`)
    process.exitCode = 1
    return
  }
  const databaseUrl = withUrl(adminUrl, DB_NAME)
  console.log(
    `bench:cluster — node ${process.versions.node}; ${PROFILES} profiles; mix ${MIX_NAME} of ${MIX.length}; ` +
      `fixed ${RATE}/s open loop, saturation ${CONCURRENCY} in flight; ${WARMUP_S} s warm-up + ${DURATION_S} s each; ` +
      `database ${DB_NAME} (fresh per configuration); load at start ${loadAverage()}`
  )
  const all: Array<Measured> = []
  const moves: Array<MoveReport> = []
  const idle: Array<string> = []
  let ok = true
  try {
    for (const count of RUNNER_COUNTS) {
      const result = await runConfiguration(count, adminUrl, databaseUrl)
      all.push(...result.results)
      moves.push(...result.moves)
      idle.push(`${count}: runners ${fmt(result.idle.runners, 1)} ms/s, PostgreSQL ${fmt(result.idle.database, 1)} ms/s`)
      printTable(result.results)
      for (const m of result.moves) for (const line of m.lines) console.log(line)
      // Every acknowledged write is stored (the warm-ups' included, so at least as many rows as measured 2xx).
      const acknowledged = (phase: Measured) => ({ events: phase.summary.byKind.get("outcome")!.ok, touches: phase.summary.byKind.get("touch")!.ok })
      const measuredWrites = result.results.map(acknowledged).reduce((a, b) => ({ events: a.events + b.events, touches: a.touches + b.touches }))
      console.log(`  rows: ${result.rows.events} outcome events (${measuredWrites.events} acknowledged while measured), ${result.rows.touches} touches (${measuredWrites.touches})`)
      if (result.rows.events < measuredWrites.events || result.rows.touches < measuredWrites.touches) {
        console.log("  FEWER ROWS THAN ACKNOWLEDGED WRITES")
        ok = false
      }
    }
  } finally {
    await dropDatabase(adminUrl).catch((error: unknown) => console.error(`dropping ${DB_NAME}: ${String(error)}`))
  }

  console.log("")
  printTable(all)
  for (const m of all) {
    for (const kind of KINDS) {
      for (const [failure, count] of m.summary.byKind.get(kind)!.failures) console.log(`${m.config} ${m.phase} ${kind}: ${count} x ${failure}`)
    }
  }
  const find = (config: string, phase: string) => all.find((m) => m.config === config && m.phase === phase)
  const one = { fixed: find("1 runner", "fixed"), saturation: find("1 runner", "saturation") }
  const three = { fixed: find("3 runners", "fixed"), saturation: find("3 runners", "saturation") }
  if (one.saturation !== undefined && three.saturation !== undefined) {
    const t1 = one.saturation.summary.ok / one.saturation.seconds
    const t3 = three.saturation.summary.ok / three.saturation.seconds
    const overhead = 1 - t3 / t1
    console.log("")
    console.log(
      `overhead of 3 runners against 1, saturation throughput: ${fmt(overhead * 100, 1)} % (${fmt(t3)} against ${fmt(t1)} ok/s; goal <= 15 %: ${overhead <= 0.15 ? "met" : "NOT met"})`
    )
  }
  if (one.fixed !== undefined && three.fixed !== undefined) {
    const total = (m: Measured) => m.cpu.runners + m.cpu.database
    console.log(
      `at ${RATE}/s offered: CPU per request (runners + PostgreSQL) 3 / 1 = ${fmt(total(three.fixed) / total(one.fixed), 2)}x ` +
        `(${fmt(total(three.fixed), 2)} against ${fmt(total(one.fixed), 2)} ms); p99 ${fmt(three.fixed.summary.p99, 1)} against ${fmt(one.fixed.summary.p99, 1)} ms`
    )
    for (const kind of KINDS) {
      const a = three.fixed.summary.byKind.get(kind)!
      const b = one.fixed.summary.byKind.get(kind)!
      console.log(`  ${kind}: p50 ${fmt(a.p50, 1)} against ${fmt(b.p50, 1)} ms, p99 ${fmt(a.p99, 1)} against ${fmt(b.p99, 1)} ms`)
    }
  }
  for (const m of moves) {
    console.log("")
    for (const line of m.lines) console.log(line)
  }
  console.log(`\nidle CPU (no requests), by runner count: ${idle.join("; ")}`)
  console.log(`load at end ${loadAverage()}`)
  const fixedErrors = all.filter((m) => m.phase === "fixed").reduce((sum, m) => sum + m.summary.errors, 0)
  if (fixedErrors > 0) ok = false
  process.exitCode = ok ? 0 : 1
}

await main()
