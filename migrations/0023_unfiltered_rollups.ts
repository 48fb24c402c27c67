import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Credit-day and touch-day rollups keep one slice per dimension value, no longer one per
 * (touch filter value × dimension value) (decision 0045): with ad-level filters and
 * high-cardinality dimensions those slices grew with the touches. Filtered breakdowns now read
 * the raw facts of their range.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM analytics_credit_days WHERE filter_dimension <> ''`
  yield* sql`ALTER TABLE analytics_credit_days DROP COLUMN filter_dimension, DROP COLUMN filter_value`
  yield* sql`ALTER TABLE analytics_credit_days ADD PRIMARY KEY (profile_id, model, dimension, value, day, conversion_key, currency)`
  yield* sql`DELETE FROM analytics_touch_days WHERE filter_dimension <> ''`
  yield* sql`ALTER TABLE analytics_touch_days DROP COLUMN filter_dimension, DROP COLUMN filter_value`
  yield* sql`ALTER TABLE analytics_touch_days ADD PRIMARY KEY (profile_id, dimension, value, day)`
})
