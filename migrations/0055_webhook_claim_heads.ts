import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A webhook claim that reads only what it can hand out (issue 34).
 *
 * - `outbox.batch`: the producer's enqueued batch, by default the transaction that wrote the row
 *   (one producer call: a batch ingest, a sync page). The fan-out orders deliveries within it
 *   only (api-endpoints.md: "ordered within each enqueued batch"), not across unrelated events it
 *   happens to read together. Added without a default first, so existing rows are not rewritten.
 * - `webhook_deliveries.ready`: the row is the head of its (subscription, batch), the only one of
 *   it that may be attempted. The fan-out marks each batch's first row; the statement that ends a
 *   row marks the next one. The claim then walks, per subscription, only ready rows through
 *   `webhook_deliveries_ready` instead of testing every pending row against its batch (whose plan,
 *   costed on an empty table without ANALYZE, discarded about 0.9M rows per claim).
 * - The two due-order indexes served only the old claim.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE outbox ADD COLUMN batch bigint`
  yield* sql`ALTER TABLE outbox ALTER COLUMN batch SET DEFAULT (pg_current_xact_id()::text::bigint)`
  // The fan-out takes a producer batch whole: the rest of a batch its first rows belong to, in order.
  yield* sql`CREATE INDEX outbox_unpublished_batch ON outbox (batch, created_at, id) WHERE published_at IS NULL`
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN ready boolean NOT NULL DEFAULT false`
  yield* sql`
    UPDATE webhook_deliveries c SET ready = true
    WHERE c.status = 'pending' AND NOT EXISTS (
      SELECT 1 FROM webhook_deliveries e
      WHERE e.subscription_id = c.subscription_id AND e.batch_id = c.batch_id AND e.status = 'pending' AND e.seq < c.seq)`
  yield* sql`
    CREATE INDEX webhook_deliveries_ready ON webhook_deliveries (subscription_id, next_attempt_at, seq)
    WHERE status = 'pending' AND ready`
  yield* sql`DROP INDEX webhook_deliveries_due`
  yield* sql`DROP INDEX webhook_deliveries_due_seq`
})
