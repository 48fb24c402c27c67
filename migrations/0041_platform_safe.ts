import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Platform-Safe (issue 20 part 4, decision 0089): the profile's Clean Dataset (its custom
 * conversion per outcome type) and one row per ad-set rebuild, recording each step's platform
 * id as soon as it exists so that a retried call resumes instead of creating a second copy.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE platform_safe_datasets (
      profile_id uuid PRIMARY KEY REFERENCES profiles (id),
      connection_id uuid NOT NULL REFERENCES connections (id),
      dataset_id text NOT NULL,
      destination_id uuid,
      custom_conversions jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE platform_safe_rebuilds (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      original_ad_set_id text NOT NULL,
      mode text NOT NULL CHECK (mode IN ('switch', 'run_both')),
      copy_ad_set_id text,
      copied_ad_ids jsonb NOT NULL DEFAULT '[]',
      step text NOT NULL DEFAULT 'create' CHECK (step IN ('create', 'copy_ads', 'activate', 'pause_original', 'done')),
      pause_refused boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, original_ad_set_id)
    )`
  // The dataset each data source (business chat, website pixel, social DM) is wired to.
  yield* sql`
    CREATE TABLE data_source_datasets (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      source text NOT NULL CHECK (source IN ('whatsapp', 'website', 'instagram')),
      account_id text NOT NULL,
      dataset_id text NOT NULL,
      destination_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, source)
    )`
})
