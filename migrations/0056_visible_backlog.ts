import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A backlog you can see and bound (issue 34 item 6, decision 0120): exact partial indexes for the
 * backlog reads, so each is a bounded index walk whatever the planner's statistics.
 *
 * - per subscription / destination, its waiting rows by age: the depth (counted up to a cap), the
 *   oldest waiting row (the first entry), and the paused-subscription drop (the rows past the age);
 * - per subscription / destination, what was delivered by time: the last minute's deliveries.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE INDEX webhook_deliveries_pending_age ON webhook_deliveries (subscription_id, created_at)
    WHERE status = 'pending'`
  yield* sql`
    CREATE INDEX webhook_deliveries_succeeded_at ON webhook_deliveries (subscription_id, completed_at)
    WHERE status = 'succeeded'`
  yield* sql`
    CREATE INDEX conversion_exports_waiting_age ON conversion_exports (destination_id, created_at)
    WHERE status IN ('pending', 'held')`
  yield* sql`
    CREATE INDEX export_deliveries_delivered_at ON export_deliveries (destination_id, created_at)
    WHERE decision = 'delivered' AND NOT is_test`
})
