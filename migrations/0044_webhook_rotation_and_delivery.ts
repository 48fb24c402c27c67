import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Webhooks, second step (issue 21, decision 0095).
 *
 * - `webhook_subscriptions.older_secret_*`: a rotation keeps the previous two secrets until their
 *   own expiry, so a retried `rotate-secret` does not cut the oldest secret's 24-hour grace short.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE webhook_subscriptions ADD COLUMN older_secret_sealed text`
  yield* sql`ALTER TABLE webhook_subscriptions ADD COLUMN older_secret_expires_at timestamptz`
})
