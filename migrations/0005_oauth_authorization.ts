import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Partner OAuth consent (`/oauth/authorize`, decision 0022): authorization codes and the
 * consent tickets of the human consent screen. Both secrets are stored as SHA-256 digests,
 * single use and short-lived; expired and used rows are inert.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE oauth_authorization_codes (
      id uuid PRIMARY KEY,
      code_hash text NOT NULL UNIQUE,
      app_id uuid NOT NULL REFERENCES oauth_apps (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      grant_id uuid NOT NULL REFERENCES grants (id),
      redirect_uri text NOT NULL,
      connect_scopes text[] NOT NULL,
      scopes text[] NOT NULL,
      subject text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      replayed_at timestamptz,
      api_key_id uuid REFERENCES api_keys (id)
    )`
  yield* sql`CREATE INDEX oauth_authorization_codes_expiry ON oauth_authorization_codes (expires_at)`
  yield* sql`
    CREATE TABLE oauth_consent_tickets (
      id uuid PRIMARY KEY,
      ticket_hash text NOT NULL UNIQUE,
      cookie_hash text NOT NULL,
      app_id uuid NOT NULL REFERENCES oauth_apps (id),
      redirect_uri text NOT NULL,
      state text,
      connect_scopes text[] NOT NULL,
      subject text NOT NULL,
      email text NOT NULL,
      name text,
      profile_ids uuid[] NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX oauth_consent_tickets_expiry ON oauth_consent_tickets (expires_at)`
})
