import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * One-time links that let a person set a password (an invitation) or choose a new one (a
 * reset); decision 0053. Only the link's SHA-256 digest is stored; a link is used once.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE password_links (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id),
      purpose text NOT NULL CHECK (purpose IN ('invite', 'reset')),
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX password_links_user ON password_links (user_id) WHERE used_at IS NULL`
  yield* sql`ALTER TABLE users ADD COLUMN password_set_at timestamptz`
})
