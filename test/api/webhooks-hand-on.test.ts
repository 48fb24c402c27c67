/**
 * A batch handed on while a run leases its next rows (issue 34): the statement that records a row's
 * success makes the next row of its batch the head (`ready`), and the run's look-ahead may be
 * leasing that very row at the same moment. The hand-on must still land: were it lost, the run's
 * process dying before it sent the row would leave the batch with no head, and no claim would ever
 * take its rows again (seen in `bench:webhooks`' restart phase: 99 rows of a batch pending for good).
 * Two sessions on real PostgreSQL (the embedded database runs one transaction at a time): the
 * look-ahead is held open between its update and its commit, as a slow statement would be. And the
 * other way round: the heartbeat's renewal of a row must land while another transaction changes
 * that row (the batch handed on to it); skipped, the run would stop as if its lease were lost.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { leaseAheadStatement, settleStatement, WebhookDeliveriesRepo } from "../../src/webhooks/delivery/repo.ts"
import { onDatabase } from "../support/pg-databases.ts"

const url = process.env["DATABASE_URL"] ?? ""

const on = <A, E>(effect: Effect.Effect<A, E, SqlClient>) => Effect.promise(() => onDatabase(url, effect))

/** Whether some other session waits for a lock (the record behind the look-ahead). */
const someoneWaits = on(Effect.map(
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`),
  (rows) => (rows[0]?.n ?? 0) > 0
))

const url0 = "https://hooks.example.com/hand-on"

/** Waits until another session waits for a lock, failing after 20 s. */
const untilSomeoneWaits = (what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (!(yield* someoneWaits)) {
      if (Date.now() > deadline) assert.fail(what)
      yield* Effect.sleep("20 millis")
    }
  })

/**
 * A profile with one active subscription at `url0` and one batch of `size` due rows, the first its
 * head; the rows with `leased(k)` leased to `token` for a minute.
 */
const aBatch = (size: number, token: string, leased: (k: number) => boolean) =>
  Effect.gen(function*() {
    const profileId = crypto.randomUUID()
    const subscriptionId = crypto.randomUUID()
    const batchId = crypto.randomUUID()
    const ids = Array.from({ length: size }, () => crypto.randomUUID())
    const leasedRows = ids.map((_, k) => leased(k))
    yield* on(Effect.gen(function*() {
      const sql = yield* SqlClient
      const workspaceId = crypto.randomUUID()
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'hand-on')`
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'hand-on')`
      yield* sql`
        INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
        VALUES (${subscriptionId}, ${profileId}, ${workspaceId}, ${url0}, '{outcome.recorded}', 'active', 'sealed')`
      yield* sql`
        INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq, ready,
                                        next_attempt_at, lease_token, lease_until)
        SELECT (${ids}::uuid[])[k + 1], ${subscriptionId}, ${profileId}, gen_random_uuid(), 'evt-' || k, 'outcome.recorded', '{}',
               ${batchId}, k, k = 0, now() - interval '1 second',
               CASE WHEN (${leasedRows}::bool[])[k + 1] THEN ${token}::uuid END,
               CASE WHEN (${leasedRows}::bool[])[k + 1] THEN now() + interval '1 minute' END
        FROM generate_series(0, ${size - 1}::int) AS k`
    }))
    return { profileId, subscriptionId, batchId, ids }
  })

describe.skipIf(process.env["DATABASE_URL"] === undefined)("webhook batch hand-on", () => {
  it.live("a success hands its batch on even while the run's look-ahead leases the next row", () =>
    Effect.gen(function*() {
      const token = crypto.randomUUID()
      // A batch of three: the head leased to a run (sent, its success about to be recorded), two behind it.
      const { batchId, ids, profileId, subscriptionId } = yield* aBatch(3, token, (k) => k === 0)

      // The look-ahead leases rows 1 and 2, and its transaction stays open until `go`.
      const leased = yield* Deferred.make<number>()
      const go = yield* Deferred.make<void>()
      const lookAhead = yield* Effect.forkChild(on(Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`BEGIN`
        const rows = yield* leaseAheadStatement(sql, { subscriptionId, batchId, seq: 0, url: url0, secretSealed: "sealed" }, 16, 60, token)
        yield* Deferred.succeed(leased, rows.length)
        yield* Deferred.await(go)
        yield* sql`COMMIT`
      })))
      assert.strictEqual(yield* Deferred.await(leased), 2)

      // The head's success recorded meanwhile: it waits for the look-ahead's row, then hands the batch on.
      const record = yield* Effect.forkChild(on(Effect.flatMap(SqlClient, (sql) =>
        settleStatement(sql, [{
          id: ids[0]!,
          profileId,
          token,
          outcome: "succeeded",
          delaySeconds: 0,
          attempt: { statusCode: 200, error: null, durationMs: 3, responseBody: null }
        }]))))
      yield* untilSomeoneWaits("the record never waited for the look-ahead's row")
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(lookAhead)
      const ended = yield* Fiber.join(record)
      assert.deepStrictEqual([...ended].map((row) => row.ended_id), [ids[0]!])

      const rows = yield* on(Effect.flatMap(SqlClient, (sql) =>
        sql<{ seq: number; status: string; ready: boolean; leased: boolean }>`
          SELECT seq, status, ready, lease_token IS NOT NULL AS leased FROM webhook_deliveries
          WHERE profile_id = ${profileId} ORDER BY seq`))
      // Row 1 is the batch's head now, and still the run's (its lease kept): sent by the run, or
      // claimed by another once the lease runs out.
      assert.deepStrictEqual(rows, [
        { seq: 0, status: "succeeded", ready: true, leased: false },
        { seq: 1, status: "pending", ready: true, leased: true },
        { seq: 2, status: "pending", ready: false, leased: true }
      ])
    }), { timeout: 60_000 })

  it.live("the heartbeat renews a row while the batch is handed on to it", () =>
    Effect.gen(function*() {
      const token = crypto.randomUUID()
      // A run's two rows: the head and the next, both leased to it, the next not yet the head.
      const { ids, profileId } = yield* aBatch(2, token, () => true)

      // The batch handed on to the next row, in a transaction held open until `go`.
      const changed = yield* Deferred.make<void>()
      const go = yield* Deferred.make<void>()
      const handOn = yield* Effect.forkChild(on(Effect.gen(function*() {
        const sql = yield* SqlClient
        yield* sql`BEGIN`
        yield* sql`UPDATE webhook_deliveries SET ready = true WHERE id = ${ids[1]!} AND profile_id = ${profileId}`
        yield* Deferred.succeed(changed, undefined)
        yield* Deferred.await(go)
        yield* sql`COMMIT`
      })))
      yield* Deferred.await(changed)

      // The heartbeat meanwhile: it waits for that row, then renews both.
      const renewal = yield* Effect.forkChild(on(Effect.flatMap(WebhookDeliveriesRepo, (repo) =>
        repo.renew(ids.map((id) => ({ id, token })), 60)).pipe(Effect.provide(WebhookDeliveriesRepo.layer))))
      yield* untilSomeoneWaits("the renewal never waited for the handed-on row")
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(handOn)
      const renewed = yield* Fiber.join(renewal)
      assert.deepStrictEqual([...renewed].sort(), [...ids].sort())
    }), { timeout: 60_000 })
})
