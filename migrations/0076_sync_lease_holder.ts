import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The process holding a running sync job's lease, as its liveness key (decision 0150): a claimer
 * takes over a job whose holder's lock is gone at once, not when the lease runs out. Null for a
 * lease taken without a key (expiry alone decides, as before).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE sync_jobs ADD COLUMN lease_holder bigint`
})
