import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Which merchant's custom commerce app a connection was made through (decision 0066): the
 * admin kill switch (`DELETE /api/v1/admin/commerce-apps/{id}`) revokes exactly those
 * connections, and a token refresh uses that app's credentials. Null: the platform's own app.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE connections ADD COLUMN commerce_app_id uuid REFERENCES commerce_apps (id)`
  yield* sql`CREATE INDEX connections_commerce_app ON connections (commerce_app_id) WHERE commerce_app_id IS NOT NULL AND disconnected_at IS NULL`
})
