/**
 * The commerce sync at volume, exactly once across an interruption (issue 18, Measure; decision
 * 0065): a shop of 1,000 generated orders (`generated_orders`, four milestones each) synced by the
 * worker stepped by hand, interrupted mid-sync, then taken up again: the second attempt resumes at
 * the job's checkpoint, and every milestone, its `order.status.changed` row and every paid
 * order's payment exist exactly once; a full re-read afterwards writes nothing. The real process
 * kill at 100,000 orders is `npm run bench:commerce`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { defaultSyncWorkerSettings, SyncWorker, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { call, TestServer } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { driveConsent, serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const ORDERS = 1_000
const BATCH = 50
const SHOP = "volume-sync"

const bearer = (key: string, method = "GET", body?: unknown) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** A test-control call on the key's profile's sandbox store world (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/commerce/${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** What the database holds for the profile: milestone rows, their outbox rows, payments. */
const counts = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{
      orders: number
      milestones: number
      distinct_milestones: number
      outbox: number
      distinct_outbox: number
      unmatched_outbox: number
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
           WHERE m.profile_id = ${profileId} AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = m.outbox_id)) AS unmatched_outbox,
        (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId} AND idempotency_key LIKE 'commerce:%') AS payments,
        (SELECT count(DISTINCT idempotency_key)::int FROM outcome_events
           WHERE profile_id = ${profileId} AND idempotency_key LIKE 'commerce:%') AS distinct_payments`
    return row!
  })

const job = (key: string, jobId: string) => Effect.map(call(`/api/v1/connections/sync/${jobId}`, bearer(key)), (r) => r.json.data)

// The worker is stepped by hand (no background fibers), 50 orders a batch: 1,000 orders are 20 batches.
const manual = Layer.succeed(SyncWorkerSettings)({
  ...defaultSyncWorkerSettings,
  enabled: false,
  batchSize: BATCH,
  lease: Duration.seconds(30)
})

layer(serveAppOnOwnPort().pipe(Layer.provide(manual)), { timeout: "120 seconds", excludeTestServices: true })("commerce sync at volume", (it) => {
  describe("exactly once across an interruption", () => {
    it.effect("an interrupted sync resumes at its checkpoint; each (order, status) is one milestone and one outbox row, each paid order one payment; a full re-read writes nothing", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"], rateLimitPerMinute: 1000 })
        yield* defineConversion(profile.profileId, "purchase", ["payment"], { countsAsCash: true, isDefault: true })
        const { url } = yield* TestServer
        const minted = yield* call("/api/v1/connections/commerce/handoff", bearer(key, "POST", { return_url: `${url}/done`, shop: SHOP }))
        assert.strictEqual(minted.status, 201, minted.text)
        const consent = yield* driveConsent(minted.json.data.start_url)
        assert.strictEqual(consent.status, 303)
        yield* Effect.promise(() => fetch(consent.location ?? "", { redirect: "manual" }).then((r) => r.text()))

        // The volume arrival: bad input is refused and changes nothing; then 1,000 orders.
        const refused = yield* sandbox(key, "PATCH", "_state", { arrive: { kind: "generated_orders", shop: SHOP, orders: 0 } })
        assert.strictEqual(refused.status, 400, refused.text)
        const arrived = yield* sandbox(key, "PATCH", "_state", { arrive: { kind: "generated_orders", shop: SHOP, orders: ORDERS, seed: 7 } })
        assert.strictEqual(arrived.status, 201, arrived.text)
        assert.strictEqual(arrived.json.orders, ORDERS)
        assert.strictEqual(arrived.json.milestones, ORDERS * 4)
        // The seeded orders of the shop (held by the sandbox) come on top of the generated ones.
        const state = yield* sandbox(key, "GET", "_state")
        const seeded = (state.json.orders as ReadonlyArray<{ shop_id: string; milestones: ReadonlyArray<{ status: string }> }>)
          .filter((o) => o.shop_id === SHOP)
        const totalOrders = ORDERS + seeded.length
        const totalMilestones = ORDERS * 4 + seeded.reduce((n, o) => n + o.milestones.length, 0)
        const paidOrders = ORDERS + seeded.filter((o) => o.milestones.some((m) => m.status === "paid")).length

        const queued = yield* call("/api/v1/connections/sync", bearer(key, "POST", {}))
        assert.strictEqual(queued.status, 202, queued.text)
        const jobId: string = queued.json.data[0].job_id
        const worker = yield* SyncWorker

        // 1. The first attempt, interrupted once about a third of the orders are in.
        const first = yield* Effect.forkChild(worker.runNext)
        yield* eventually(counts(profile.profileId), (c) => c.orders >= totalOrders / 3, { what: "a third of the orders", within: "60 seconds" })
        yield* Fiber.interrupt(first)
        const atInterrupt = yield* counts(profile.profileId)
        assert.isBelow(atInterrupt.orders, totalOrders, "interrupted before the end")
        const handedBack = yield* job(key, jobId)
        assert.strictEqual(handedBack.status, "queued", JSON.stringify(handedBack))
        assert.strictEqual(handedBack.attempts, 1)
        assert.isAbove(handedBack.progress.orders, 0, JSON.stringify(handedBack.progress))

        // 2. Taken up again: it resumes at the checkpoint (reads far fewer orders than the shop holds) and ends done.
        const second = yield* worker.runNext
        assert.isTrue(Option.isSome(second) && second.value.state === "done", JSON.stringify(second))
        const done = yield* job(key, jobId)
        assert.strictEqual(done.status, "done", JSON.stringify(done))
        assert.strictEqual(done.attempts, 2)
        assert.isBelow(done.progress.orders, totalOrders - atInterrupt.orders + 2 * BATCH, JSON.stringify(done.progress))
        const after = yield* counts(profile.profileId)
        // What the second attempt says it wrote is exactly what was missing.
        assert.strictEqual(done.progress.milestones, after.milestones - atInterrupt.milestones)
        assert.deepStrictEqual(after, {
          orders: totalOrders,
          milestones: totalMilestones,
          distinct_milestones: totalMilestones,
          outbox: totalMilestones,
          distinct_outbox: totalMilestones,
          unmatched_outbox: 0,
          payments: paidOrders,
          distinct_payments: paidOrders
        })

        // 3. A full re-read (as if the connection had never synced): every order again, nothing written twice.
        const sql = yield* SqlClient
        yield* sql`UPDATE connections SET last_synced_at = NULL WHERE profile_id = ${profile.profileId}`
        const again = yield* call("/api/v1/connections/sync", bearer(key, "POST", {}))
        assert.strictEqual(again.status, 202, again.text)
        const reread = yield* worker.runNext
        assert.isTrue(Option.isSome(reread) && reread.value.state === "done", JSON.stringify(reread))
        const rereadJob = yield* job(key, again.json.data[0].job_id)
        assert.strictEqual(rereadJob.progress.orders, totalOrders, JSON.stringify(rereadJob.progress))
        assert.strictEqual(rereadJob.progress.milestones, 0)
        assert.strictEqual(rereadJob.progress.products, 24)
        assert.deepStrictEqual(yield* counts(profile.profileId), after)
      }), 120_000)
  })
})
