import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Declared sources (decision 0033): what a customer answered when asked how they found the
 * business. One answer per customer (the first stands), idempotent on the answer message's id
 * (`wamid`). Each answer is also an `organic_interaction` touch, so attribution can use it.
 * `answer_text` is the person's own words (personal data: erased with the customer).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE declared_sources (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      customer_id uuid NOT NULL REFERENCES customers (id),
      answer_key text NOT NULL,
      answer_text text,
      wamid text,
      -- SHA-256 of the request as sent (normalised): a repeat of the wamid with another body is a conflict.
      request_hash text NOT NULL,
      answered_at timestamptz NOT NULL,
      touch_id uuid NOT NULL REFERENCES touches (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX declared_sources_customer ON declared_sources (customer_id)`
  yield* sql`CREATE UNIQUE INDEX declared_sources_wamid ON declared_sources (profile_id, wamid) WHERE wamid IS NOT NULL`
})
