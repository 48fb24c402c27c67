import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * An audience holdout's exclusion state (issue 32): each customer-list upload that left its
 * held-out customers out, with when, to which platform audience and how many (the latest 50; the
 * list uploads daily, so about seven weeks).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE experiments ADD COLUMN holdout_uploads jsonb NOT NULL DEFAULT '[]'::jsonb`
})
