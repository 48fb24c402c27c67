import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Webhooks (issue 21, decisions 0076-0078).
 *
 * - `webhook_subscriptions`: a profile's endpoints, the key (and its OAuth app) that registered
 *   each, the event types, the signing secret sealed with the SecretBox and, for 24 hours after
 *   a rotation, the previous one.
 * - `webhook_deliveries`: one durable row per (subscription, outbox event), created in outbox
 *   order by batches of up to 200 (`batch_id`, `seq`), worked under leases (`lease_token` is the
 *   fencing token), with the ladder's next attempt and the last answer; a redelivery is a new row
 *   pointing at the one it repeats.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE webhook_subscriptions (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      workspace_id uuid NOT NULL,
      api_key_id uuid,
      oauth_app_id uuid,
      url text NOT NULL,
      description text,
      event_types text[] NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'paused', 'disabled')),
      status_reason text,
      secret_sealed text NOT NULL,
      previous_secret_sealed text,
      previous_secret_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX webhook_subscriptions_profile ON webhook_subscriptions (profile_id, created_at, id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX webhook_subscriptions_workspace ON webhook_subscriptions (workspace_id) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id uuid PRIMARY KEY,
      subscription_id uuid NOT NULL REFERENCES webhook_subscriptions (id),
      profile_id uuid NOT NULL,
      outbox_id uuid NOT NULL,
      event_id text NOT NULL,
      event_type text NOT NULL,
      body text NOT NULL,
      batch_id uuid NOT NULL,
      seq integer NOT NULL,
      redelivery_of uuid,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      lease_until timestamptz,
      lease_token uuid,
      last_status_code integer,
      last_error text,
      last_attempt_at timestamptz,
      -- The ladder counts from the first attempt (a delivery held by a pause starts its ladder on resume).
      first_attempt_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`
  // One first delivery per (subscription, event): a fan-out that runs twice adds nothing.
  yield* sql`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (subscription_id, outbox_id) WHERE redelivery_of IS NULL`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_batch ON webhook_deliveries (subscription_id, batch_id, seq) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_log ON webhook_deliveries (profile_id, created_at, id)`
})
