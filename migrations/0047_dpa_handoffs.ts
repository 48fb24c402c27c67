import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * DPA hand-off links (issue 20, decision 0098).
 *
 * - `dpa_handoffs`: one row per URL an app minted so that a profile's own owner or admin accepts
 *   the DPA of a profile the app did not provision. Only the SHA-256 digest of the token is kept;
 *   `used_at` makes the link single-use, `expires_at` bounds it. Deleted with the profile.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE dpa_handoffs (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      app_id uuid NOT NULL,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      used_by uuid
    )`
})
