import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Where a sync job had got to (decision 0065): `sync_jobs.checkpoint`, written with the lease
 * renewal after each batch that is wholly in the database and kept when the job is claimed again,
 * so an attempt after a crash resumes there instead of from the first page. The commerce sync
 * keeps the `updated_at` of the last order written; other syncs leave it null.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE sync_jobs ADD COLUMN checkpoint text`
})
