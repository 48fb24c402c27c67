import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Audience exclusions (issue 20, decision 0099): the customers a profile keeps out of every
 * audience. `PUT /profiles/{profileId}/audience-exclusions` replaces the set. Deleted with the
 * profile or the customer.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE audience_exclusions (
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, customer_id)
    )`
})
