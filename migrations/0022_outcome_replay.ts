import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** The outcome replay (`GET /api/v1/outcomes/recorded`, decision 0044) reads a profile's outbox in order. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE INDEX outbox_profile_topic_order ON outbox (profile_id, topic, created_at, id)`
})
