import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Profiles created by people (the `profiles:write` branch), the web tracker's public tracking
 * keys, and the partner-side time of the last applied entitlement delivery (`ignored_stale`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE profiles ADD COLUMN created_by_user_id uuid REFERENCES users (id)`
  yield* sql`
    CREATE TABLE tracking_keys (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      key text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX tracking_keys_live_profile ON tracking_keys (profile_id) WHERE revoked_at IS NULL`
  yield* sql`ALTER TABLE entitlements ADD COLUMN delivery_as_of timestamptz`
})
