/**
 * The outbox insert tests each row against its profile's subscriptions (decision 0156) by a probe,
 * whatever the planner believes of `webhook_subscriptions`: a statistics-free database, or one
 * analyzed while the table was small, prices a sequential scan as cheap, and a pooled connection
 * keeps that plan while the table grows. Here a planner that prices every index read out
 * (`random_page_cost` 1000, in the transaction) runs the insert of 21 rows beside 5,000
 * subscriptions of another profile: the insert must read a few buffers per row, where the same
 * test written inline in the statement reads the whole table per row (the control below).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { outboxInsertStatement } from "../../src/kernel/outbox/repo.ts"
import { onTestDatabase } from "../support/claim-plan.ts"

const SUBSCRIPTIONS = 5_000
/** Buffers a row's probe may read (an index descent and a heap page or two). */
const PER_ROW = 20

interface Explained {
  readonly Plan: { readonly "Shared Hit Blocks": number; readonly "Shared Read Blocks": number }
}

// PostgreSQL's planner on the server the service runs against; the embedded database runs the same
// statement in every other test that records an event.
describe.skipIf(process.env["DATABASE_URL"] === undefined)("outbox insert plan", () => {
  it.effect("a row's subscriptions are probed, not scanned, when the planner prices scans as cheap", () =>
    onTestDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient
      const workspaceId = crypto.randomUUID()
      const [quiet, busy, subscribed] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
      const rows = [
        ...Array.from({ length: 20 }, () => ({ id: crypto.randomUUID(), profileId: quiet, topic: "outcome.recorded", payload: { data: {} } })),
        { id: crypto.randomUUID(), profileId: subscribed, topic: "outcome.recorded", payload: { data: {} } }
      ]
      const buffers = (text: string, params: ReadonlyArray<unknown>) =>
        Effect.map(
          sql.unsafe<{ "QUERY PLAN": ReadonlyArray<Explained> }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params),
          ([row]) => {
            const plan = row!["QUERY PLAN"][0]!.Plan
            return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
          }
        )
      // One connection (as `onTestDatabase` gives): everything below is rolled back.
      yield* sql.unsafe("BEGIN")
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'outbox insert plan')`
      yield* sql`
        INSERT INTO profiles (id, workspace_id, name)
        VALUES (${quiet}, ${workspaceId}, 'quiet'), (${busy}, ${workspaceId}, 'busy'), (${subscribed}, ${workspaceId}, 'subscribed')`
      yield* sql`
        INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
        SELECT gen_random_uuid(), ${busy}::uuid, ${workspaceId}::uuid, 'https://hooks.example.com/' || g, '{outcome.recorded}'::text[], 'active', repeat('s', 200)
        FROM generate_series(1, ${SUBSCRIPTIONS}::int) AS g
        UNION ALL
        SELECT gen_random_uuid(), ${subscribed}::uuid, ${workspaceId}::uuid, 'https://hooks.example.com/one', '{outcome.recorded}'::text[], 'active', 's'`
      yield* sql.unsafe("SET LOCAL random_page_cost = 1000")
      const [text, params] = outboxInsertStatement(sql, rows).compile()
      const read = yield* buffers(text, params)
      // The control: the same test inline, planned here, scans the subscriptions for each row.
      const inline = text.replace(
        /webhook_topic_wanted\(t\.profile_id, t\.topic\)/,
        "EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.profile_id = t.profile_id AND s.deleted_at IS NULL AND s.status <> 'disabled' AND t.topic = ANY (s.event_types))"
      )
      assert.notStrictEqual(inline, text)
      // Other ids (its rows are rolled back with the rest).
      const control = yield* buffers(inline, [rows.map(() => crypto.randomUUID()), ...params.slice(1)])
      const published = yield* sql<{ profile_id: string; published: boolean }>`
        SELECT profile_id, published_at IS NOT NULL AS published FROM outbox WHERE id = ANY(${rows.map((r) => r.id)}::uuid[])`
      yield* sql.unsafe("ROLLBACK")
      console.log(`outbox insert of ${rows.length} rows beside ${SUBSCRIPTIONS} subscriptions: ${read} buffers; the test inline: ${control}`)
      assert.isBelow(read, rows.length * PER_ROW)
      assert.isAbove(control, rows.length * PER_ROW, "the control did not scan: the setting no longer prices index reads out")
      assert.strictEqual(published.length, rows.length)
      for (const row of published) assert.strictEqual(row.published, row.profile_id === quiet, row.profile_id)
    })), { timeout: 120_000 })
})
