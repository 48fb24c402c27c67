/**
 * Webhook delivery (`npm run bench:webhooks`). Decision 0078; figures in bench/README.md.
 *
 * On the PostgreSQL of `DATABASE_URL` (required). A local receiver serves BENCH_ENDPOINTS
 * endpoints (100), one in a hundred answering 500; one profile has one subscription per endpoint
 * (`outcome.recorded`), seeded by SQL with sealed secrets. Outbox rows are inserted as the
 * recorder writes them, and the service's delivery worker (`WebhookWorkerLayer`, default settings,
 * its lease the default 8 s renewed by the heartbeat, decision 0119) runs in a child process (`--worker`):
 *
 * 1. throughput: BENCH_EVENTS (200) events x endpoints deliveries; deliveries/s = successful
 *    deliveries / seconds from the insert to the last one. Baseline, same run: this process posts
 *    the same signed bodies to the same receiver with plain `node:http`, as many in flight as the
 *    worker allows (2 loops x 8), nothing durable. A second bare baseline sends the same requests
 *    from a process of its own (`--bare`), as the worker does: a request that crosses processes
 *    wakes the receiver's process, which the in-process sender's receiver, sharing its loop, does not.
 * 2. restart mid-ladder: as many events again; the worker is killed (SIGKILL) once 40 % have
 *    arrived, while the failing endpoint's deliveries wait on the ladder, and a second worker
 *    finishes. Checked: every (endpoint, event) that should succeed arrived (none lost), how many
 *    arrived twice (raw 2xx receipts against distinct (endpoint, webhook-id)), and that every repeat
 *    is one of the rows the dead worker held under a live lease (in flight at the kill: at least
 *    once, deduplicable by webhook-id),
 *    and that the failing endpoint's deliveries are still pending on the ladder after the restart.
 *    Timed from the second worker's start: its first delivery, and the last of the rows the dead
 *    worker held (the take-over, which waits for their leases to run out). BENCH_RESTART_SLOW_MS
 *    (0) makes the healthy endpoints answer that late in this phase, so requests are in flight at the kill.
 * 3. one slow subscription (issue 34): a second profile with one subscription whose endpoint
 *    answers after BENCH_SLOW_MS (500); BENCH_ONE_EVENTS (200) unrelated events, each written by
 *    its own transaction (its own producer batch), then deliveries/s over at most
 *    BENCH_ONE_SECONDS (60) and the most requests the endpoint held at once.
 *
 * 4. one producer batch (BENCH_BATCH_EVENTS, 200, the spec's batch) to one fast endpoint: its
 *    rows go one after another (order within the batch), so deliveries/s is what one ordered run
 *    reaches; the arrival order is checked.
 *
 * BENCH_ONLY_WORKER=1 stops after phase 1's worker figures (paired runs of a change to the worker).
 *
 * Beside the bare `node:http` baseline, the same requests go through the service's outbound
 * client (src/platform/outbound-http.ts, with the public-host rule as the worker uses it) at the
 * same concurrency: what the client costs against bare `node:http`. Run on a tree without that
 * client (an earlier commit), that line is left out.
 */
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { createServer, request as httpRequest, Agent } from "node:http"
import { MigrationsLayer } from "../../src/main/core.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { TelemetryLayer } from "../../src/platform/telemetry.ts"
import { defaultWebhookSettings, WebhookSettings, WebhookWorkerLayer } from "../../src/webhooks/delivery/service.ts"
import { newSecret, signedHeaders } from "../../src/webhooks/delivery/signing.ts"
import { commandCpuByPid, cpuSince, fmt, intFromEnv, processCpuMs, sleep, startProcess } from "../support.ts"

/** This process's CPU time (user + system, µs) since `since`. */
const cpuMicros = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since)
  return used.user + used.system
}

/**
 * CPU time per delivery of the worker (or a sender), the database (the `postgres` processes) and
 * this process (the receiver), µs; undefined where /proc cannot be read. On two cores a rate is
 * bounded by the sum: it says which processes the time goes to, whatever the machine's load.
 */
const cpuBudget = () => {
  const receiver = process.cpuUsage()
  const database = commandCpuByPid("postgres")
  return (deliveries: number, sender?: number) => {
    const after = commandCpuByPid("postgres")
    const receiverMicros = cpuMicros(receiver) / deliveries
    const databaseMicros = database === undefined || after === undefined ? undefined : (cpuSince(database, after) * 1000) / deliveries
    return { sender, database: databaseMicros, receiver: receiverMicros }
  }
}
type Budget = ReturnType<ReturnType<typeof cpuBudget>>
const showBudget = ({ database, receiver, sender }: Budget) =>
  sender === undefined || database === undefined
    ? "CPU not read (no /proc)"
    : `${fmt(sender)} + ${fmt(database)} + ${fmt(receiver)} = ${fmt(sender + database + receiver)} µs of CPU a request (sender + database + receiver)`

const ENDPOINTS = intFromEnv("BENCH_ENDPOINTS", 100, 10_000)
const EVENTS = intFromEnv("BENCH_EVENTS", 200, 100_000)

/** One signed POST to endpoint `k` of the local receiver, answered when its response has ended. */
const postSigned = (agent: Agent, port: number, k: number, secret: string, webhookId: string, body: string) =>
  new Promise<void>((resolve, reject) => {
    const req = httpRequest({
      host: "127.0.0.1", port, path: `/e${k}`, method: "POST", agent,
      headers: { "content-type": "application/json", ...signedHeaders([secret], webhookId, Math.floor(Date.now() / 1000), body) }
    }, (res) => {
      res.resume()
      res.on("end", () => resolve())
    })
    req.on("error", reject)
    req.end(body)
  })

if (process.argv.includes("--bare")) {
  // The bare sender in a process of its own, as the worker is: plain node:http, signed bodies,
  // nothing durable. Reads its jobs from the file named after --bare; prints requests/s.
  const { readFileSync } = await import("node:fs")
  const file = process.argv[process.argv.indexOf("--bare") + 1] ?? ""
  const plan = JSON.parse(readFileSync(file, "utf8")) as { port: number; inflight: number; secrets: Array<string>; jobs: Array<[string, number]> }
  const agent = new Agent({ keepAlive: true, maxSockets: plan.inflight })
  const body = JSON.stringify({ id: "x", type: "outcome.recorded", provider: "svc", created_at: new Date().toISOString(), data: {} })
  let next = 0
  const start = Date.now()
  const cpuAtStart = process.cpuUsage()
  await Promise.all(Array.from({ length: plan.inflight }, async () => {
    while (next < plan.jobs.length) {
      const [id, k] = plan.jobs[next++]!
      await postSigned(agent, plan.port, k, plan.secrets[k]!, `bare-${id}`, body)
    }
  }))
  // With its own CPU time (µs a request), for the CPU budget line.
  console.log(`BARE ${plan.jobs.length / ((Date.now() - start) / 1000)} ${cpuMicros(cpuAtStart) / plan.jobs.length}`)
  agent.destroy()
  process.exit()
} else if (process.argv.includes("--floor")) {
  // The durable floor, in a process of its own: the least any queue that loses nothing must do per
  // delivery, with the bare sender's requests. Each row is written (200 to a statement, as the
  // fan-out writes) before it is sent, and its result is written after (one statement for all
  // that ended in the last 5 ms), on a table with only its primary key: no lease, no order, no
  // attempt log, no index to keep. What the worker costs beyond this is its own design's.
  const { readFileSync } = await import("node:fs")
  const file = process.argv[process.argv.indexOf("--floor") + 1] ?? ""
  const plan = JSON.parse(readFileSync(file, "utf8")) as { port: number; inflight: number; secrets: Array<string>; jobs: Array<[string, number]> }
  const rate = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient
    const table = sql(`bench_floor_${process.pid}`)
    yield* sql`CREATE TABLE ${table} (id uuid PRIMARY KEY, endpoint int NOT NULL, body text NOT NULL, status smallint NOT NULL DEFAULT 0)`
    const agent = new Agent({ keepAlive: true, maxSockets: plan.inflight })
    const body = JSON.stringify({ id: "x", type: "outcome.recorded", provider: "svc", created_at: new Date().toISOString(), data: {} })
    const rows = plan.jobs.map(([, k]) => ({ id: crypto.randomUUID(), k }))
    const ready: Array<{ id: string; k: number }> = []
    let written = 0
    let ended: Array<string> = []
    let recorded = 0
    const start = Date.now()
    const cpuAtStart = process.cpuUsage()
    const produce = Effect.gen(function*() {
      for (let n = 0; n < rows.length; n += 200) {
        const chunk = rows.slice(n, n + 200)
        yield* sql`INSERT INTO ${table} (id, endpoint, body) SELECT * FROM unnest(${chunk.map((r) => r.id)}::uuid[], ${chunk.map((r) => r.k)}::int[], ${chunk.map(() => body)}::text[])`
        ready.push(...chunk)
        written += chunk.length
      }
    })
    // A failed request ends like an answered one: the floor records it either way.
    const send = (row: { id: string; k: number }) =>
      Effect.promise(() => postSigned(agent, plan.port, row.k, plan.secrets[row.k]!, `floor-${row.id}`, body).catch(() => undefined))
    const sender = Effect.gen(function*() {
      while (true) {
        const row = ready.shift()
        if (row === undefined) {
          if (written === rows.length) return
          yield* Effect.sleep(Duration.millis(1))
          continue
        }
        yield* send(row)
        ended.push(row.id)
      }
    })
    const settle = Effect.gen(function*() {
      while (recorded < rows.length) {
        yield* Effect.sleep(Duration.millis(5))
        const these = ended
        ended = []
        if (these.length === 0) continue
        yield* sql`UPDATE ${table} SET status = 1 WHERE id = ANY(${these}::uuid[])`
        recorded += these.length
      }
    })
    yield* Effect.all([produce, settle, ...Array.from({ length: plan.inflight }, () => sender)], { concurrency: "unbounded" })
    const seconds = (Date.now() - start) / 1000
    const [check] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${table} WHERE status = 1`
    yield* sql`DROP TABLE ${table}`
    agent.destroy()
    if (check?.n !== rows.length) return yield* Effect.die(`the floor recorded ${check?.n} of ${rows.length}`)
    return `${rows.length / seconds} ${cpuMicros(cpuAtStart) / rows.length}`
  })).pipe(Effect.provide(DatabaseLayer), Effect.provide(AppConfig.layer)))
  console.log(`FLOOR ${rate}`)
  process.exit()
} else if (process.argv.includes("--worker")) {
  // The worker process: the service's delivery worker and nothing else.
  const settings = Layer.succeed(WebhookSettings)({
    ...defaultWebhookSettings,
    pollInterval: Duration.millis(intFromEnv("BENCH_POLL_MS", 200, 10_000)),
    concurrency: intFromEnv("BENCH_CONCURRENCY", defaultWebhookSettings.concurrency, 1000),
    // BENCH_FIRST_MS: how long a fan-out sends first attempts itself (0: never; decision 0157).
    firstAttempts: process.env["BENCH_FIRST_MS"] === undefined
      ? defaultWebhookSettings.firstAttempts
      : Duration.millis(Math.max(0, Number(process.env["BENCH_FIRST_MS"]) || 0))
  })
  // Traced as the service is (src/main/launch.ts): without an OTLP endpoint, placeholder spans.
  const layer = WebhookWorkerLayer.pipe(
    Layer.provide(SecretBox.layer),
    Layer.provide(settings),
    Layer.provide(TelemetryLayer),
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provide(AppConfig.layer)
  )
  // BENCH_PROFILE=<dir>: a CPU profile of this worker's first BENCH_PROFILE_SECONDS (15), for
  // where the time goes (a .cpuprofile per worker process; SIGKILL would lose one written at exit).
  const profileDir = process.env["BENCH_PROFILE"]
  if (profileDir !== undefined) {
    const { Session } = await import("node:inspector/promises")
    const { writeFileSync } = await import("node:fs")
    const session = new Session()
    session.connect()
    await session.post("Profiler.enable")
    await session.post("Profiler.start")
    setTimeout(() => {
      void session.post("Profiler.stop").then(({ profile }) =>
        writeFileSync(`${profileDir}/worker-${process.pid}.cpuprofile`, JSON.stringify(profile))
      )
    }, intFromEnv("BENCH_PROFILE_SECONDS", 15, 600) * 1000)
  }
  await Effect.runPromise(Layer.launch(layer))
} else {
  await main()
}

async function main() {
  if (process.env["DATABASE_URL"] === undefined) {
    console.log("bench:webhooks needs DATABASE_URL (a PostgreSQL database); nothing measured")
    process.exitCode = 1
    return
  }
  const secretsKey = process.env["SVC_SECRETS_KEY"] ?? randomBytes(32).toString("base64")
  const env = { ...process.env, SVC_SECRETS_KEY: secretsKey, SVC_WEBHOOK_ALLOW_HOSTS: "127.0.0.1", LOG_LEVEL: "Warn" }

  // The receiver: endpoint e0, e100, ... answer 500; the others 200. Counts 2xx receipts per (endpoint, webhook-id).
  const ok = new Map<string, number>()
  // Per webhook-id: how many endpoints have had it with a 2xx (what the wait loop counts: a walk of
  // every (endpoint, event) pair each poll took most of a core at 2,000 events and slowed the worker).
  const endpointsReached = new Map<string, number>()
  let requests = 0
  let lastOk = 0
  // Per (endpoint, webhook-id): the last 2xx receipt; and the first 2xx after the restart.
  const lastAt = new Map<string, number>()
  let restartAt = 0
  let firstAfterRestart = 0
  // Phase 2 only: the healthy endpoints answer after BENCH_RESTART_SLOW_MS (0), so requests are in flight at the kill.
  let answerAfter = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      requests++
      const endpoint = Number((req.url ?? "/e0").slice(2))
      if (endpoint % 100 === 0) return void res.writeHead(500).end()
      const webhookId = String(req.headers["webhook-id"])
      const key = `${endpoint}|${webhookId}`
      const seen = ok.get(key) ?? 0
      ok.set(key, seen + 1)
      if (seen === 0) endpointsReached.set(webhookId, (endpointsReached.get(webhookId) ?? 0) + 1)
      lastOk = Date.now()
      lastAt.set(key, lastOk)
      if (restartAt > 0 && firstAfterRestart === 0) firstAfterRestart = lastOk
      if (answerAfter > 0) return void setTimeout(() => res.writeHead(200).end(), answerAfter)
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const healthy = Array.from({ length: ENDPOINTS }, (_, k) => k).filter((k) => k % 100 !== 0)
  const failing = Array.from({ length: ENDPOINTS }, (_, k) => k).filter((k) => k % 100 === 0)

  const db = <A, E>(program: Effect.Effect<A, E, SqlClient | SecretBox>) =>
    Effect.runPromise(Effect.scoped(program).pipe(
      Effect.provide(SecretBox.layer),
      Effect.provide(MigrationsLayer.pipe(Layer.provideMerge(DatabaseLayer))),
      Effect.provide(AppConfig.layer)
    ))
  process.env["SVC_SECRETS_KEY"] = secretsKey

  const { profileId, secrets } = await db(Effect.gen(function*() {
    const sql = yield* SqlClient
    const box = yield* SecretBox
    const workspaceId = crypto.randomUUID()
    const profileId = crypto.randomUUID()
    yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench webhooks')`
    yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'bench webhooks')`
    const secrets = Array.from({ length: ENDPOINTS }, () => newSecret())
    yield* sql`
      INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
      SELECT gen_random_uuid(), ${profileId}, ${workspaceId}, u, '{outcome.recorded}', 'active', s
      FROM unnest(${secrets.map((_, k) => `http://127.0.0.1:${port}/e${k}`)}::text[], ${secrets.map((s) => box.seal(s))}::text[]) AS t(u, s)`
    return { profileId, secrets }
  }))

  // One statement: one producer batch (the fan-out takes up to 200 outbox rows of it at a time).
  const insertEvents = (count: number, profile: string = profileId) =>
    db(Effect.gen(function*() {
      const sql = yield* SqlClient
      const ids = Array.from({ length: count }, () => crypto.randomUUID())
      const payloads = ids.map((id) => JSON.stringify({
        id,
        type: "outcome.recorded",
        created_at: new Date().toISOString(),
        data: { provider: "svc", outcome_type: "purchase", occurred_at: new Date().toISOString(), customer_key: null, value: "10.00", currency: "EUR", outcome_event_id: crypto.randomUUID(), conversion_id: null },
        delivery: { profile_id: profile, provisioned_by_app_id: null, healthcare_family: false, customer_id: null }
      }))
      yield* sql`
        INSERT INTO outbox (id, profile_id, topic, payload, created_at)
        SELECT id, ${profile}, 'outcome.recorded', p, now() + make_interval(secs => n / 1000000.0)
        FROM unnest(${ids}::uuid[], ${payloads}::jsonb[]) WITH ORDINALITY AS t(id, p, n)`
      return ids
    }))

  const arrived = (ids: ReadonlyArray<string>) => {
    let unique = 0
    let twice = 0
    let raw = 0
    const repeated: Array<string> = []
    for (const id of ids) {
      for (const k of healthy) {
        const n = ok.get(`${k}|${id}`) ?? 0
        raw += n
        if (n > 0) unique++
        if (n > 1) {
          twice += n - 1
          repeated.push(`${k}|${id}`)
        }
      }
    }
    return { unique, twice, raw, repeated }
  }
  const waitArrived = async (ids: ReadonlyArray<string>, target: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs
    const reached = () => ids.reduce((sum, id) => sum + (endpointsReached.get(id) ?? 0), 0)
    while (reached() < target) {
      if (Date.now() > deadline) throw new Error(`only ${reached()} of ${target} deliveries arrived`)
      await sleep(50)
    }
  }

  // 1. Throughput.
  const expected = EVENTS * healthy.length
  const worker1 = startProcess(["bench/webhooks/run.ts", "--worker"], env, "worker 1")
  await sleep(3_000)
  const startedAt = Date.now()
  const serviceBudget = cpuBudget()
  const workerCpuAtStart = processCpuMs(worker1.child.pid)
  const first = await insertEvents(EVENTS)
  await waitArrived(first, expected, 600_000).catch((error: unknown) => {
    console.error(worker1.output())
    throw error
  })
  // Delivered is not done: the rate counts until every result is written (a result not written is
  // sent again after a crash).
  const recordedDeadline = Date.now() + 600_000
  while (true) {
    const [done] = await db(Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`
      SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded' AND outbox_id = ANY(${first}::uuid[])`))
    if ((done?.n ?? 0) >= expected) break
    if (Date.now() > recordedDeadline) throw new Error(`only ${done?.n} of ${expected} results written`)
    await sleep(20)
  }
  const recordedAt = Date.now()
  const workerCpu = processCpuMs(worker1.child.pid)
  const serviceCpu = serviceBudget(expected, workerCpu === undefined || workerCpuAtStart === undefined ? undefined : ((workerCpu - workerCpuAtStart) * 1000) / expected)
  const serviceSeconds = (recordedAt - startedAt) / 1000
  const serviceRate = expected / serviceSeconds
  const serviceRequests = requests

  // BENCH_ONLY_WORKER=1: this phase's worker figures and nothing else (for paired runs of a change).
  if (process.env["BENCH_ONLY_WORKER"] === "1") {
    worker1.child.kill("SIGKILL")
    server.close()
    console.log(`worker only: ${fmt(expected)} deliveries in ${fmt(serviceSeconds, 2)} s = ${fmt(serviceRate)} deliveries/s; ${showBudget(serviceCpu)}`)
    process.exit()
  }

  // Baseline: the same signed bodies, plain node:http, BENCH_BASELINE_INFLIGHT (16) in flight, nothing durable.
  const inflight = intFromEnv("BENCH_BASELINE_INFLIGHT", 16, 1000)
  const agent = new Agent({ keepAlive: true, maxSockets: inflight })
  const jobs = first.flatMap((id) => healthy.map((k) => ({ id, k })))
  const body = JSON.stringify({ id: "x", type: "outcome.recorded", provider: "svc", created_at: new Date().toISOString(), data: {} })
  let next = 0
  const baseStart = Date.now()
  await Promise.all(Array.from({ length: inflight }, async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!
      await postSigned(agent, port, job.k, secrets[job.k]!, `base-${job.id}`, body)
    }
  }))
  const baseRate = jobs.length / ((Date.now() - baseStart) / 1000)

  // The same bare sender in its own process, as the worker runs: each request crosses from one
  // process to another, as every delivery does (the in-process baseline's receiver shares its loop).
  const { writeFileSync, mkdtempSync } = await import("node:fs")
  const { tmpdir } = await import("node:os")
  const planFile = `${mkdtempSync(`${tmpdir()}/bench-webhooks-`)}/bare.json`
  writeFileSync(planFile, JSON.stringify({ port, inflight, secrets, jobs: jobs.map((job) => [job.id, job.k]) }))
  const bareBudget = cpuBudget()
  const bare = startProcess(["bench/webhooks/run.ts", "--bare", planFile], env, "bare sender")
  const bareExit = await new Promise<number | null>((r) => bare.child.once("exit", (code) => r(code)))
  const bareLine = /BARE ([\d.]+) ([\d.]+)/.exec(bare.output())
  if (bareExit !== 0 || bareLine === null) throw new Error(`the bare sender failed\n${bare.output()}`)
  const bareProcessRate = Number(bareLine[1])
  const bareCpu = bareBudget(jobs.length, Number(bareLine[2]))
  // The durable floor (see --floor): the same requests, each row written before and its result after.
  const floorBudget = cpuBudget()
  const floor = startProcess(["bench/webhooks/run.ts", "--floor", planFile], env, "durable floor")
  const floorExit = await new Promise<number | null>((r) => floor.child.once("exit", (code) => r(code)))
  const floorLine = /FLOOR ([\d.]+) ([\d.]+)/.exec(floor.output())
  if (floorExit !== 0 || floorLine === null) throw new Error(`the durable floor failed\n${floor.output()}`)
  const floorRate = Number(floorLine[1])
  const floorCpu = floorBudget(jobs.length, Number(floorLine[2]))

  // The same requests through the service's outbound client, when this tree has it.
  const outbound = await import("../../src/platform/outbound-http.ts").catch(() => undefined)
  const publicHost = await import("../../src/platform/public-host.ts").catch(() => undefined)
  let clientRate: number | undefined
  if (outbound !== undefined && publicHost !== undefined) {
    const publicOnly = { allow: publicHost.parseAllowList(["127.0.0.1"]), dnsServers: [], cache: publicHost.resolveCache(5) }
    let nextJob = 0
    const clientStart = Date.now()
    await Promise.all(Array.from({ length: inflight }, async () => {
      while (nextJob < jobs.length) {
        const job = jobs[nextJob++]!
        await Effect.runPromise(outbound.send({
          method: "POST",
          url: `http://127.0.0.1:${port}/e${job.k}`,
          headers: { "content-type": "application/json", ...signedHeaders([secrets[job.k]!], `client-${job.id}`, Math.floor(Date.now() / 1000), body) },
          body,
          timeout: Duration.seconds(15),
          publicOnly,
          keepBody: false
        }))
      }
    }))
    clientRate = jobs.length / ((Date.now() - clientStart) / 1000)
  }

  // 2. Restart mid-ladder.
  answerAfter = intFromEnv("BENCH_RESTART_SLOW_MS", 0, 60_000)
  const second = await insertEvents(EVENTS)
  await waitArrived(second, Math.floor(expected * 0.4), 600_000)
  worker1.child.kill("SIGKILL")
  const killedAt = arrived(second).unique
  await new Promise<void>((r) => (worker1.child.exitCode !== null || worker1.child.signalCode !== null) ? r() : worker1.child.once("exit", () => r()))
  // What the dead worker held: claimed (a live lease) and not yet recorded; and what a window of first
  // attempts held (decision 0157): its outbox rows, leased and unpublished, each subscription's
  // delivery of them not yet written. Only these may arrive twice.
  const inFlight = new Set(await db(Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ url: string; outbox_id: string }>`
      SELECT s.url, d.outbox_id FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
      WHERE d.status = 'pending' AND d.lease_token IS NOT NULL AND d.outbox_id = ANY(${second}::uuid[])
      UNION ALL
      SELECT s.url, o.id FROM outbox o JOIN webhook_subscriptions s ON s.profile_id = o.profile_id
      WHERE o.id = ANY(${second}::uuid[]) AND o.published_at IS NULL AND o.fan_out_token IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = o.id AND d.subscription_id = s.id)`
    return rows.map((row) => `${Number(row.url.slice(row.url.lastIndexOf("/e") + 2))}|${row.outbox_id}`)
  })))
  const heldByWindows = await db(Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`
    SELECT count(*)::int AS n FROM outbox WHERE id = ANY(${second}::uuid[]) AND published_at IS NULL AND fan_out_token IS NOT NULL`))
  restartAt = Date.now()
  const worker2 = startProcess(["bench/webhooks/run.ts", "--worker"], env, "worker 2")
  await waitArrived(second, expected, 600_000).catch((error: unknown) => {
    console.error(worker2.output())
    throw error
  })
  await sleep(2_000)
  const after = arrived(second)
  const ladder = await db(Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<{ status: string; n: number; min_attempts: number }>`
      SELECT d.status, count(*)::int AS n, min(d.attempts)::int AS min_attempts
      FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
      WHERE s.url = ANY(${failing.map((k) => `http://127.0.0.1:${port}/e${k}`)}::text[]) AND d.outbox_id = ANY(${second}::uuid[])
      GROUP BY d.status`
  }))

  // 3. One slow subscription: unrelated events, each its own producer batch.
  answerAfter = 0
  const ONE_EVENTS = intFromEnv("BENCH_ONE_EVENTS", 200, 100_000)
  const SLOW_MS = intFromEnv("BENCH_SLOW_MS", 500, 60_000)
  let open = 0
  let most = 0
  let slowOk = 0
  const slow = createServer((req, res) => {
    open++
    most = Math.max(most, open)
    req.resume()
    req.on("end", () => setTimeout(() => {
      open--
      slowOk++
      res.writeHead(200).end()
    }, SLOW_MS))
  })
  await new Promise<void>((r) => slow.listen(0, "127.0.0.1", () => r()))
  const slowAddress = slow.address()
  const slowPort = typeof slowAddress === "object" && slowAddress !== null ? slowAddress.port : 0
  // A profile of its own with one subscription to `url`.
  const oneSubscription = (name: string, url: string) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const box = yield* SecretBox
      const workspaceId = crypto.randomUUID()
      const profile = crypto.randomUUID()
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${name})`
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profile}, ${workspaceId}, ${name})`
      yield* sql`
        INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
        VALUES (gen_random_uuid(), ${profile}, ${workspaceId}, ${url}, '{outcome.recorded}', 'active', ${box.seal(newSecret())})`
      return profile
    })
  const oneProfile = await db(oneSubscription("bench webhooks, one subscription", `http://127.0.0.1:${slowPort}/slow`))
  await db(Effect.gen(function*() {
    const sql = yield* SqlClient
    for (let n = 0; n < ONE_EVENTS; n++) {
      const id = crypto.randomUUID()
      const payload = JSON.stringify({
        id, type: "outcome.recorded", created_at: new Date().toISOString(),
        data: { provider: "svc", outcome_type: "purchase", occurred_at: new Date().toISOString(), customer_key: null, value: "1.00", currency: "EUR", outcome_event_id: crypto.randomUUID(), conversion_id: null },
        delivery: { profile_id: oneProfile, provisioned_by_app_id: null, healthcare_family: false, customer_id: null }
      })
      // One statement, one transaction: one producer call per event.
      yield* sql`INSERT INTO outbox (id, profile_id, topic, payload) VALUES (${id}, ${oneProfile}, 'outcome.recorded', ${payload}::jsonb)`
    }
  }))
  const oneStart = Date.now()
  const oneDeadline = oneStart + intFromEnv("BENCH_ONE_SECONDS", 60, 3_600) * 1000
  while (slowOk < ONE_EVENTS && Date.now() < oneDeadline) await sleep(20)
  const oneSeconds = (Date.now() - oneStart) / 1000
  const oneDelivered = slowOk

  // 4. One producer batch to one fast endpoint: order holds, so its rows go one after another;
  // the rate is what one ordered run reaches (each row waits for the one before it).
  const BATCH_EVENTS = intFromEnv("BENCH_BATCH_EVENTS", 200, 100_000)
  const order: Array<string> = []
  const fast = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      order.push(String(req.headers["webhook-id"]))
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((r) => fast.listen(0, "127.0.0.1", () => r()))
  const fastAddress = fast.address()
  const fastPort = typeof fastAddress === "object" && fastAddress !== null ? fastAddress.port : 0
  const batchProfile = await db(oneSubscription("bench webhooks, one batch", `http://127.0.0.1:${fastPort}/one`))
  const batchIds = await insertEvents(BATCH_EVENTS, batchProfile)
  const batchStart = Date.now()
  const batchDeadline = batchStart + intFromEnv("BENCH_ONE_SECONDS", 60, 3_600) * 1000
  while (order.length < BATCH_EVENTS && Date.now() < batchDeadline) await sleep(20)
  const batchSeconds = (Date.now() - batchStart) / 1000
  const inOrder = order.length === BATCH_EVENTS && order.every((id, k) => id === batchIds[k])

  worker2.child.kill("SIGKILL")
  fast.close()
  server.close()
  slow.closeAllConnections()
  slow.close()
  agent.destroy()

  console.log(`bench:webhooks — ${ENDPOINTS} endpoints (${ENDPOINTS - healthy.length} answering 500), ${EVENTS} events per phase`)
  console.log(`  service worker : ${fmt(expected)} deliveries in ${fmt(serviceSeconds, 2)} s = ${fmt(serviceRate)} deliveries/s (receiver saw ${fmt(serviceRequests)} requests, retries of the failing endpoint included)`)
  console.log(`  baseline       : plain node:http, ${inflight} in flight: ${fmt(baseRate)} requests/s`)
  console.log(`  ratio          : ${fmt(serviceRate / baseRate, 2)}x the baseline`)
  console.log(`  bare, own process: the same requests from a process of its own (as the worker sends), ${inflight} in flight: ${fmt(bareProcessRate)} requests/s; the worker ${fmt(serviceRate / bareProcessRate, 2)}x of it`)
  console.log(`  durable floor  : the same requests, each row written before it is sent and its result after (batched, primary key only), own process: ${fmt(floorRate)} requests/s = ${fmt(floorRate / bareProcessRate, 2)}x the bare sender; the worker ${fmt(serviceRate / floorRate, 2)}x of it`)
  console.log(`  CPU budget     : worker ${showBudget(serviceCpu)}; bare sender ${showBudget(bareCpu)}; durable floor ${showBudget(floorCpu)}`)
  if (clientRate !== undefined) {
    console.log(`  outbound client: the same requests through src/platform/outbound-http.ts (public-host rule on), ${inflight} in flight: ${fmt(clientRate)} requests/s = ${fmt(clientRate / baseRate, 2)}x bare node:http`)
  }
  console.log(`  restart        : SIGKILL after ${fmt(killedAt)} of ${fmt(expected)}; after the second worker: ${fmt(after.unique)} arrived, ${fmt(expected - after.unique)} lost, ${fmt(after.twice)} arrived twice`)
  const outside = after.repeated.filter((key) => !inFlight.has(key))
  const heldTimes = [...inFlight].filter((key) => Number(key.slice(0, key.indexOf("|"))) % 100 !== 0).map((key) => lastAt.get(key) ?? 0)
  const takeover = heldTimes.length === 0 ? 0 : Math.max(...heldTimes) - restartAt
  console.log(`  restart timing : first delivery ${fmt((firstAfterRestart - restartAt) / 1000, 2)} s after the second worker started; the last row the dead worker held delivered ${fmt(takeover / 1000, 2)} s after it started`)
  console.log(`  restart detail : ${fmt(after.raw)} 2xx receipts for ${fmt(after.unique)} distinct (endpoint, webhook-id); ${fmt(inFlight.size)} held under the dead worker's lease or window at the kill (${fmt(heldByWindows[0]?.n ?? 0)} outbox rows in a window); repeats outside that set: ${fmt(outside.length)}`)
  console.log(`  failing endpoint after the restart: ${ladder.map((r) => `${r.n} ${r.status} (attempts >= ${r.min_attempts})`).join(", ")}`)
  console.log(`  one subscription (${SLOW_MS} ms endpoint, ${fmt(ONE_EVENTS)} unrelated events): ${fmt(oneDelivered)} delivered in ${fmt(oneSeconds, 2)} s = ${fmt(oneDelivered / oneSeconds, 1)} deliveries/s, at most ${most} requests at once`)
  console.log(`  one batch      : ${fmt(BATCH_EVENTS)} events of one producer batch to one fast endpoint: ${fmt(order.length)} delivered in ${fmt(batchSeconds, 2)} s = ${fmt(order.length / batchSeconds, 1)} deliveries/s, ${inOrder ? "in order" : "NOT in order"}`)
  // At least once: a repeat is allowed only for a delivery in flight at the kill (the receiver dedups by webhook-id).
  if (after.unique < expected || outside.length > 0 || !inOrder) process.exitCode = 1
  process.exit()
}
