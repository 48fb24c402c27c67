/**
 * The backlog read's cost does not follow the backlog, whatever the planner knows (decision 0120).
 * As for the claim (test/api/webhooks-claim-plan.test.ts): autovacuum is off and nothing runs
 * ANALYZE, so the statement is prepared with its generic plan forced and EXPLAINed at 0, 20,000
 * and 200,000 pending rows of one subscription (plus as many succeeded in the last minute): it
 * walks `webhook_deliveries_pending_age` and `webhook_deliveries_succeeded_at`, stops at its caps,
 * and costs at 200,000 within 2x of 20,000.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP } from "../../schema/common.ts"
import { backlogStatement } from "../../src/webhooks/delivery/repo.ts"
import { onDatabase } from "../support/pg-databases.ts"

const literal = (value: unknown): string => {
  if (Array.isArray(value)) return literal(`{${value.map((item) => `"${String(item)}"`).join(",")}}`)
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return `'${String(value).replace(/'/g, "''")}'`
}

// PostgreSQL's planner on the server the service runs against; seeding 200,000 rows into the
// embedded database (the same planner, in WebAssembly) would take minutes of the suite.
describe.skipIf(process.env["DATABASE_URL"] === undefined)("backlog read plan", () => {
  it.effect("the subscription backlog's generic plan walks its indexes and costs at 200,000 rows within 2x of 20,000 (no ANALYZE)", () =>
    Effect.promise(() =>
      onDatabase(process.env["DATABASE_URL"] ?? "", Effect.gen(function*() {
        const sql = yield* SqlClient
        const workspaceId = crypto.randomUUID()
        const profileId = crypto.randomUUID()
        const subscriptionId = crypto.randomUUID()
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'backlog plan')`
        yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'backlog plan')`
        yield* sql`
          INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
          VALUES (${subscriptionId}, ${profileId}, ${workspaceId}, 'https://hooks.example.com/', '{outcome.recorded}', 'paused', 'x')`
        // Half pending, half succeeded within the last minute.
        const fill = (from: number, to: number) =>
          sql`
            INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq,
                                            status, completed_at, created_at)
            SELECT gen_random_uuid(), ${subscriptionId}, ${profileId}, gen_random_uuid(), 'evt-' || g, 'outcome.recorded', '{}',
                   gen_random_uuid(), 0, CASE WHEN g % 2 = 0 THEN 'pending' ELSE 'succeeded' END,
                   CASE WHEN g % 2 = 0 THEN NULL ELSE now() END, now() - make_interval(secs => g)
            FROM generate_series(${from}::int, ${to - 1}::int) AS g`
        const [text, params] = backlogStatement(sql, [subscriptionId], BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP).compile()
        const args = `(${params.map(literal).join(", ")})`
        const measure = (rows: number) =>
          Effect.gen(function*() {
            yield* sql.unsafe(`SET plan_cache_mode = force_generic_plan`)
            yield* sql.unsafe(`PREPARE measured AS ${text}`)
            const [explained] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: { "Total Cost": number } }> }>(
              `EXPLAIN (FORMAT JSON) EXECUTE measured${args}`
            )
            const plan = (yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE measured${args}`)).map((row) => row["QUERY PLAN"]).join("\n")
            const started = performance.now()
            const [answer] = yield* sql.unsafe<{ pending: number; oldest_pending_age_seconds: number | null; delivered_last_minute: number }>(
              `EXECUTE measured${args}`
            )
            const ms = performance.now() - started
            yield* sql.unsafe(`DEALLOCATE measured`)
            yield* sql.unsafe(`RESET plan_cache_mode`)
            return { rows, cost: explained!["QUERY PLAN"][0]!.Plan["Total Cost"], plan, answer: answer!, ms }
          })
        const at0 = yield* measure(0)
        yield* fill(0, 20_000)
        const at20k = yield* measure(20_000)
        yield* fill(20_000, 200_000)
        const at200k = yield* measure(200_000)
        for (const depth of [at0, at20k, at200k]) {
          console.log(`backlog read at ${depth.rows} rows: generic-plan cost ${depth.cost.toFixed(1)}, run in ${depth.ms.toFixed(1)} ms, ${JSON.stringify(depth.answer)}`)
        }
        console.log(at200k.plan)
        assert.deepInclude(at0.answer, { pending: 0, oldest_pending_age_seconds: null, delivered_last_minute: 0 })
        assert.strictEqual(at20k.answer.pending, BACKLOG_COUNT_CAP)
        assert.strictEqual(at20k.answer.delivered_last_minute, 10_000)
        assert.strictEqual(at200k.answer.pending, BACKLOG_COUNT_CAP)
        assert.strictEqual(at200k.answer.delivered_last_minute, BACKLOG_RATE_CAP)
        assert.isAtLeast(at200k.answer.oldest_pending_age_seconds ?? 0, 199_990)
        assert.isAtMost(at200k.cost, 2 * at20k.cost, `cost ${at200k.cost} at 200,000 vs ${at20k.cost} at 20,000`)
        assert.include(at200k.plan, "webhook_deliveries_pending_age")
        assert.include(at200k.plan, "webhook_deliveries_succeeded_at")
        assert.notInclude(at200k.plan, "Seq Scan on webhook_deliveries")
      }))
    ), { timeout: 300_000 })
})
