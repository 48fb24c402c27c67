import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Webhooks, second step (issue 21, decision 0095).
 *
 * - `webhook_subscriptions.older_secret_*`: a rotation keeps the previous two secrets until their
 *   own expiry, so a retried `rotate-secret` does not cut the oldest secret's 24-hour grace short.
 * - `webhook_deliveries_due_seq`: the claim's order, so a claim stops at its limit.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE webhook_subscriptions ADD COLUMN older_secret_sealed text`
  yield* sql`ALTER TABLE webhook_subscriptions ADD COLUMN older_secret_expires_at timestamptz`
  // The claim reads due rows in (next_attempt_at, seq) order and stops at its limit: with this
  // order in an index it need not sort every pending row (and test each against its batch) first.
  yield* sql`CREATE INDEX webhook_deliveries_due_seq ON webhook_deliveries (next_attempt_at, seq) WHERE status = 'pending'`
})
