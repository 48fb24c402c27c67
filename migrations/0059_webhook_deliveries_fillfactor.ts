import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Room on each page of `webhook_deliveries` for a row's next version (issue 34): a lease taken or
 * renewed changes only unindexed columns (`lease_token`, `lease_until`, `first_attempt_at`), and
 * with free space on its page PostgreSQL writes it as a heap-only tuple, adding no entry to any of
 * the table's seven indexes. Full pages (the default fillfactor of 100) made every lease a new
 * entry in each index. Pages written from now on keep the room.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE webhook_deliveries SET (fillfactor = 70)`
})
