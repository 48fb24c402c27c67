import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A profile's own business-associate agreement (BAA), needed before `hipaa` exports
 * (decision 0024). The DPA columns of apps and profiles exist since 0002.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    ALTER TABLE profiles
      ADD COLUMN baa_status text NOT NULL DEFAULT 'not_accepted'
        CHECK (baa_status IN ('not_accepted', 'accepted', 'withdrawn')),
      ADD COLUMN baa_version text,
      ADD COLUMN baa_accepted_at timestamptz,
      ADD COLUMN baa_accepted_by text`
})
