import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * One running sync job per connection (decision 0058, 0115), held by the database: a unique
 * index over the connection of `running` jobs, so two claimers that both saw the connection idle
 * cannot both start one (the claim's `NOT EXISTS` check raced under `SKIP LOCKED`). Where that
 * race already left two running, the one with the later lease keeps running; the others go back
 * to the queue (their runners stop at their next fenced write, which needs `running`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE sync_jobs j SET status = 'queued', lease_until = NULL, updated_at = now()
    WHERE j.status = 'running' AND j.id <> (
      SELECT k.id FROM sync_jobs k WHERE k.connection_id = j.connection_id AND k.status = 'running'
      ORDER BY k.lease_until DESC NULLS LAST, k.started_at DESC NULLS LAST, k.id LIMIT 1)`
  yield* sql`CREATE UNIQUE INDEX sync_jobs_one_running ON sync_jobs (connection_id) WHERE status = 'running'`
})
