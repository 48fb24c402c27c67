import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Every attempt of a webhook delivery (issue 30 item 8, decision 0112): append-only, one row per
 * attempt, written by the same statement that records the delivery's result (so a crash keeps
 * both or neither). `subscription_id` and `outbox_id` are copied from the delivery so one index
 * reads the whole log of an event to a subscription, its redeliveries included, in append order.
 * `duration_ms` is null when no request was sent (a deleted or disabled subscription, a secret
 * that does not open); `error` is bounded like `last_error`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE webhook_delivery_attempts (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      delivery_id uuid NOT NULL,
      subscription_id uuid NOT NULL,
      outbox_id uuid NOT NULL,
      attempt integer NOT NULL,
      attempted_at timestamptz NOT NULL,
      status_code integer,
      duration_ms integer CHECK (duration_ms >= 0),
      error text CHECK (char_length(error) <= 500)
    )`
  yield* sql`CREATE INDEX webhook_delivery_attempts_log ON webhook_delivery_attempts (subscription_id, outbox_id, id)`
})
