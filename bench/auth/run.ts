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
 * Besides req/s, each row shows the service's CPU time per request while measuring (read from
 * /proc on Linux): other work on the machine moves throughput a lot more than it moves that.
 *
 * The two paths take turns on the same keep-alive connections, one slot each (A B B A ..., 1 s
 * slots by default), and each path's slots are pooled: the machine's speed swings over seconds
 * (other tenants of the host; a 5 s round of one path has run at 1.5x the next round's rate), and
 * taking turns this often lands a swing on both paths alike. The bench also prints a 95 % interval
 * for the pooled ratio, by bootstrap over the slot pairs.
 *
 * Settings (env): BENCH_CONNECTIONS (50), BENCH_DURATION_S (60: measured seconds per path),
 * BENCH_SLOT_MS (1000), BENCH_WARMUP_S (6, alternating like the slots),
 * BENCH_CPU_PROF (a directory: the service runs with `--cpu-prof`; the bench prints where the
 * profile is and, split by the two paths' measuring windows, the functions the authenticated request
 * spends its extra time in).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fmt, freePort, HOST, interleavedLoad, intFromEnv, percentile, startProcess, stopProcess, useSecretsKey, waitFor } from "../support.ts"

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

interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  }>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

interface ProfiledRun {
  readonly label: string
  readonly requests: number
  /** The measuring windows of its rounds. */
  readonly windows: ReadonlyArray<{ readonly fromUs: number; readonly toUs: number }>
}

interface Row extends ProfiledRun {
  readonly path: string
  readonly rps: number
  /** The service's CPU time per request while measuring; undefined where /proc cannot be read. */
  readonly cpuMicros: number | undefined
  readonly p50: number
  readonly p99: number
  readonly errors: number
}

/**
 * The newest `.cpuprofile` in `dir`, split by the runs' measuring windows: per function, its
 * self time per request in each run, the functions the second run spends most extra time in
 * first. Sampled time, not CPU time: it also counts time the process waited for a core.
 */
const summariseProfile = (dir: string, runs: ReadonlyArray<ProfiledRun>, top = 30) => {
  const newest = readdirSync(dir)
    .filter((name) => name.endsWith(".cpuprofile"))
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
  if (newest === undefined) return console.log(`no .cpuprofile in ${dir}`)
  const profile = JSON.parse(readFileSync(newest, "utf8")) as CpuProfile
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const prefix = `file://${resolve(import.meta.dirname, "../..")}/`
  const perRun = runs.map(() => new Map<string, number>())
  let at = profile.startTime
  let placed = 0
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0
    const run = runs.findIndex((r) => r.windows.some((window) => at >= window.fromUs && at < window.toUs))
    const frame = frames.get(id)
    if (run < 0 || frame === undefined || frame.functionName === "(idle)") return
    const where = frame.url.replace(prefix, "")
    const name = `${frame.functionName || "(anonymous)"} ${where}${where === "" ? "" : `:${frame.lineNumber + 1}`}`
    const self = perRun[run]!
    self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
    placed++
  })
  console.log("")
  console.log(`CPU profile: ${newest} (open in Chrome DevTools > Performance, or speedscope)`)
  if (placed === 0 || runs.length !== 2) return console.log("(no samples inside the measuring windows: open the profile itself)")
  const [a, b] = runs as readonly [ProfiledRun, ProfiledRun]
  const [selfA, selfB] = perRun as [Map<string, number>, Map<string, number>]
  const total = (self: Map<string, number>, requests: number) => [...self.values()].reduce((x, y) => x + y, 0) / requests
  console.log(`sampled µs per request while measuring: ${a.label} ${fmt(total(selfA, a.requests), 1)}, ${b.label} ${fmt(total(selfB, b.requests), 1)}`)
  console.log(`top ${top} functions by extra self time per request in the second run (µs/req: first, second, difference):`)
  const rows = [...new Set([...selfA.keys(), ...selfB.keys()])].map((name) => {
    const first = (selfA.get(name) ?? 0) / a.requests
    const second = (selfB.get(name) ?? 0) / b.requests
    return { name, first, second, extra: second - first }
  })
  for (const row of rows.sort((x, y) => y.extra - x.extra).slice(0, top)) {
    console.log(`  ${fmt(row.first, 2).padStart(6)} ${fmt(row.second, 2).padStart(6)} ${fmt(row.extra, 2).padStart(6)}  ${row.name}`)
  }
}

/**
 * How far the pooled ratio (sum of the second path's slot rates over the first's) can be trusted:
 * the 2.5th and 97.5th percentiles of that ratio over 2,000 resamplings of the slot pairs (each
 * pair one slot of each path, side by side in time).
 */
const pooledRatioInterval = (first: ReadonlyArray<number>, second: ReadonlyArray<number>): readonly [number, number] => {
  const pairs = Math.min(first.length, second.length)
  const ratios = new Float64Array(2000)
  for (let draw = 0; draw < ratios.length; draw++) {
    let a = 0
    let b = 0
    for (let i = 0; i < pairs; i++) {
      const pick = Math.floor(Math.random() * pairs)
      a += first[pick]!
      b += second[pick]!
    }
    ratios[draw] = b / a
  }
  ratios.sort()
  return [percentile(ratios, 0.025), percentile(ratios, 0.975)]
}

const main = async () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:auth needs DATABASE_URL (a PostgreSQL the bench may write to); nothing measured")
    process.exitCode = 1
    return
  }
  const connections = intFromEnv("BENCH_CONNECTIONS", 50, 500)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 60, 600)
  // At least the auth cache's lifetime, so the lifted allowance is in force when measuring starts.
  const warmupSeconds = Math.max(6, intFromEnv("BENCH_WARMUP_S", 6, 60))
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-auth-"))
  const profileDir = process.env["BENCH_CPU_PROF"]
  let profiled: ReadonlyArray<ProfiledRun> = []
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true })
  const service = startProcess(
    [...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${resolve(profileDir)}`]), "src/main/node.ts"],
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SVC_SECRETS_KEY: useSecretsKey(),
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
    const slotMs = intFromEnv("BENCH_SLOT_MS", 1000, 10_000)
    const slots = Math.max(2, Math.round((durationSeconds * 1000) / slotMs))
    console.log(
      `node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up, then ${slots} slots of ${slotMs} ms per path, interleaved (A B B A ...) on the same connections; 127.0.0.1 only`
    )
    const runs = [
      { label: "GET /healthz (no credential)", path: "/healthz", expectedStatus: 200 },
      {
        label: "GET /api/v1/me (API key, cache warm)",
        path: "/api/v1/me",
        expectedStatus: 200,
        headers: { authorization: `Bearer ${key}` }
      }
    ]
    // The paths take turns slot by slot on one set of connections: this machine's speed swings over
    // seconds (other tenants of the host), and a swing then lands on both paths alike.
    const measured = await interleavedLoad(port, runs, connections, warmupSeconds, slotMs / 1000, slots, service.child.pid)
    const [openSlots, authenticatedSlots] = measured.map((run) => run.slotRates)
    if (openSlots !== undefined && authenticatedSlots !== undefined) {
      const [low, high] = pooledRatioInterval(openSlots, authenticatedSlots)
      console.log(`  /api/v1/me over /healthz, 95 % interval over the slot pairs (bootstrap): ${fmt(low, 2)}-${fmt(high, 2)}x`)
    }
    const rows: Array<Row> = runs.map((run, index) => {
      const result = measured[index]!
      return {
        ...run,
        rps: result.requests / result.seconds,
        cpuMicros: result.serverCpuMs === undefined || result.requests === 0
          ? undefined
          : (result.serverCpuMs * 1000) / result.requests,
        p50: percentile(result.latenciesMs, 0.5),
        p99: percentile(result.latenciesMs, 0.99),
        errors: result.errors,
        requests: result.requests,
        windows: result.windows
      }
    })
    console.log("")
    console.log("| path | req/s | service CPU µs/req | p50 ms | p99 ms | errors |")
    console.log("|---|---:|---:|---:|---:|---:|")
    for (const row of rows) {
      const cpu = row.cpuMicros === undefined ? "n/a" : fmt(row.cpuMicros)
      console.log(`| ${row.label} | ${fmt(row.rps)} | ${cpu} | ${fmt(row.p50, 2)} | ${fmt(row.p99, 2)} | ${row.errors} |`)
    }
    const [open, authenticated] = rows
    if (open !== undefined && authenticated !== undefined) {
      const ratio = authenticated.rps / open.rps
      console.log("")
      console.log(`authenticated / unauthenticated throughput: ${fmt(ratio, 2)}x (authentication costs ${fmt((1 - ratio) * 100, 0)} %; goal < 20 %: ${ratio >= 0.8 ? "met" : "NOT met"})`)
      if (open.cpuMicros !== undefined && authenticated.cpuMicros !== undefined) {
        console.log(`service CPU per request, unauthenticated / authenticated: ${fmt(open.cpuMicros / authenticated.cpuMicros, 2)}x (less sensitive to other load on the machine)`)
      }
    }
    process.exitCode = rows.some((row) => row.errors > 0) ? 1 : 0
    profiled = rows
  } finally {
    await stopProcess(service.child)
    rmSync(dataDir, { recursive: true, force: true })
  }
  // The profile is written when the service exits.
  if (profileDir !== undefined) summariseProfile(profileDir, profiled)
}

await main()
