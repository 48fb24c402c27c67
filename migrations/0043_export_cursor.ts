import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The export sweep's durable cursor (decision 0094): per rule, the last (created_at, id) of
 * `conversions` it has looked at, so a conversion older than the sweep's window (an outage, a
 * stopped worker) is still queued once the worker runs again.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE export_sweep_cursors (
      rule_id uuid PRIMARY KEY REFERENCES export_rules (id),
      after_created_at timestamptz NOT NULL,
      after_id uuid NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // The cursor reads a rule's conversions in (created_at, id) order.
  yield* sql`CREATE INDEX conversions_export_cursor ON conversions (profile_id, conversion_key, created_at, id)`
})
