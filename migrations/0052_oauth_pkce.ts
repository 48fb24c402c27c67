import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * PKCE on the partner authorization-code flow (decision 0106): the S256 `code_challenge` of the
 * authorization request, carried by the consent ticket (email resolution) to the code it
 * issues. Null when the request used no PKCE; the token endpoint then refuses a verifier.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    ALTER TABLE oauth_consent_tickets
      ADD COLUMN code_challenge text CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$')`
  yield* sql`
    ALTER TABLE oauth_authorization_codes
      ADD COLUMN code_challenge text CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$')`
})
