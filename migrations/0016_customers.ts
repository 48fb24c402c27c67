import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Customers, journeys and erasure (decision 0038): erasure receipts, and the indexes the
 * journeys and merges walk (customers merged into a survivor, payments assigned to a payer,
 * outcome events of a customer by time).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE customer_erasures (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      request_ref text NOT NULL,
      -- The erased customer row (kept, emptied); never answered.
      customer_id uuid NOT NULL REFERENCES customers (id),
      -- The sender's own id of the customer, as it was; the receipt answers it.
      customer_key text,
      reason text,
      -- SHA-256 of (this row's id, the selector as sent): a repeat of the request_ref with the same
      -- selector answers this receipt, with another one is refused. Salted per row, never answered.
      selector_digest text NOT NULL,
      status text NOT NULL DEFAULT 'completed' CHECK (status IN ('completed')),
      requested_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz,
      -- What was deleted or unlinked, for the audit trail (counts only).
      counts jsonb NOT NULL DEFAULT '{}'::jsonb,
      UNIQUE (profile_id, request_ref)
    )`
  // Keys of merged customers still name their survivor: looked up whatever the merge state.
  yield* sql`CREATE INDEX customers_key ON customers (profile_id, customer_key) WHERE customer_key IS NOT NULL`
  yield* sql`CREATE INDEX customers_merged_into ON customers (merged_into_id) WHERE merged_into_id IS NOT NULL`
  yield* sql`CREATE INDEX customers_profile_created ON customers (profile_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX conversions_payer ON conversions (payer_customer_id) WHERE payer_customer_id IS NOT NULL`
  yield* sql`CREATE INDEX outcome_events_customer_time ON outcome_events (customer_id, occurred_at) WHERE customer_id IS NOT NULL`
})
