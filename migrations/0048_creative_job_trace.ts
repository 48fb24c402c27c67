import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The W3C trace context of the request that queued a creative analysis job (decision 0083):
 * the job runs as a span linked to that request. Null for older rows and untraced requests.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE creative_analysis_jobs ADD COLUMN traceparent text, ADD COLUMN tracestate text`
})
