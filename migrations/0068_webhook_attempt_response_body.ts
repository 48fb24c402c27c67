import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The start of each webhook attempt's answer (decision 0134): the endpoint's own words beside its
 * status, as Stripe's and Svix's logs show them. Bounded like `error` is, checked here too; null
 * when no answer came or its body was empty. Attempts written before have none.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    ALTER TABLE webhook_delivery_attempts
      ADD COLUMN response_body text CHECK (char_length(response_body) <= 1000)`
})
