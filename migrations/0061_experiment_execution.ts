import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A switchback's execution (decision 0124): the target's status before the experiment, each
 * schedule day already applied (with its ad-action id) and the restore on stop or completion. A
 * day recorded here is never applied again: a repeated day transition is one ledger entry.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE experiments ADD COLUMN execution jsonb`
  // The day tick's read: switchbacks still to advance or to restore.
  yield* sql`
    CREATE INDEX experiments_switchback_due ON experiments (status)
    WHERE kind = 'switchback' AND execution IS NOT NULL AND execution->'restored' = 'null'::jsonb`
})
