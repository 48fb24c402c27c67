import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Rollups at the grain profile × day × model × dimension value (campaign rows: × level × id),
 * no longer also per touch-filter value (decision 0045): with ad-level filters and
 * high-cardinality dimensions those slices grew with the touches. Reads within a touch filter
 * read the raw facts of their range.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM analytics_credit_days WHERE filter_dimension <> ''`
  yield* sql`ALTER TABLE analytics_credit_days DROP COLUMN filter_dimension, DROP COLUMN filter_value`
  yield* sql`ALTER TABLE analytics_credit_days ADD PRIMARY KEY (profile_id, model, dimension, value, day, conversion_key, currency)`
  yield* sql`DELETE FROM analytics_touch_days WHERE filter_dimension <> ''`
  yield* sql`ALTER TABLE analytics_touch_days DROP COLUMN filter_dimension, DROP COLUMN filter_value`
  yield* sql`ALTER TABLE analytics_touch_days ADD PRIMARY KEY (profile_id, dimension, value, day)`
  yield* sql`DELETE FROM analytics_campaign_days WHERE filter_dimension <> ''`
  yield* sql`ALTER TABLE analytics_campaign_days DROP COLUMN filter_dimension, DROP COLUMN filter_value`
  yield* sql`ALTER TABLE analytics_campaign_days ADD PRIMARY KEY (profile_id, model, level, platform_id, day, conversion_key, currency)`
})
