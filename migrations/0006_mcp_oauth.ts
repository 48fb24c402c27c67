import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The agent OAuth surface `/oauth/mcp/*` (decision 0023): dynamically registered public
 * clients, the single-use consent tickets of the consent screen and the single-use
 * authorization codes. Tickets and codes are stored only as SHA-256 digests.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE mcp_clients (
      client_id text PRIMARY KEY,
      client_name text,
      redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) > 0),
      grants text[] NOT NULL CHECK (cardinality(grants) > 0),
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE mcp_consent_tickets (
      ticket_hash text PRIMARY KEY,
      session_id uuid NOT NULL REFERENCES sessions (id),
      user_id uuid NOT NULL REFERENCES users (id),
      client_id text NOT NULL REFERENCES mcp_clients (client_id),
      redirect_uri text NOT NULL,
      grants text[] NOT NULL,
      state text,
      code_challenge text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX mcp_consent_tickets_session ON mcp_consent_tickets (session_id)`
  yield* sql`
    CREATE TABLE mcp_authorization_codes (
      code_hash text PRIMARY KEY,
      client_id text NOT NULL REFERENCES mcp_clients (client_id),
      redirect_uri text NOT NULL,
      user_id uuid NOT NULL REFERENCES users (id),
      session_id uuid NOT NULL REFERENCES sessions (id),
      grants text[] NOT NULL,
      code_challenge text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      token_id uuid REFERENCES user_tokens (id)
    )`
  yield* sql`CREATE INDEX user_tokens_mcp_client ON user_tokens (mcp_client_id) WHERE mcp_client_id IS NOT NULL`
})
