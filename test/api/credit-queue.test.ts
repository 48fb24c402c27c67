/**
 * The credit queue (decision 0152) under a change that races a crediting in flight: a conversion
 * queued again while it is being credited (a merge, a link, a touch that joined its customer) must
 * be credited again after, whether the crediting is the worker's (it holds the queue row) or a
 * replay's (it may hold none). Two sessions on real PostgreSQL (the embedded database runs one
 * transaction at a time, so nothing can race there); the crediting is held open between its lock
 * and its settle, as a slow batch would be. And a requeue that meets a replay takes the queue rows
 * in the replay's order, so neither waits on the other in a cycle (a deadlock PostgreSQL would end
 * by failing one of them).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { CreditEngine } from "../../src/attribution/engine.ts"
import { EventsRepo } from "../../src/attribution/conversions/repo.ts"
import { CreditsRepo } from "../../src/attribution/credits/repo.ts"
import { AttributionRepo, type CreditTarget } from "../../src/attribution/repo.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { seedProfile } from "../support/tenancy.ts"

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })
const Repos = CreditEngine.layer.pipe(Layer.provideMerge(Layer.mergeAll(AttributionRepo.layer, CreditsRepo.layer, EventsRepo.layer)))

/** A purchase of the customer: its outcome event, the event's key and its conversion (queued, as ingest leaves it). */
const purchase = (p: { profileId: string; customerId: string; eventId: string; conversionId: string; at: Date }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`
      WITH e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
        VALUES (${p.eventId}, ${p.profileId}, ${p.eventId}, 'test', 'purchase', ${p.at}, ${p.customerId})
        RETURNING profile_id, idempotency_key, id, occurred_at)
      INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
    yield* sql`
      INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, customer_id, counts_as_cash, attribution_eligible)
      VALUES (${p.conversionId}, ${p.profileId}, ${p.eventId}, 'purchase', ${p.at}, ${p.customerId}, false, true)`
  })

/** A customer with one touch and one conversion (queued, as ingest leaves it). */
const world = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { profileId } = yield* seedProfile()
  const customerId = crypto.randomUUID()
  const eventId = crypto.randomUUID()
  const conversionId = crypto.randomUUID()
  const at = new Date(Date.now() - 3_600_000)
  yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${customerId}, ${profileId}, 'racer')`
  yield* sql`
    INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id)
    VALUES (${crypto.randomUUID()}, ${profileId}, 'web_touch', ${new Date(at.getTime() - 60_000)}, 'paid_search', ${customerId})`
  yield* purchase({ profileId, customerId, eventId, conversionId, at })
  return { profileId, customerId, conversionId, at: at.toISOString() }
})

const isQueued = (conversionId: string) =>
  Effect.map(
    Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM credit_queue WHERE conversion_id = ${conversionId}`),
    (rows) => rows[0]?.n === 1
  )

/** Whether some session waits for a row lock (the requeue behind the crediting). */
const someoneWaits = Effect.map(
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`),
  (rows) => (rows[0]?.n ?? 0) > 0
)

/**
 * Locks what `lock` locks in one transaction, signals `locked`, waits for `go`, then credits and
 * settles what it locked (the engine's own write), and commits.
 */
const creditingHeldOpen = (
  lock: Effect.Effect<ReadonlyArray<CreditTarget>, DatabaseUnavailable>,
  locked: Deferred.Deferred<void>,
  go: Deferred.Deferred<void>
) =>
  Effect.gen(function*() {
    const repo = yield* AttributionRepo
    const engine = yield* CreditEngine
    return yield* repo.transaction(Effect.gen(function*() {
      yield* repo.tuneTransaction
      const targets = yield* lock
      yield* Deferred.succeed(locked, undefined)
      yield* Deferred.await(go)
      yield* engine.credit(targets, () => undefined)
      return targets
    }))
  })

/**
 * Holds a crediting of what `lock` locks open and requeues the customer's conversions meanwhile.
 * `waits`: the requeue must wait for the crediting (it meets a queue row the crediting holds), and
 * completes once the crediting commits; otherwise it must complete at once. Answers the crediting's targets.
 */
const requeueDuring = (lock: Effect.Effect<ReadonlyArray<CreditTarget>, DatabaseUnavailable>, customerId: string, waits: boolean) =>
  Effect.gen(function*() {
    const events = yield* EventsRepo
    const locked = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const crediting = yield* Effect.forkChild(creditingHeldOpen(lock, locked, go))
    yield* Deferred.await(locked)
    const requeue = yield* Effect.forkChild(events.recreditCustomers([customerId]))
    if (waits) yield* eventually(someoneWaits, (waiting) => waiting, { what: "the requeue to wait for the crediting", within: "10 seconds" })
    else yield* Fiber.join(requeue).pipe(Effect.timeout("10 seconds"))
    yield* Deferred.succeed(go, undefined)
    const targets = yield* Fiber.join(crediting)
    yield* Fiber.join(requeue)
    return targets
  })

/**
 * A customer with two queued conversions, `low` and `high` by id, `high` the earlier one and
 * written first: read by customer (its index is in time order, the table in write order), a
 * requeue meets `high` before `low`, the reverse of a replay's id order.
 */
const twoConversions = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { profileId } = yield* seedProfile()
  const customerId = crypto.randomUUID()
  const [low, high] = [crypto.randomUUID(), crypto.randomUUID()].sort()
  const now = Date.now()
  const times = new Map([[high!, new Date(now - 7_200_000)], [low!, new Date(now - 3_600_000)]])
  yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${customerId}, ${profileId}, 'two')`
  for (const id of [high!, low!]) yield* purchase({ profileId, customerId, eventId: id, conversionId: id, at: times.get(id)! })
  return { profileId, customerId, low: { id: low!, at: times.get(low!)!.toISOString() }, high: { id: high!, at: times.get(high!)!.toISOString() } }
})

layer(serveApp(testSettings()).pipe(Layer.provide(manual)), { timeout: "120 seconds", excludeTestServices: true })("credit queue", (it) => {
  describe.skipIf(process.env["DATABASE_URL"] === undefined)("a conversion queued again while it is being credited is credited again", () => {
    it.effect("by the worker: the requeue waits for the crediting, then queues it", () =>
      Effect.gen(function*() {
        const w = yield* world
        const repo = yield* AttributionRepo
        const targets = yield* requeueDuring(repo.lockPending(10, { id: w.conversionId, profile_id: w.profileId, occurred_at: w.at }), w.customerId, true)
        assert.deepStrictEqual(targets.map((target) => [target.id, target.queued]), [[w.conversionId, true]])
        assert.isTrue(yield* isQueued(w.conversionId), "queued again after the crediting")
      }).pipe(Effect.provide(Repos)))

    it.effect("by a replay: a conversion it found credited and that was queued meanwhile stays queued", () =>
      Effect.gen(function*() {
        const w = yield* world
        const repo = yield* AttributionRepo
        const engine = yield* CreditEngine
        // Credited first: out of the queue.
        yield* repo.transaction(Effect.gen(function*() {
          yield* repo.tuneTransaction
          yield* engine.credit(yield* repo.lockPending(10, { id: w.conversionId, profile_id: w.profileId, occurred_at: w.at }), () => undefined)
        }))
        assert.isFalse(yield* isQueued(w.conversionId), "credited before the replay")
        // Nothing of the queue is held: the requeue goes through at once.
        const targets = yield* requeueDuring(repo.lockReplayTargets(w.profileId, [w.conversionId], [w.at]), w.customerId, false)
        assert.deepStrictEqual(targets.map((target) => [target.id, target.queued]), [[w.conversionId, false]])
        assert.isTrue(yield* isQueued(w.conversionId), "the replay's settle left the row queued after its lock")
      }).pipe(Effect.provide(Repos)))

    it.effect("by a replay: a queued conversion it locked leaves the queue, and a requeue behind it queues it again", () =>
      Effect.gen(function*() {
        const w = yield* world
        const repo = yield* AttributionRepo
        const targets = yield* requeueDuring(repo.lockReplayTargets(w.profileId, [w.conversionId], [w.at]), w.customerId, true)
        assert.deepStrictEqual(targets.map((target) => [target.id, target.queued]), [[w.conversionId, true]])
        assert.isTrue(yield* isQueued(w.conversionId), "queued again after the replay")
      }).pipe(Effect.provide(Repos)))

    it.effect("a requeue that meets a replay waits for it, and neither is failed as a deadlock", () =>
      Effect.gen(function*() {
        const w = yield* twoConversions
        const repo = yield* AttributionRepo
        const events = yield* EventsRepo
        const holdsLow = yield* Deferred.make<void>()
        const requeueWaits = yield* Deferred.make<void>()
        // The replay locks in id order: `low`, then `high`. Paused between the two, as its one
        // statement is when the second row is locked by someone else.
        const replay = yield* Effect.forkChild(repo.transaction(Effect.gen(function*() {
          yield* repo.tuneTransaction
          const first = yield* repo.lockReplayTargets(w.profileId, [w.low.id], [w.low.at])
          yield* Deferred.succeed(holdsLow, undefined)
          yield* Deferred.await(requeueWaits)
          const second = yield* repo.lockReplayTargets(w.profileId, [w.high.id], [w.high.at])
          return [...first, ...second].map((target) => target.id)
        })))
        yield* Deferred.await(holdsLow)
        const requeue = yield* Effect.forkChild(Effect.exit(events.recreditCustomers([w.customerId])))
        yield* eventually(someoneWaits, (waiting) => waiting, { what: "the requeue to wait for the replay", within: "10 seconds" })
        yield* Deferred.succeed(requeueWaits, undefined)
        const locked = yield* Effect.exit(Fiber.join(replay))
        const requeued = yield* Fiber.join(requeue)
        assert.deepStrictEqual([locked._tag, requeued._tag], ["Success", "Success"], `replay: ${String(locked)}; requeue: ${String(requeued)}`)
        assert.isTrue(yield* isQueued(w.low.id), "low queued after the replay")
        assert.isTrue(yield* isQueued(w.high.id), "high queued after the replay")
      }).pipe(Effect.provide(Repos)))
  })
})
