import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The W3C trace context of the request that queued a webhook delivery (issue 22, decision 0083):
 * copied from its outbox row at fan-out, so each attempt runs as a span linked to that request.
 * Null for rows older than this migration and for events no traced request queued.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN traceparent text, ADD COLUMN tracestate text`
})
