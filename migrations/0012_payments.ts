import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Payments (decision 0032): the merchant's actions on a payment (a conversion whose definition
 * counts as cash) as the current state on the conversion (installment mark, assigned payer,
 * manual refund), and their history in `payment_actions` (who did what, when). History rows
 * point at the outcome event (a retraction keeps it as a tombstone), not at the conversion
 * (a retraction deletes it), so they outlive both.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  // A later installment is never a first payment (src/ingestion/events/payments/first-payments.ts).
  yield* sql`ALTER TABLE conversions ADD COLUMN installment boolean NOT NULL DEFAULT false`
  // The customer the merchant said paid. While set, `customer_id` is this customer: first
  // payments and attribution follow the payer; the event keeps the customer it was sent with.
  yield* sql`ALTER TABLE conversions ADD COLUMN payer_customer_id uuid REFERENCES customers (id)`
  // A refund recorded by the merchant outside any provider. Analytics exclude a conversion with
  // `refunded_at` set from outcome counts; `refund_amount` is null when the payment had no value.
  yield* sql`ALTER TABLE conversions ADD COLUMN refund_amount numeric(20, 6)`
  yield* sql`ALTER TABLE conversions ADD COLUMN refunded_at timestamptz`
  yield* sql`ALTER TABLE conversions ADD COLUMN refund_reason text`
  yield* sql`
    CREATE INDEX conversions_payments ON conversions (profile_id, occurred_at DESC, id DESC) WHERE counts_as_cash`
  yield* sql`
    CREATE TABLE payment_actions (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      -- The payment (conversions.id); no foreign key: the history outlives a retracted conversion.
      payment_id uuid NOT NULL,
      outcome_event_id uuid NOT NULL REFERENCES outcome_events (id),
      action text NOT NULL CHECK (action IN ('installment_marked', 'installment_unmarked', 'payer_assigned',
                                             'payer_cleared', 'refund_recorded', 'refund_undone')),
      actor_kind text NOT NULL,
      actor_id text,
      actor_user_id uuid,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      request_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX payment_actions_payment ON payment_actions (payment_id, created_at)`
})
