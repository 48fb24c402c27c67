import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The W3C trace context of the request that queued a row (decision 0083): `traceparent` and
 * `tracestate` as received, null when the row was queued outside a traced request. The job
 * that works the row starts its own span linked to that trace.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  for (const table of ["outbox", "work_jobs", "sync_jobs"]) {
    yield* sql`ALTER TABLE ${sql(table)} ADD COLUMN traceparent text, ADD COLUMN tracestate text`
  }
})
