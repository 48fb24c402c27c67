import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Provider connections of a profile (filled by the connect hand-offs of the providers domain). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE connections (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      provider text NOT NULL,
      provider_kind text NOT NULL CHECK (provider_kind IN
        ('adplatform', 'crm', 'commerce', 'cardgw', 'chat_app_a', 'social_dm', 'email', 'calendar')),
      external_account_id text,
      display_name text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'active',
      status_reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      disconnected_at timestamptz
    )`
  yield* sql`CREATE INDEX connections_profile ON connections (profile_id, created_at, id)`
})
