import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The process holding a running job's lease, as its liveness key (decision 0150), as sync jobs
 * have it (migration 0076): a replay whose runner died is taken over at once. Null for a lease
 * taken without a key (expiry alone decides).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE work_jobs ADD COLUMN lease_holder bigint`
})
