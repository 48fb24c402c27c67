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
 * The two paths run in alternating rounds (A B B A ...) and each path's rounds are pooled, so that
 * drift during the run (other work on the machine, the service's background jobs) lands on both.
 *
 * Settings (env): BENCH_CONNECTIONS (50), BENCH_DURATION_S (20: measured seconds per path, split
 * over the rounds), BENCH_ROUNDS (4), BENCH_WARMUP_S (6, before each path's first round; 1 s before the others),
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
import { fmt, freePort, HOST, intFromEnv, load, percentile, type RunResult, startProcess, stopProcess, waitFor } from "../support.ts"

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

const main = async () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:auth needs DATABASE_URL (a PostgreSQL the bench may write to); nothing measured")
    process.exitCode = 1
    return
  }
  const connections = intFromEnv("BENCH_CONNECTIONS", 50, 500)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 20, 240)
  // At least the auth cache's lifetime, so the lifted allowance is in force when measuring starts.
  const warmupSeconds = Math.max(6, intFromEnv("BENCH_WARMUP_S", 6, 60))
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-auth-"))
  const profileDir = process.env["BENCH_CPU_PROF"]
  let profiled: ReadonlyArray<ProfiledRun> = []
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true })
  const service = startProcess(
    [...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${resolve(profileDir)}`]), "src/platform/main.node.ts"],
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
    const rounds = intFromEnv("BENCH_ROUNDS", 4, 20)
    const roundSeconds = Math.max(1, Math.round(durationSeconds / rounds * 10) / 10)
    console.log(
      `node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up, then ${rounds} rounds of ${roundSeconds} s per path (A B B A order, pooled); 127.0.0.1 only`
    )
    const runs = [
      { label: "GET /healthz (no credential)", path: "/healthz", headers: {} },
      { label: "GET /api/v1/me (API key, cache warm)", path: "/api/v1/me", headers: { authorization: `Bearer ${key}` } }
    ]
    // Rounds in A B B A order, pooled per path: drift on the machine (other work, the service's
    // background jobs, GC phases) then lands on both paths alike instead of on whichever ran second.
    const results = runs.map(() => [] as Array<RunResult>)
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0]
      const ratioOfRound: Array<number> = []
      for (const index of order) {
        const run = runs[index]!
        const warmup = results[index]!.length === 0 ? warmupSeconds : 1
        const result = await load(port, run.path, 200, connections, warmup, roundSeconds, run.headers, service.child.pid)
        results[index]!.push(result)
        ratioOfRound[index] = result.requests / result.seconds
      }
      console.log(
        `  round ${round + 1}: ${runs.map((run, i) => `${run.path} ${fmt(ratioOfRound[i]!)} req/s`).join(", ")}; ratio ${
          fmt(ratioOfRound[1]! / ratioOfRound[0]!, 2)
        }x`
      )
    }
    const rows: Array<Row> = runs.map((run, index) => {
      const of = results[index]!
      const requests = of.reduce((sum, r) => sum + r.requests, 0)
      const seconds = of.reduce((sum, r) => sum + r.seconds, 0)
      const cpuMs = of.every((r) => r.serverCpuMs !== undefined)
        ? of.reduce((sum, r) => sum + (r.serverCpuMs ?? 0), 0)
        : undefined
      const latencies = Float64Array.from(of.flatMap((r) => [...r.latenciesMs])).sort()
      return {
        ...run,
        rps: requests / seconds,
        cpuMicros: cpuMs === undefined || requests === 0 ? undefined : (cpuMs * 1000) / requests,
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        errors: of.reduce((sum, r) => sum + r.errors, 0),
        requests,
        windows: of.map((r) => r.window)
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
