import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A customer list's sync lease gets a token (decision 0119): the lease is short and renewed by its
 * holder while the sync runs, and the renewal and every write of the sync are fenced by the token,
 * so a holder whose lease ran out and was taken over writes nothing. A lease without a token is a
 * failed refresh holding the list back until its retry (the daily refresh honours it, a request does not).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE customer_list_audiences ADD COLUMN sync_lease_token uuid`
})
