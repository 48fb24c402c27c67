import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Inferred identity links (decision 0039): one row per (visitor, customer) pair the link scan
 * proposed, with its evidence and the review decision. A decided row is never proposed again
 * (the scan only refreshes `proposed` rows), which is what keeps a rejected pair apart.
 * Plus the indexes the repair scan and the link scan walk.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE identity_links (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      anonymous_id text NOT NULL,
      customer_id uuid NOT NULL REFERENCES customers (id),
      status text NOT NULL DEFAULT 'proposed' CHECK (status IN ('proposed', 'accepted', 'rejected')),
      -- [{kind, click_id_kind, touch_count}]: never a click id value.
      evidence jsonb NOT NULL,
      join_method text NOT NULL CHECK (join_method IN ('click_id', 'anonymous_id')),
      unbound_touch_count integer NOT NULL,
      bound_touch_count integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz,
      UNIQUE (profile_id, anonymous_id, customer_id)
    )`
  yield* sql`CREATE INDEX identity_links_profile_created ON identity_links (profile_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX identity_links_profile_status ON identity_links (profile_id, status, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX identity_links_customer ON identity_links (customer_id)`
  // The link scan: a profile's visitor touches that carry no customer.
  yield* sql`
    CREATE INDEX touches_unbound_visitor ON touches (profile_id, anonymous_id)
    WHERE anonymous_id IS NOT NULL AND customer_id IS NULL`
  // The repair scan: a profile's email and phone identifiers.
  yield* sql`
    CREATE INDEX customer_identifiers_contact ON customer_identifiers (profile_id, kind, customer_id)
    WHERE removed_at IS NULL AND kind IN ('email', 'phone')`
})
