import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Platform tables every domain relies on: the Profile entity's serialised state,
 * the idempotency ledger and the audit trail.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE profile_state (
      profile_id uuid PRIMARY KEY,
      revocation_epoch bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE idempotency_keys (
      scope text NOT NULL,
      route text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      state text NOT NULL CHECK (state IN ('in_flight', 'completed')),
      response_status integer,
      response_headers jsonb,
      response_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (scope, route, key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at)`
})
