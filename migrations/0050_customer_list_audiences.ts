import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Customer-list audiences (issue 20 part 5, decision 0100): the catalog's Platform-Safe audience
 * switch (off until the merchant enables it) and one customer list per profile with its platform
 * audience, consent, counts and 1 % lookalike. `sync_lease_until` keeps two syncs of one list
 * from running at once (a retried confirm never creates a second platform audience).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    ALTER TABLE conversion_sync_settings ADD COLUMN platform_safe_audiences text NOT NULL DEFAULT 'disabled'
      CHECK (platform_safe_audiences IN ('enabled', 'disabled'))`
  yield* sql`
    CREATE TABLE customer_list_audiences (
      profile_id uuid PRIMARY KEY REFERENCES profiles (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'off' CHECK (status IN ('off', 'enabled')),
      consent_version text,
      consent jsonb,
      connection_id uuid,
      ad_account_id text,
      platform_audience_id text,
      member_count integer NOT NULL DEFAULT 0,
      excluded_count integer NOT NULL DEFAULT 0,
      skipped_count integer NOT NULL DEFAULT 0,
      last_synced_at timestamptz,
      lookalike_id text,
      lookalike_country text,
      lookalike_created_at timestamptz,
      sync_lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
