import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The W3C trace context of report work (decisions 0083, 0101), in columns like migration 0038's:
 * on `reports`, the request that set the schedule (until now under `schedule -> 'queued_by'`,
 * moved here and stripped from the JSON); on `report_runs`, the request a run belongs to (a
 * scheduled run copies its report's at enqueue, a manual run its own request's), so a run taken
 * over after a crash keeps its link. Null for untraced requests.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  for (const table of ["reports", "report_runs"]) {
    yield* sql`ALTER TABLE ${sql(table)} ADD COLUMN traceparent text, ADD COLUMN tracestate text`
  }
  yield* sql`
    UPDATE reports SET traceparent = schedule -> 'queued_by' ->> 'traceparent',
      tracestate = NULLIF(schedule -> 'queued_by' ->> 'tracestate', ''),
      schedule = schedule - 'queued_by'
    WHERE schedule -> 'queued_by' IS NOT NULL`
  yield* sql`
    UPDATE report_runs rr SET traceparent = r.traceparent, tracestate = r.tracestate
    FROM reports r WHERE r.id = rr.report_id AND rr.trigger = 'scheduled' AND rr.traceparent IS NULL AND r.traceparent IS NOT NULL`
})
