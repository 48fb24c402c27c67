/**
 * What the benchmarks share: a minimal HTTP/1.1 keep-alive load generator over raw sockets (so
 * the client's own cost stays small next to the server's on a 2-core machine), and starting,
 * probing and stopping server processes. Traffic goes to 127.0.0.1 only.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, type Layer, Redacted, References, type Scope } from "effect"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { connect, createServer as createNetServer, type Socket } from "node:net"
import { resolve } from "node:path"
import { postgresOptions } from "../src/platform/database.ts"
import { keyFileContent } from "../src/platform/secret-box.ts"

export const HOST = "127.0.0.1"

export const intFromEnv = (name: string, fallback: number, max: number) => {
  const value = Number(process.env[name] ?? fallback)
  return Number.isInteger(value) && value > 0 ? Math.min(value, max) : fallback
}

// ---------------------------------------------------------------------------------------------
// Load generator: a minimal HTTP/1.1 keep-alive client over raw sockets, so that the client's
// own cost stays small next to the servers' on a 2-core machine.

export interface RunResult {
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly latenciesMs: Float64Array
  /**
   * The measuring window in µs of the monotonic clock (`process.hrtime`), the clock V8 stamps
   * `.cpuprofile` samples with on Linux: a server profile can be split by run.
   */
  readonly window: { readonly fromUs: number; readonly toUs: number }
  /** CPU time (user + system) the server process used while measuring, when it could be read. */
  readonly serverCpuMs?: number
  /** The server processes' user and system time and their main threads' context switches while measuring. */
  readonly serverSched?: SchedDelta
  /** CPU time every `postgres` process on this machine used while measuring (Linux). */
  readonly databaseCpuMs?: number
  /** CPU time this load generator used while measuring. */
  readonly clientCpuMs: number
  /** Share of the machine's CPU time (all cores) that was busy while measuring (Linux). */
  readonly machineBusy?: number
}

const clockTicksPerSecond = (() => {
  const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" })
  const ticks = Number(out.stdout?.trim())
  return Number.isInteger(ticks) && ticks > 0 ? ticks : 100
})()

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux); undefined
 * elsewhere. Unlike throughput it barely moves when other work loads the machine, so the
 * benches report it per request next to req/s.
 */
export const processCpuMs = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? (ticks * 1000) / clockTicksPerSecond : undefined
  } catch {
    return undefined
  }
}

/**
 * A process's user and system CPU time (ms) and its main thread's context switches so far, from
 * /proc (Linux). Involuntary switches count how often the scheduler took the CPU away: on a machine
 * with more busy processes than cores, the sign of contention rather than of work.
 */
export const processSched = (pid: number | undefined) => {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const count = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? Number.NaN)
    return {
      userMs: (Number(fields[11]) * 1000) / clockTicksPerSecond,
      systemMs: (Number(fields[12]) * 1000) / clockTicksPerSecond,
      voluntary: count("voluntary_ctxt_switches"),
      involuntary: count("nonvoluntary_ctxt_switches")
    }
  } catch {
    return undefined
  }
}

export interface SchedDelta {
  readonly userMs: number
  readonly systemMs: number
  readonly voluntary: number
  readonly involuntary: number
}

/** `processSched` summed over processes (undefined when one cannot be read). */
export const schedOf = (pids: ReadonlyArray<number>): SchedDelta | undefined => {
  const sum = { userMs: 0, systemMs: 0, voluntary: 0, involuntary: 0 }
  for (const pid of pids) {
    const one = processSched(pid)
    if (one === undefined) return undefined
    sum.userMs += one.userMs
    sum.systemMs += one.systemMs
    sum.voluntary += one.voluntary
    sum.involuntary += one.involuntary
  }
  return sum
}

const schedDelta = (before: SchedDelta | undefined, after: SchedDelta | undefined): SchedDelta | undefined =>
  before === undefined || after === undefined ? undefined : {
    userMs: after.userMs - before.userMs,
    systemMs: after.systemMs - before.systemMs,
    voluntary: after.voluntary - before.voluntary,
    involuntary: after.involuntary - before.involuntary
  }

/**
 * CPU time (ms) used so far by each process whose command name is `name`, by pid, from /proc; a
 * difference of two (`cpuSince`) leaves out processes that ended between them instead of going negative.
 */
export const commandCpuByPid = (name: string): ReadonlyMap<number, number> | undefined => {
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))
  } catch {
    return undefined
  }
  const byPid = new Map<number, number>()
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== name) continue
    } catch {
      continue // gone meanwhile
    }
    const ms = processCpuMs(Number(pid))
    if (ms !== undefined) byPid.set(Number(pid), ms)
  }
  return byPid
}

/** CPU time (ms) the processes of `after` used since `before` (a process started meanwhile counts whole). */
export const cpuSince = (before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number => {
  let total = 0
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0)
  return total
}

/** CPU time (ms) used so far by every process whose command name is `name` (e.g. `postgres`), from /proc. */
export const commandCpuMs = (name: string): number | undefined => {
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))
  } catch {
    return undefined
  }
  let total = 0
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== name) continue
    } catch {
      continue // gone meanwhile
    }
    total += processCpuMs(Number(pid)) ?? 0
  }
  return total
}

/** The machine's busy and total CPU time (ms, all cores) so far, from the first line of /proc/stat. */
export const machineCpuMs = (): { readonly busy: number; readonly total: number } | undefined => {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
    // user nice system idle iowait irq softirq steal (guest time is already inside user)
    const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0)
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
    return { busy: ((total - idle) * 1000) / clockTicksPerSecond, total: (total * 1000) / clockTicksPerSecond }
  } catch {
    return undefined
  }
}

const CRLFCRLF = Buffer.from("\r\n\r\n")

/**
 * One request of a run whose requests differ (e.g. a POST whose body changes each time): `n`
 * counts requests across all connections from 0. `headers` add to (or override) the run's.
 */
export interface LoadRequest {
  readonly method: string
  readonly body?: string | Buffer
  readonly headers?: Readonly<Record<string, string>>
}

export type RequestFor = (n: number) => LoadRequest

const headerLines = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")

/** The bytes of one request: a fixed GET when `requestFor` is absent, else built per request. */
const requestBytes = (
  port: number,
  path: string,
  headers: Readonly<Record<string, string>>,
  requestFor: RequestFor | undefined
): (() => Buffer) => {
  const fixed = `Host: ${HOST}:${port}\r\nConnection: keep-alive\r\n${headerLines(headers)}`
  if (requestFor === undefined) {
    const request = Buffer.from(`GET ${path} HTTP/1.1\r\n${fixed}\r\n`)
    return () => request
  }
  let n = 0
  return () => {
    const next = requestFor(n++)
    const body = next.body === undefined ? Buffer.alloc(0) : typeof next.body === "string" ? Buffer.from(next.body) : next.body
    const extra = next.headers === undefined ? "" : headerLines(next.headers)
    const head = `${next.method} ${path} HTTP/1.1\r\n${fixed}${extra}Content-Length: ${body.length}\r\n\r\n`
    return body.length === 0 ? Buffer.from(head) : Buffer.concat([Buffer.from(head, "latin1"), body])
  }
}

const connectionLoop = (
  port: number,
  nextRequest: () => Buffer,
  shouldStop: () => boolean,
  onResponse: (status: number, latencyMs: number) => void,
  onError: () => void
): Promise<void> =>
  new Promise((resolveLoop) => {
    let socket: Socket
    let buffered: Buffer = Buffer.alloc(0)
    let sentAt = 0n
    let finished = false

    const finish = () => {
      if (finished) return
      finished = true
      socket.destroy()
      resolveLoop()
    }
    const send = () => {
      if (shouldStop()) return finish()
      const request = nextRequest()
      sentAt = process.hrtime.bigint()
      socket.write(request)
    }
    const open = () => {
      buffered = Buffer.alloc(0)
      socket = connect({ host: HOST, port, noDelay: true })
      socket.setTimeout(10_000, () => socket.destroy(new Error("response timeout")))
      socket.on("connect", send)
      socket.on("data", onData)
      socket.on("error", () => {})
      socket.on("close", () => {
        if (finished) return
        onError()
        if (shouldStop()) return finish()
        // Reconnect after a short pause rather than spinning on a dead server.
        setTimeout(open, 50)
      })
    }
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
      for (;;) {
        const headerEnd = buffered.indexOf(CRLFCRLF)
        if (headerEnd < 0) return
        const head = buffered.toString("latin1", 0, headerEnd)
        const match = /\r\ncontent-length:\s*(\d+)/i.exec(head)
        const status = Number(head.slice(9, 12))
        // 204 and 304 carry no body (RFC 9110), so no content-length frames them.
        const bodyless = status === 204 || status === 304
        if (match?.[1] === undefined && !bodyless) {
          // Not framed by content-length: count it as an error and start over.
          onError()
          socket.destroy()
          return
        }
        const total = headerEnd + 4 + (bodyless ? 0 : Number(match?.[1] ?? 0))
        if (buffered.length < total) return
        buffered = buffered.subarray(total)
        onResponse(status, Number(process.hrtime.bigint() - sentAt) / 1e6)
        send()
        if (finished) return
      }
    }
    open()
  })

export const load = async (
  /** Several ports: connection i goes to port i mod n, as a Kubernetes Service balances connections. */
  port: number | ReadonlyArray<number>,
  path: string,
  expectedStatus: number,
  connections: number,
  warmupSeconds: number,
  durationSeconds: number,
  headers: Readonly<Record<string, string>> = {},
  /** Several: their CPU is summed. */
  serverPid?: number | ReadonlyArray<number>,
  /** Per-request method, body and headers (e.g. POSTs with a fresh body each); default a fixed GET. */
  requestFor?: RequestFor
): Promise<RunResult> => {
  const ports = typeof port === "number" ? [port] : port
  const pids = serverPid === undefined ? [] : typeof serverPid === "number" ? [serverPid] : serverPid
  // The servers' user and system time and context switches, read once at each end of the window.
  const serverSchedNow = () => (pids.length === 0 ? undefined : schedOf(pids))
  let measuring = false
  let stopped = false
  let requests = 0
  let errors = 0
  let latencies = new Float64Array(1 << 16)
  const onResponse = (status: number, latencyMs: number) => {
    if (!measuring) return
    if (status !== expectedStatus) {
      errors++
      return
    }
    if (requests === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[requests++] = latencyMs
  }
  const onError = () => {
    if (measuring) errors++
  }
  const nextRequest = requestBytes(ports[0]!, path, headers, requestFor)
  const loops = Array.from({ length: connections }, (_, i) => connectionLoop(ports[i % ports.length]!, nextRequest, () => stopped, onResponse, onError))
  await sleep(warmupSeconds * 1000)
  measuring = true
  const started = process.hrtime.bigint()
  const schedBefore = serverSchedNow()
  const databaseBefore = commandCpuMs("postgres")
  const machineBefore = machineCpuMs()
  const clientBefore = process.cpuUsage()
  await sleep(durationSeconds * 1000)
  measuring = false
  const serverSched = schedDelta(schedBefore, serverSchedNow())
  const client = process.cpuUsage(clientBefore)
  const databaseAfter = commandCpuMs("postgres")
  const machineAfter = machineCpuMs()
  const measured = {
    clientCpuMs: (client.user + client.system) / 1000,
    ...(serverSched === undefined ? {} : { serverSched }),
    ...(databaseBefore !== undefined && databaseAfter !== undefined ? { databaseCpuMs: databaseAfter - databaseBefore } : {}),
    ...(machineBefore !== undefined && machineAfter !== undefined && machineAfter.total > machineBefore.total
      ? { machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total) }
      : {})
  }
  const ended = process.hrtime.bigint()
  const seconds = Number(ended - started) / 1e9
  const window = { fromUs: Number(started / 1000n), toUs: Number(ended / 1000n) }
  stopped = true
  // Each connection stops after its in-flight response; bounded by the socket timeout.
  await Promise.race([Promise.all(loops), sleep(15_000)])
  const latenciesMs = latencies.slice(0, requests).sort()
  return serverSched !== undefined
    ? { requests, errors, seconds, latenciesMs, window, serverCpuMs: serverSched.userMs + serverSched.systemMs, ...measured }
    : { requests, errors, seconds, latenciesMs, window, ...measured }
}

/** One of the paths an interleaved run alternates between. */
export interface InterleavedPath {
  readonly path: string
  readonly expectedStatus: number
  readonly headers?: Readonly<Record<string, string>>
}

/** A path's share of an interleaved run: pooled over its slots, with each slot's window and rate. */
export interface InterleavedRun extends Omit<RunResult, "window"> {
  readonly windows: ReadonlyArray<{ readonly fromUs: number; readonly toUs: number }>
  /** Requests per second of each slot, in order: slot i of every path belongs to round i. */
  readonly slotRates: ReadonlyArray<number>
}

/**
 * Several paths on one set of keep-alive connections, switching path every `slotSeconds` in
 * A B B A order (so a trend lands on both alike), for `slots` slots per path after a warm-up that
 * alternates the same way. A machine whose speed swings over seconds (other tenants of the host)
 * moves both paths together instead of whichever ran during the swing.
 *
 * A request counts for the path it was sent for; the server's CPU time of a slot counts for the
 * slot's path. The up to `connections` requests still in flight when a slot ends finish in the
 * next one: with 1 s slots at thousands of requests per second that is about 1 % of a slot, the
 * same both ways.
 */
export const interleavedLoad = async (
  port: number,
  paths: ReadonlyArray<InterleavedPath>,
  connections: number,
  warmupSeconds: number,
  slotSeconds: number,
  slots: number,
  serverPid?: number
): Promise<ReadonlyArray<InterleavedRun>> => {
  const requestsOf = paths.map((p) => requestBytes(port, p.path, p.headers ?? {}, undefined)())
  const count = paths.map(() => 0)
  const errors = paths.map(() => 0)
  const latencies = paths.map(() => [] as Array<number>)
  const cpuMs = paths.map(() => 0)
  const clientMs = paths.map(() => 0)
  const seconds = paths.map(() => 0)
  const windows = paths.map(() => [] as Array<{ fromUs: number; toUs: number }>)
  const slotRates: Array<Array<number>> = paths.map(() => [])
  let current = 0
  let measuring = false
  let stopped = false
  const loops = Array.from({ length: connections }, () => {
    let sentFor = 0
    return connectionLoop(
      port,
      () => {
        sentFor = current
        return requestsOf[current]!
      },
      () => stopped,
      (status, latencyMs) => {
        if (!measuring) return
        if (status !== paths[sentFor]!.expectedStatus) errors[sentFor]!++
        else {
          count[sentFor]!++
          latencies[sentFor]!.push(latencyMs)
        }
      },
      () => {
        if (measuring) errors[sentFor]!++
      }
    )
  })
  // Rounds of one slot per path, forwards then backwards: A B, B A, A B, ...
  const order = (slot: number) => {
    const round = Math.floor(slot / paths.length)
    const within = slot % paths.length
    return round % 2 === 0 ? within : paths.length - 1 - within
  }
  const warmupSlots = Math.max(paths.length, Math.round(warmupSeconds / slotSeconds))
  for (let slot = 0; slot < warmupSlots; slot++) {
    current = order(slot)
    await sleep(slotSeconds * 1000)
  }
  for (let slot = 0; slot < slots * paths.length; slot++) {
    const index = order(slot)
    current = index
    const before = count[index]!
    const started = process.hrtime.bigint()
    const cpuBefore = processCpuMs(serverPid)
    const clientBefore = process.cpuUsage()
    measuring = true
    await sleep(slotSeconds * 1000)
    const cpuAfter = processCpuMs(serverPid)
    const client = process.cpuUsage(clientBefore)
    const ended = process.hrtime.bigint()
    const elapsed = Number(ended - started) / 1e9
    seconds[index]! += elapsed
    cpuMs[index]! += cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : Number.NaN
    clientMs[index]! += (client.user + client.system) / 1000
    windows[index]!.push({ fromUs: Number(started / 1000n), toUs: Number(ended / 1000n) })
    slotRates[index]!.push((count[index]! - before) / elapsed)
  }
  measuring = false
  stopped = true
  await Promise.race([Promise.all(loops), sleep(15_000)])
  return paths.map((_, i) => {
    const base = {
      requests: count[i]!,
      errors: errors[i]!,
      seconds: seconds[i]!,
      latenciesMs: Float64Array.from(latencies[i]!).sort(),
      windows: windows[i]!,
      slotRates: slotRates[i]!,
      clientCpuMs: clientMs[i]!
    }
    return Number.isNaN(cpuMs[i]!) ? base : { ...base, serverCpuMs: cpuMs[i]! }
  })
}

export const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN

// ---------------------------------------------------------------------------------------------
// Orchestration.

export const root = resolve(import.meta.dirname, "..")
const children = new Set<ChildProcess>()

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

export const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const server = createNetServer()
    server.once("error", reject)
    server.listen(0, HOST, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolvePort(port) : reject(new Error("no port assigned"))))
    })
  })

export const startProcess = (args: ReadonlyArray<string>, env: Record<string, string | undefined>, label: string) => {
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] })
  const output: Array<string> = []
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString("utf8"))
    if (output.length > 200) output.shift()
  }
  child.stdout?.on("data", keep)
  child.stderr?.on("data", keep)
  children.add(child)
  child.once("exit", () => children.delete(child))
  return { child, output: () => `--- ${label} output ---\n${output.join("").slice(-4_000)}` }
}

export const stopProcess = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
  await exited
  clearTimeout(timer)
}

process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL")
})
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill("SIGKILL")
    process.exit(130)
  })
}

export const waitFor = async (port: number, child: ChildProcess, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process exited with code ${child.exitCode}`)
    const ok = await fetch(`http://${HOST}:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      async (r) => {
        await r.arrayBuffer()
        return r.status === 200
      },
      () => false
    )
    if (ok) return
    await sleep(200)
  }
  throw new Error(`no 200 from /healthz within ${timeoutMs / 1000} s`)
}

export const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })

/**
 * `SVC_SECRETS_KEY` for a bench on DATABASE_URL, where the service requires one (decision 0105):
 * the caller's, else the key generated into `$SVC_DATA_DIR/secrets.key` (default `./.data`) as the
 * service did before, so what an earlier run sealed stays readable. Set in this process's env, so
 * in-process settings and spawned services (`...process.env`) use the same key.
 */
export const useSecretsKey = (): string => {
  const key = process.env["SVC_SECRETS_KEY"] || keyFileContent(process.env["SVC_DATA_DIR"] || "./.data")
  process.env["SVC_SECRETS_KEY"] = key
  return key
}

/**
 * The end of an in-process bench (`bench:<name>`): without DATABASE_URL it says what it `needs`
 * and exits 1; else it runs `program` scoped on `layer()` (built only then), logging warnings and
 * up, and sets the exit code.
 */
export const runInProcessBench = async <A, E, R, LE>(
  name: string,
  needs: string,
  program: Effect.Effect<A, E, R>,
  layer: () => Layer.Layer<Exclude<R, Scope.Scope>, LE>
) => {
  if (process.env["DATABASE_URL"] === undefined) {
    console.log(`bench:${name} needs DATABASE_URL (${needs}); nothing measured`)
    process.exitCode = 1
    return
  }
  useSecretsKey()
  await Effect.runPromise(
    program.pipe(Effect.scoped, Effect.provide(layer()), Effect.provideService(References.MinimumLogLevel, "Warn"))
  ).then(
    () => {
      process.exitCode = 0
    },
    (error: unknown) => {
      console.error(`\nbench:${name} failed: ${error instanceof Error ? error.message : String(error)}`)
      process.exitCode = 1
    }
  )
}

/** Runs `f` on one connection to the PostgreSQL database at `url` (a bench's seeding and counting). */
export const onDatabase = <A>(url: string, applicationName: string, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      return yield* f(yield* PgClient.PgClient)
    }).pipe(
      Effect.provide(PgClient.layer({ ...postgresOptions(Redacted.make(url)), maxConnections: 1, applicationName })),
      Effect.scoped
    )
  )

/** The site the tracker benches' page views come from (each seeded tracking key allows it). */
export const TRACKED_ORIGIN = "https://shop.example.com"
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

/**
 * The n-th tracker page view of a run under `trackingKey`, as a browser sends it to `/t/collect`: a
 * unique `event_id`, browser and session ids from pools of 5,000 and 1,000, UTMs and a gclid in the URL.
 */
export const pageView = (trackingKey: string, runId: string, n: number) => ({
  headers: { "content-type": "application/json", origin: TRACKED_ORIGIN, "user-agent": CHROME },
  body: JSON.stringify({
    tracking_key: trackingKey,
    anonymous_id: `anon_${runId}_${n % 5000}`,
    session_id: `sess_${runId}_${n % 1000}`,
    event_id: `${runId}-${n}`,
    type: "page_view",
    url: `${TRACKED_ORIGIN}/landing?utm_source=google&utm_medium=cpc&utm_campaign=Winter${n % 7}&gclid=g${n.toString(36)}`,
    referrer: "https://www.google.com/"
  })
})
