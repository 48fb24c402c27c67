import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A fan-out that sends first attempts itself (decision 0157) holds its outbox rows by a lease, not
 * by its transaction: its results are written as they come, each in a short statement of its own,
 * while the rows stay unpublished until all of them are. A fan-out that dies leaves a lease that
 * runs out; the next one takes the rows again and writes only what was not written. Neither column
 * is indexed: taking and renewing a lease stays a heap-only update.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE outbox ADD COLUMN fan_out_token uuid, ADD COLUMN fan_out_until timestamptz`
})
