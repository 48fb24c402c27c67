/**
 * The export pipeline end to end (`npm run bench:export`). Decisions 0075 and 0094; figures in
 * bench/README.md ("export").
 *
 * On the PostgreSQL of `DATABASE_URL` (required). The sandbox providers run alone in a child
 * process (`sandbox/main.ts`) behind a counting proxy in this process: every ad-platform
 * events call the sandbox answers 200 is an acknowledgement, stamped with this process's clock
 * per `event_id`. The service runs as a child process (`src/main/node.ts`, default settings, the
 * export worker on) pointed at the proxy (`SVC_SANDBOX_URL`). Seeded: a person's profile (the
 * add-on is on), an API key, a `purchase` definition; through the service's API: an ad-platform
 * connection (hand-off and the sandbox's consent), a website destination on `ds_1001_1`.
 *
 * Load: open loop, BENCH_RATE (1,000) outcomes/s for BENCH_SECONDS (20) s, sent as slots of
 * 10 ms over 64 keep-alive connections (as bench/ingest drives the events API). The commit time
 * of an outcome is when its 200 arrived here (the answer follows the commit).
 *
 * 1. ingest only: no rule yet (the worker polls, finds nothing to queue).
 * 2. exports on: a rule for `purchase`; the same load. Reported: ingest rate and p95 next to run 1,
 *    delivered outcomes/s (first commit to last acknowledgement), export lag (commit to
 *    acknowledgement) p50/p95/max.
 * 3. restart: the same load; the service is killed (SIGKILL) half-way and started again at once
 *    on the same port. Every outcome answered 200 must be acknowledged (none lost), counted by
 *    distinct `event_id`; raw repeats (sent again after the crash, the platform dedups them) are
 *    counted apart. The backlog left by the downtime gives the drain rate.
 *
 * BENCH_QUICK=1 runs 5 s per phase at 300 outcomes/s.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { Agent, createServer, request as httpRequest } from "node:http"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { postgresOptions } from "../../src/platform/database.ts"
import { commandCpuMs, fmt, freePort, HOST, intFromEnv, percentile, processCpuMs, sleep, startProcess, stopProcess, waitFor } from "../support.ts"

const QUICK = process.env["BENCH_QUICK"] === "1"
const RATE = intFromEnv("BENCH_RATE", QUICK ? 300 : 1_000, 20_000)
const SECONDS = intFromEnv("BENCH_SECONDS", QUICK ? 5 : 20, 600)
const DRAIN_TIMEOUT_MS = intFromEnv("BENCH_DRAIN_TIMEOUT_S", 300, 3_600) * 1000

/** First acknowledgement time and count per event id, as the proxy saw the sandbox answer. */
const acks = new Map<string, { readonly at: number; count: number }>()
let ackedCalls = 0

/** Forwards to the sandbox; an events call answered 200 acknowledges each of its event ids. */
const startProxy = async (targetPort: number) => {
  const port = await freePort()
  const server = createServer((incoming, outgoing) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const body = Buffer.concat(chunks)
      const isEvents = incoming.method === "POST" && /\/v1\/datasets\/[^/]+\/events$/.test(incoming.url ?? "")
      const forwarded = httpRequest(
        { host: HOST, port: targetPort, path: incoming.url, method: incoming.method, headers: incoming.headers },
        (answer) => {
          if (isEvents && answer.statusCode === 200) {
            const at = Date.now()
            ackedCalls++
            const data = (JSON.parse(body.toString("utf8")) as { data?: ReadonlyArray<{ event_id?: string }> }).data ?? []
            for (const event of data) {
              if (typeof event.event_id !== "string") continue
              const seen = acks.get(event.event_id)
              if (seen === undefined) acks.set(event.event_id, { at, count: 1 })
              else seen.count++
            }
          }
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(outgoing)
        }
      )
      forwarded.on("error", () => {
        outgoing.writeHead(502)
        outgoing.end()
      })
      forwarded.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve))
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const pg = (databaseUrl: string) =>
  PgClient.layer({ ...postgresOptions(Redacted.make(databaseUrl)), maxConnections: 1, minConnections: 0, applicationName: "bench-export" })

const seed = (databaseUrl: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const workspaceId = crypto.randomUUID()
      const profileId = crypto.randomUUID()
      const key = mintSecret(CredentialPrefix.apiKey)
      const scopes = ["events:write", "exports:read", "exports:write", "connections:read", "connections:write"]
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench export')`
        yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, 'bench export', 'USD')`
        yield* sql`
          INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes, rate_limit_per_minute)
          VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
                  ${secretDigest(key)}, ${scopes}, 1000000000)`
        yield* sql`
          INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, is_default, counts_as_cash)
          VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'Purchase', 'event', ${["purchase"]}, true, true)`
      }))
      return { profileId, key }
    }).pipe(Effect.provide(pg(databaseUrl)), Effect.scoped)
  )

const api = async (base: string, key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, json: text.length > 0 ? JSON.parse(text) : null, text }
}

/** The hand-off, the sandbox's consent page (persona `one_account`: `act_1001`), the callback. */
const connect = async (base: string, key: string) => {
  const minted = await api(base, key, "POST", "/api/v1/connections/adplatform/handoff", { return_url: `${base}/done` })
  if (minted.status !== 201) throw new Error(`handoff: ${minted.status} ${minted.text}`)
  const page = await fetch(minted.json.data.start_url, { redirect: "follow" })
  await page.text()
  const posted = await fetch(page.url, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ persona: "one_account", decision: "approve" }).toString()
  })
  await posted.text()
  const back = await fetch(posted.headers.get("location") ?? "", { redirect: "manual" })
  await back.text()
  const poll = await api(base, key, "GET", `/api/v1/connections/handoffs/${minted.json.data.handoff_id}`)
  if (poll.json?.data?.status !== "success") throw new Error(`handoff ended ${poll.text}`)
  return poll.json.data.result.connection_id as string
}

interface Committed {
  readonly outcomeEventId: string
  readonly at: number
}

/**
 * Open-loop load: `rate` outcomes/s for `seconds`, one slot every 10 ms; requests that fail
 * (the service is down) are counted and not retried. `during` runs once half-way.
 */
const drive = async (port: number, key: string, label: string, seconds: number, during?: () => Promise<void>) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const committed: Array<Committed> = []
  const latencies: Array<number> = []
  let failed = 0
  const inFlight = new Set<Promise<void>>()
  const post = (n: number) => {
    const body = JSON.stringify({
      event_name: "purchase",
      idempotency_key: `${label}-${n}-${randomBytes(4).toString("hex")}`,
      properties: { value: 19.99, currency: "USD" },
      user_traits: { external_id: `c${n % 2000}` },
      action_source: "website",
      click_ids: { gclid: `g${n}` }
    })
    const started = Date.now()
    const done = new Promise<void>((resolve) => {
      const req = httpRequest(
        { host: HOST, port, path: "/api/v1/events", method: "POST", agent, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (chunk: Buffer) => chunks.push(chunk))
          res.on("end", () => {
            const at = Date.now()
            if (res.statusCode === 200) {
              committed.push({ outcomeEventId: JSON.parse(Buffer.concat(chunks).toString("utf8")).data.outcome_event_id, at })
              latencies.push(at - started)
            } else failed++
            resolve()
          })
          res.on("error", () => {
            failed++
            resolve()
          })
        }
      )
      req.setTimeout(10_000, () => req.destroy())
      req.on("error", () => {
        failed++
        resolve()
      })
      req.end(body)
    })
    inFlight.add(done)
    void done.then(() => inFlight.delete(done))
  }
  const total = RATE * seconds
  const perSlot = RATE / 100
  const start = Date.now()
  let sent = 0
  // Runs beside the load, which keeps its pace (requests to a dead service fail and are counted).
  let aside: Promise<void> = Promise.resolve()
  let halfDone = during === undefined
  while (sent < total) {
    const due = Math.min(total, Math.floor(((Date.now() - start) / 10 + 1) * perSlot))
    while (sent < due) post(sent++)
    if (!halfDone && sent >= total / 2 && during !== undefined) {
      halfDone = true
      aside = during()
    }
    await sleep(10 - ((Date.now() - start) % 10))
  }
  await Promise.all(inFlight)
  await aside
  agent.destroy()
  const elapsed = (Date.now() - start) / 1000
  const sorted = Float64Array.from(latencies).sort()
  return { committed, failed, seconds: elapsed, rate: committed.length / elapsed, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95) }
}

const eventIdOf = (outcomeEventId: string, destinationId: string) =>
  `svc_${createHash("md5").update(`${outcomeEventId}:${destinationId}`).digest("hex")}`

/** Waits until every committed outcome is acknowledged (or the timeout), then reads lag and loss. */
const exported = async (committed: ReadonlyArray<Committed>, destinationId: string, timeoutMs: number) => {
  const ids = committed.map((c) => eventIdOf(c.outcomeEventId, destinationId))
  const deadline = Date.now() + timeoutMs
  while (ids.some((id) => !acks.has(id)) && Date.now() < deadline) await sleep(100)
  const lags: Array<number> = []
  let lost = 0
  let repeats = 0
  let lastAck = 0
  committed.forEach((c, i) => {
    const ack = acks.get(ids[i]!)
    if (ack === undefined) return void lost++
    lags.push(Math.max(0, ack.at - c.at))
    repeats += ack.count - 1
    lastAck = Math.max(lastAck, ack.at)
  })
  const sorted = Float64Array.from(lags).sort()
  const firstCommit = committed.reduce((min, c) => Math.min(min, c.at), Number.POSITIVE_INFINITY)
  return {
    distinct: lags.length,
    lost,
    repeats,
    perSecond: lags.length / ((lastAck - firstCommit) / 1000),
    lastAck,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]!
  }
}

async function main() {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:export needs DATABASE_URL (a PostgreSQL database); nothing measured")
    process.exitCode = 1
    return
  }
  // The service and the sandbox key sandbox world handles with one key (decision 0109): the
  // hand-off's consent link names the profile's world, and the sandbox pushes to this service's
  // own /hooks/<provider> only.
  const secretsKey = process.env["SVC_SECRETS_KEY"] ?? randomBytes(32).toString("base64")
  const servicePort = await freePort()
  const sandboxPort = await freePort()
  const sandbox = startProcess(["sandbox/main.ts"], {
    ...process.env,
    HOST,
    SVC_SANDBOX_PORT: String(sandboxPort),
    SVC_SECRETS_KEY: secretsKey,
    SVC_BASE_URL: `http://${HOST}:${servicePort}`,
    LOG_LEVEL: "Warn"
  }, "sandbox")
  await waitForSandbox(sandboxPort)
  const proxy = await startProxy(sandboxPort)
  const serviceEnv = {
    ...process.env,
    HOST,
    PORT: String(servicePort),
    DATABASE_URL: databaseUrl,
    SVC_SECRETS_KEY: secretsKey,
    // On DATABASE_URL the simulated providers are asked for, never the default (decision 0105).
    SVC_PROVIDERS: "sandbox",
    SVC_SANDBOX_URL: `http://${HOST}:${proxy.port}/sandbox`,
    SVC_BASE_URL: `http://${HOST}:${servicePort}`,
    // Its own cluster runner port and no Redis: other processes on this machine use the defaults.
    SVC_RUNNER_PORT: String(await freePort()),
    REDIS_URL: undefined,
    LOG_LEVEL: "Warn"
  }
  const base = `http://${HOST}:${servicePort}`
  let service = startProcess(["src/main/node.ts"], serviceEnv, "service")
  try {
    await waitFor(servicePort, service.child, 120_000)
  } catch (error) {
    console.error(service.output())
    throw error
  }
  const { key } = await seed(databaseUrl)
  const connectionId = await connect(base, key)
  const destination = await api(base, key, "POST", "/api/v1/exports/destinations", {
    kind: "adplatform_capi",
    connection_id: connectionId,
    dataset_id: "ds_1001_1",
    name: "Website"
  })
  if (destination.status !== 201) throw new Error(`destination: ${destination.status} ${destination.text}`)
  const destinationId: string = destination.json.data.id

  // Where each phase's work went: CPU (ms) of the service, the sandbox, this process (the load and
  // the counting proxy) and PostgreSQL, and the WAL the database wrote (bytes), so the cost of
  // exporting an outcome can be set beside the cost of ingesting one.
  const walBytes = () =>
    Effect.runPromise(Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const [row] = yield* sql<{ wal: string }>`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal`
      return Number(row?.wal ?? 0)
    }).pipe(Effect.provide(pg(databaseUrl)), Effect.scoped))
  const snapshot = async () => ({
    service: processCpuMs(service.child.pid) ?? 0,
    sandbox: processCpuMs(sandbox.child.pid) ?? 0,
    bench: processCpuMs(process.pid) ?? 0,
    postgres: commandCpuMs("postgres") ?? 0,
    wal: await walBytes()
  })
  type Snapshot = Awaited<ReturnType<typeof snapshot>>
  const costOf = (from: Snapshot, to: Snapshot, outcomes: number) => {
    const per = (key: keyof Snapshot) => (to[key] - from[key]) / Math.max(1, outcomes)
    return { service: per("service") * 1000, sandbox: per("sandbox") * 1000, bench: per("bench") * 1000, postgres: per("postgres") * 1000, wal: per("wal") }
  }
  const costLine = (cost: ReturnType<typeof costOf>) =>
    `CPU per outcome: service ${fmt(cost.service)} µs, PostgreSQL ${fmt(cost.postgres)} µs, sandbox ${fmt(cost.sandbox)} µs, load and proxy ${fmt(cost.bench)} µs; WAL ${fmt(cost.wal)} bytes`

  console.log(`bench:export — ${fmt(RATE)} outcomes/s offered for ${SECONDS} s per run, service on PostgreSQL, sandbox behind a counting proxy`)

  // Warm-up (auth cache, pools), not measured.
  await drive(servicePort, key, "warm", Math.min(SECONDS, 3))

  // 1. Ingest only.
  const beforeIngest = await snapshot()
  const ingestOnly = await drive(servicePort, key, "ingest", SECONDS)
  const ingestCost = costOf(beforeIngest, await snapshot(), ingestOnly.committed.length)
  console.log(`  ingest only   : ${fmt(ingestOnly.committed.length)} committed, ${fmt(ingestOnly.rate)}/s, p50 ${fmt(ingestOnly.p50)} ms, p95 ${fmt(ingestOnly.p95)} ms, ${ingestOnly.failed} failed`)
  console.log(`                  ${costLine(ingestCost)}`)

  // 2. Exports on.
  const rule = await api(base, key, "POST", "/api/v1/exports/rules", { conversion_key: "purchase" })
  if (rule.status !== 201) throw new Error(`rule: ${rule.status} ${rule.text}`)
  const callsBefore = ackedCalls
  const beforeExports = await snapshot()
  const withExports = await drive(servicePort, key, "export", SECONDS)
  const out = await exported(withExports.committed, destinationId, DRAIN_TIMEOUT_MS)
  const exportCost = costOf(beforeExports, await snapshot(), withExports.committed.length)
  console.log(`  with exports  : ${fmt(withExports.committed.length)} committed, ${fmt(withExports.rate)}/s, p50 ${fmt(withExports.p50)} ms, p95 ${fmt(withExports.p95)} ms, ${withExports.failed} failed`)
  console.log(`                  ${costLine(exportCost)}`)
  // What exporting adds per outcome, and the rate ingest could keep with it when ingest alone already
  // uses the whole machine (every process here shares its two cores): the CPU of ingest alone over that of both.
  const total = (cost: ReturnType<typeof costOf>) => cost.service + cost.postgres + cost.sandbox + cost.bench
  console.log(`  export's cost : +${fmt(exportCost.service - ingestCost.service)} µs service, +${fmt(exportCost.postgres - ingestCost.postgres)} µs PostgreSQL, +${fmt(exportCost.sandbox - ingestCost.sandbox)} µs sandbox, +${fmt(exportCost.bench - ingestCost.bench)} µs proxy, +${fmt(exportCost.wal - ingestCost.wal)} WAL bytes per outcome; on a saturated machine ingest keeps at most ${fmt(total(ingestCost) / total(exportCost), 2)}x`)
  console.log(`  exported      : ${fmt(out.distinct)} acknowledged (${fmt(ackedCalls - callsBefore)} calls), ${fmt(out.perSecond)} outcomes/s commit to ack; lag p50 ${fmt(out.p50)} ms, p95 ${fmt(out.p95)} ms, max ${fmt(out.max)} ms; lost ${out.lost}, repeats ${out.repeats}`)

  // 3. SIGKILL half-way, restart at once on the same port.
  let killedAt = 0
  let upAgainAt = 0
  const restart = await drive(servicePort, key, "restart", SECONDS, async () => {
    service.child.kill("SIGKILL")
    killedAt = Date.now()
    await new Promise<void>((r) => (service.child.exitCode !== null || service.child.signalCode !== null) ? r() : service.child.once("exit", () => r()))
    service = startProcess(["src/main/node.ts"], serviceEnv, "service (restarted)")
    await waitFor(servicePort, service.child, 120_000)
    upAgainAt = Date.now()
  })
  const afterRestart = await exported(restart.committed, destinationId, DRAIN_TIMEOUT_MS)
  console.log(`  restart       : SIGKILL at half-way, down ${fmt((upAgainAt - killedAt) / 1000, 1)} s; ${fmt(restart.committed.length)} committed, ${fmt(restart.failed)} failed (refused while down, or timed out at 10 s)`)
  console.log(`  after restart : ${fmt(afterRestart.distinct)} of ${fmt(restart.committed.length)} acknowledged by distinct event_id, lost ${afterRestart.lost}, raw repeats ${afterRestart.repeats}; lag p50 ${fmt(afterRestart.p50)} ms, p95 ${fmt(afterRestart.p95)} ms; ${fmt(afterRestart.perSecond)} outcomes/s commit to ack`)
  const drainFrom = upAgainAt
  const drained = restart.committed.filter((c) => c.at <= killedAt).length
  console.log(`  drain         : the backlog finished ${fmt((afterRestart.lastAck - drainFrom) / 1000, 1)} s after the restart (${fmt(drained)} outcomes committed before the kill)`)

  const deliveredRows = await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      return yield* sql<{ pairs: number; rows: number }>`
        SELECT count(DISTINCT export_id)::int AS pairs, count(*)::int AS rows FROM export_deliveries
        WHERE destination_id = ${destinationId} AND decision = 'delivered'`
    }).pipe(Effect.provide(pg(databaseUrl)), Effect.scoped)
  )
  console.log(`  ledger        : ${fmt(deliveredRows[0]?.rows ?? 0)} delivered rows for ${fmt(deliveredRows[0]?.pairs ?? 0)} exports`)

  await stopProcess(service.child)
  await stopProcess(sandbox.child)
  await proxy.close()
  if (out.lost > 0 || afterRestart.lost > 0 || (deliveredRows[0]?.rows ?? 0) !== (deliveredRows[0]?.pairs ?? 0)) process.exitCode = 1
  process.exit()
}

const waitForSandbox = async (port: number) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    // Test media answers without a credential (test controls do not): the sandbox is up.
    const ok = await fetch(`http://${HOST}:${port}/sandbox/adplatform/media/ready.txt?bytes=0`).then(async (r) => {
      await r.arrayBuffer()
      return r.status === 200
    }, () => false)
    if (ok) return
    await sleep(200)
  }
  throw new Error("the sandbox did not answer")
}

await main()
