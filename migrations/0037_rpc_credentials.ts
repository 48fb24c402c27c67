import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Internal-service credentials for `/rpc` (decision 0081): minted by the operator, stored as a
 * SHA-256 digest, revocable, rotatable with a 48-hour grace (the old row gets `expires_at`).
 * `profile_ids` NULL means every profile; otherwise the calls may name only those profiles.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE rpc_credentials (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      prefix text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      scopes text[] NOT NULL,
      profile_ids uuid[],
      rate_limit_per_minute integer NOT NULL,
      rotated_from_id uuid REFERENCES rpc_credentials (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      revoked_at timestamptz
    )`
})
