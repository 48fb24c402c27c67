/**
 * The commerce sync at volume, across a process kill (`npm run bench:commerce`; issue 18 Measure,
 * decision 0065; figures in bench/README.md).
 *
 * The sandbox providers run alone in a child process (`sandbox/main.ts`), so they outlive the
 * service. This process connects a shop (consent and token at the sandbox, the connection stored
 * through `ConnectionsRepo` on the PostgreSQL of `DATABASE_URL`, with a cash conversion
 * definition listing `payment`), has the sandbox generate BENCH_ORDERS orders (100,000) of four
 * milestones each (`generated_orders`), and queues one `manual` sync job. The service
 * (`src/main/node.ts`) runs as a second child process with its background workers, as in
 * production; its sync worker claims the job. Once BENCH_KILL_AT (0.4) of the orders are in the
 * copy, the service is killed with SIGKILL (no shutdown, no lease handed back), started again, and
 * left to finish: the dead runner's liveness lock is gone with its sessions (decision 0150), so the
 * restarted runner takes the job over at its first poll, without waiting out the lease, and resumes
 * at the job's checkpoint.
 *
 * Then the database is checked: every order copied, exactly one milestone row per (order,
 * status), 4 per generated order, exactly one `order.status.changed` outbox row per milestone
 * (and none unmatched), exactly one payment outcome per paid order. Any difference fails the run.
 *
 * Printed: orders/s per phase (before the kill; after the resumed claim) and overall (kill,
 * restart and lease wait included), the service's peak RSS in each life (VmHWM), the restart's
 * cost (start-up, lease wait, orders read again), CPU seconds of the service and the sandbox.
 * The rows stay in the database (use a fresh one per run).
 */
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ConnectionsRepo } from "../../src/connections/repo.ts"
import { renderSyncJob, SyncJobsRepo } from "../../src/ingestion/sync/repo.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { AppConfig, DEFAULT_SANDBOX_SECRET, loadSettings } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { sandboxClientSecret } from "../../src/connections/providers/endpoints.ts"
import { SANDBOX_WORLD_PARAM, sandboxWorlds } from "../../src/connections/providers/sandbox-world.ts"
import { fmt, freePort, HOST, intFromEnv, processCpuMs, runInProcessBench, sleep, startProcess, stopProcess, waitFor } from "../support.ts"

const ORDERS = intFromEnv("BENCH_ORDERS", 100_000, 1_000_000)
const KILL_AT = Math.min(0.9, Math.max(0.05, Number(process.env["BENCH_KILL_AT"] ?? "0.4")))
const SHOP = "bench-shop"
const POLL_MS = 200

// The bench, the sandbox and the service it spawns seal and open the connection's tokens, and key
// sandbox world handles (decision 0109), with one key.
process.env["SVC_SECRETS_KEY"] ??= randomBytes(32).toString("base64")

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    const isJson = (response.headers.get("content-type") ?? "").includes("json") && text.length > 0
    return { status: response.status, location: response.headers.get("location"), body: isJson ? JSON.parse(text) : null }
  })

/** Peak resident set size of a live process (kernel's high-water mark), MB. */
const peakRssMb = (pid: number | undefined) => {
  if (pid === undefined) return Number.NaN
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  return kb / 1024
}

const main = (sandboxUrl: string, sandboxPid: number | undefined) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const box = yield* SecretBox
    const connections = yield* ConnectionsRepo
    const jobs = yield* SyncJobsRepo
    const base = `${sandboxUrl}/commerce`

    // 1. A profile with an API key (its sandbox world's test controls open with it), a grant for
    //    the shop in that world (the consent opens it), then its orders (not timed).
    const workspaceId = crypto.randomUUID()
    const profileId = crypto.randomUUID()
    const key = mintSecret(CredentialPrefix.apiKey)
    yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench:commerce')`
    yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'bench:commerce')`
    yield* sql`
      INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes)
      VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
              ${secretDigest(key)}, ${["connections:read"]})`
    const control = { authorization: `Bearer ${key}` }
    const redirect = "http://127.0.0.1/callback"
    const world = encodeURIComponent(sandboxWorlds(box.keyedHash).handle(profileId))
    const consent = yield* json(
      `${base}/oauth/authorize?client_id=sandbox-commerce&redirect_uri=${encodeURIComponent(redirect)}&state=bench&shop=${SHOP}` +
        `&${SANDBOX_WORLD_PARAM}=${world}`,
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ decision: "approve" }).toString(),
        redirect: "manual"
      }
    )
    const code = new URL(consent.location ?? "http://invalid/").searchParams.get("code")
    if (code === null) return yield* Effect.fail(new Error(`consent gave no code (${consent.status})`))
    const token = yield* json(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirect,
        client_id: "sandbox-commerce",
        client_secret: sandboxClientSecret(DEFAULT_SANDBOX_SECRET, "commerce")
      }).toString()
    })
    if (typeof token.body?.access_token !== "string") return yield* Effect.fail(new Error(`token: ${token.status} ${JSON.stringify(token.body)}`))
    const arrived = yield* json(`${base}/_state`, {
      method: "PATCH",
      headers: { ...control, "content-type": "application/json" },
      body: JSON.stringify({ arrive: { kind: "generated_orders", shop: SHOP, orders: ORDERS, seed: 1 } })
    })
    if (arrived.status !== 201) return yield* Effect.fail(new Error(`generated_orders: ${arrived.status} ${JSON.stringify(arrived.body)}`))
    const state = yield* json(`${base}/_state`, { headers: control })
    const seeded = (state.body.orders as ReadonlyArray<{ shop_id: string; milestones: ReadonlyArray<{ status: string }> }>)
      .filter((o) => o.shop_id === SHOP)
    const totalOrders = ORDERS + seeded.length
    const totalMilestones = ORDERS * 4 + seeded.reduce((n, o) => n + o.milestones.length, 0)
    const paidOrders = ORDERS + seeded.filter((o) => o.milestones.some((m) => m.status === "paid")).length

    // A paid order is a payment; a cash definition listing `payment` makes it a conversion, as a merchant would set up.
    yield* sql`
      INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, counts_as_cash, is_default)
      VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'purchase', 'event', ${["payment"]}, true, true)`
    const { id: connectionId } = yield* connections.upsertFromGrant({
      profileId,
      provider: "commerce",
      accountId: SHOP,
      displayName: SHOP,
      currency: "EUR",
      timezone: "UTC",
      providerUserId: null,
      tokens: {
        accessTokenSealed: box.seal(token.body.access_token),
        refreshTokenSealed: null,
        expiresAt: null,
        scopes: String(token.body.scope ?? "").split(" ")
      },
      appId: null,
      handoffId: null,
      shop: SHOP,
      status: "active",
      statusReason: null
    })
    const [queued] = yield* jobs.enqueue(profileId, [connectionId], "manual", null, "bench")
    if (queued === undefined) return yield* Effect.fail(new Error("no sync job queued"))
    const jobId = queued.job_id

    const copied = Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM commerce_orders WHERE profile_id = ${profileId}`,
      (rows) => rows[0]?.n ?? 0
    )
    const jobRow = Effect.flatMap(jobs.find(profileId, jobId), (row) =>
      Option.isSome(row) ? Effect.succeed(renderSyncJob(row.value)) : Effect.fail(new Error("the sync job is gone")))

    const serviceEnv = {
      ...process.env,
      HOST,
      SVC_PROVIDERS: "sandbox",
      SVC_SANDBOX_URL: sandboxUrl,
      LOG_LEVEL: "Warn"
    }
    const startService = Effect.promise(async () => {
      const port = await freePort()
      const service = startProcess(["src/main/node.ts"], { ...serviceEnv, PORT: String(port) }, "service")
      await waitFor(port, service.child, 120_000).catch((error: unknown) => {
        console.error(service.output())
        throw error
      })
      return service
    })
    // PostgreSQL's CPU is left out: summed over live backends, it goes backwards when they exit.
    const cpu = () => ({ sandbox: processCpuMs(sandboxPid) ?? 0 })
    const cpuStart = cpu()

    console.log(`bench:commerce — one shop, ${fmt(totalOrders)} orders (${fmt(ORDERS)} generated × 4 milestones), killed at ${KILL_AT * 100}%`)
    // 2. The first life: the worker claims the job and syncs until the kill.
    const t0 = performance.now()
    const first = yield* startService
    const ready1 = performance.now()
    let atKill = 0
    let claimed1 = 0
    while (true) {
      atKill = yield* copied
      if (atKill >= totalOrders * KILL_AT) break
      const row = yield* jobRow
      if (row.status === "done" || row.status === "failed") return yield* Effect.fail(new Error(`the job ended ${row.status} before the kill`))
      if (claimed1 === 0 && row.status === "running") claimed1 = performance.now()
      yield* Effect.promise(() => sleep(POLL_MS))
    }
    if (claimed1 === 0) claimed1 = ready1
    const rss1 = peakRssMb(first.child.pid)
    const cpu1 = processCpuMs(first.child.pid) ?? 0
    first.child.kill("SIGKILL")
    const killed = performance.now()
    yield* Effect.promise(() => stopProcess(first.child))
    const beforeResume = yield* sql<{ milestones: number }>`
      SELECT count(*)::int AS milestones FROM commerce_order_milestones WHERE profile_id = ${profileId}`
    const killRow = yield* jobRow
    console.log(
      `life 1    ${fmt(atKill).padStart(8)} orders in ${fmt((killed - claimed1) / 1000, 1).padStart(6)} s = ${fmt(atKill / ((killed - claimed1) / 1000)).padStart(6)} orders/s ` +
        `after the claim (start-up ${fmt((ready1 - t0) / 1000, 1)} s, claim ${fmt((claimed1 - ready1) / 1000, 1)} s later)  peak RSS ${fmt(rss1)} MB  CPU ${fmt(cpu1 / 1000, 1)} s  ` +
        `SIGKILL with the job ${killRow.status}, checkpoint progress ${fmt(killRow.progress.orders)} orders`
    )

    // 3. The second life: start-up, the dead lease expiring, the claim, the resumed sync.
    const second = yield* startService
    const ready2 = performance.now()
    let claimedAt = 0
    let row = yield* jobRow
    while (row.status !== "done") {
      if (row.status === "failed" || row.status === "cancelled") return yield* Effect.fail(new Error(`the job ended ${row.status}: ${row.error}`))
      if (claimedAt === 0 && row.attempts >= 2 && row.status === "running") claimedAt = performance.now()
      yield* Effect.promise(() => sleep(POLL_MS))
      row = yield* jobRow
    }
    const finished = performance.now()
    if (claimedAt === 0) claimedAt = finished
    const rss2 = peakRssMb(second.child.pid)
    const cpu2 = processCpuMs(second.child.pid) ?? 0
    yield* Effect.promise(() => stopProcess(second.child))
    const used = cpu()
    const reread = row.progress.orders - (totalOrders - atKill)
    console.log(
      `life 2    ${fmt(row.progress.orders).padStart(8)} orders in ${fmt((finished - claimedAt) / 1000, 1).padStart(6)} s = ` +
        `${fmt(row.progress.orders / ((finished - claimedAt) / 1000)).padStart(6)} orders/s after the claim  peak RSS ${fmt(rss2)} MB  CPU ${fmt(cpu2 / 1000, 1)} s`
    )
    console.log(
      `restart   start-up ${fmt((ready2 - killed) / 1000, 1)} s, lease wait to the claim ${fmt((claimedAt - ready2) / 1000, 1)} s, ` +
        `attempts ${row.attempts}; resumed at the checkpoint: ${fmt(Math.max(0, reread))} orders read again, ` +
        `${fmt(row.progress.milestones)} milestones written by attempt 2 (${fmt(totalMilestones - beforeResume[0]!.milestones)} were missing)`
    )
    const overall = (finished - ready1) / 1000
    console.log(
      `overall   ${fmt(totalOrders).padStart(8)} orders in ${fmt(overall, 1).padStart(6)} s = ${fmt(totalOrders / overall).padStart(6)} orders/s ` +
        `(kill, restart and lease wait included); syncing only ${fmt(totalOrders / ((killed - claimed1 + finished - claimedAt) / 1000))} orders/s`
    )
    console.log(
      `CPU s     service ${fmt((cpu1 + cpu2) / 1000, 1)}, sandbox ${fmt((used.sandbox - cpuStart.sandbox) / 1000, 1)}`
    )

    // 4. Exactly once, as the database holds it.
    const [found] = yield* sql<{
      orders: number
      milestones: number
      distinct_milestones: number
      outbox: number
      distinct_outbox: number
      unmatched: number
      per_generated: number
      payments: number
      distinct_payments: number
    }>`
      SELECT
        (SELECT count(*)::int FROM commerce_orders WHERE profile_id = ${profileId}) AS orders,
        (SELECT count(*)::int FROM commerce_order_milestones WHERE profile_id = ${profileId}) AS milestones,
        (SELECT count(DISTINCT (order_id, status))::int FROM commerce_order_milestones WHERE profile_id = ${profileId}) AS distinct_milestones,
        (SELECT count(*)::int FROM outbox WHERE profile_id = ${profileId} AND topic = 'order.status.changed') AS outbox,
        (SELECT count(DISTINCT (payload->'data'->>'order_id', payload->'data'->>'status'))::int
           FROM outbox WHERE profile_id = ${profileId} AND topic = 'order.status.changed') AS distinct_outbox,
        (SELECT count(*)::int FROM commerce_order_milestones m
           WHERE m.profile_id = ${profileId} AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = m.outbox_id)) AS unmatched,
        (SELECT count(*)::int FROM (
           SELECT order_id FROM commerce_order_milestones WHERE profile_id = ${profileId} AND order_id LIKE ${`order_${SHOP}_g%`}
           GROUP BY order_id HAVING count(*) = 4) g) AS per_generated,
        (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId} AND idempotency_key LIKE 'commerce:%') AS payments,
        (SELECT count(DISTINCT idempotency_key)::int FROM outcome_events
           WHERE profile_id = ${profileId} AND idempotency_key LIKE 'commerce:%') AS distinct_payments`
    const expected = {
      orders: totalOrders,
      milestones: totalMilestones,
      distinct_milestones: totalMilestones,
      outbox: totalMilestones,
      distinct_outbox: totalMilestones,
      unmatched: 0,
      per_generated: ORDERS,
      payments: paidOrders,
      distinct_payments: paidOrders
    }
    const wrong = Object.entries(expected).filter(([name, want]) => found?.[name as keyof typeof expected] !== want)
    console.log(
      `checked   ${fmt(found?.milestones ?? 0)} milestones (one per (order, status), ${fmt(found?.per_generated ?? 0)} generated orders with 4), ` +
        `${fmt(found?.outbox ?? 0)} order.status.changed rows, ${fmt(found?.payments ?? 0)} payments (${fmt(paidOrders)} paid orders)`
    )
    if (wrong.length > 0) {
      return yield* Effect.fail(new Error(`not exactly once: ${wrong.map(([name, want]) => `${name} ${found?.[name as keyof typeof expected]} (want ${want})`).join(", ")}`))
    }
  })

const sandboxPort = await freePort()
const sandboxProcess = startProcess(["sandbox/main.ts"], { ...process.env, SVC_SANDBOX_PORT: String(sandboxPort), HOST }, "sandbox")
const sandboxUrl = `http://${HOST}:${sandboxPort}/sandbox`
for (let i = 0; i < 100; i++) {
  // Test media answers without a credential (test controls do not): the sandbox is up.
  const up = await fetch(`${sandboxUrl}/commerce/media/ready.txt?bytes=0`).then((r) => r.ok, () => false)
  if (up) break
  await sleep(100)
}

await runInProcessBench(
  "commerce",
  "a PostgreSQL the bench may write 100,000 orders to (a fresh one per run)",
  main(sandboxUrl, sandboxProcess.child.pid),
  () =>
    Layer.mergeAll(SyncJobsRepo.layer, ConnectionsRepo.layer).pipe(
      Layer.provideMerge(SecretBox.layer),
      Layer.provideMerge(MigrationsLayer),
      Layer.provideMerge(DatabaseLayer),
      Layer.provide(Layer.effect(AppConfig)(loadSettings))
    )
)
await stopProcess(sandboxProcess.child)
