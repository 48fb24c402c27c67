import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A connection's queued sync jobs in claim order: the claim takes a job only when no older job of
 * its connection waits (a claimer that skipped the older job, locked by another claimer, took the
 * newer one and ran it first), and probes that through this index whatever the statistics.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE INDEX sync_jobs_connection_queued ON sync_jobs (connection_id, run_after, created_at, id) WHERE status = 'queued'`
})
