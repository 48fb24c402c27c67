import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Connection health of the sending channels (issue 21 part 5, decision 0092).
 *
 * - `connection_health`: one row per connection whose health was ever decided by a send:
 *   `needs_action` or `reconnect_required` after a provider refusal, `ok` once a send is accepted
 *   again. A connection without a row is `ok`. The refusal's code is kept so the
 *   `channel.health.updated` event can say why. Deleted with its connection.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE connection_health (
      connection_id uuid PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
      profile_id uuid NOT NULL,
      provider text NOT NULL,
      health text NOT NULL CHECK (health IN ('ok', 'needs_action', 'reconnect_required')),
      reason text,
      provider_code text,
      changed_at timestamptz NOT NULL DEFAULT now()
    )`
})
