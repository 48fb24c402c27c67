import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The synced ad structure of a profile (decision 0033): campaigns, ad sets and ads as the ad
 * platform last showed them, keyed by the platform's own id (`platform_id`) per profile. An ad
 * belongs to an ad set, an ad set to a campaign. Filled by the ad-platform sync (nightly and on
 * demand, also while the attribution add-on is off); read by ad referrals (`unknown_ad`), the
 * journeys' `campaign` / `ad_set` / `ad` objects, ad-set detail (`learning_stage_status`,
 * `campaign_objective`) and the click-to-chat ad routes (destination, greeting).
 * Budgets are integer minor units of the ad account's currency.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE ad_campaigns (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      connection_id uuid REFERENCES connections (id),
      platform_id text NOT NULL,
      name text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'archived', 'deleted')),
      objective text,
      currency text CHECK (currency ~ '^[A-Z]{3}$'),
      daily_budget_minor bigint CHECK (daily_budget_minor >= 0),
      lifetime_budget_minor bigint CHECK (lifetime_budget_minor >= 0),
      synced_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, platform_id)
    )`
  yield* sql`
    CREATE TABLE ad_sets (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      connection_id uuid REFERENCES connections (id),
      campaign_id uuid NOT NULL REFERENCES ad_campaigns (id),
      platform_id text NOT NULL,
      name text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'archived', 'deleted')),
      learning_stage_status text CHECK (learning_stage_status IN ('LEARNING', 'SUCCESS', 'FAIL')),
      currency text CHECK (currency ~ '^[A-Z]{3}$'),
      daily_budget_minor bigint CHECK (daily_budget_minor >= 0),
      lifetime_budget_minor bigint CHECK (lifetime_budget_minor >= 0),
      synced_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, platform_id)
    )`
  yield* sql`CREATE INDEX ad_sets_campaign ON ad_sets (campaign_id)`
  yield* sql`
    CREATE TABLE ads (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      connection_id uuid REFERENCES connections (id),
      ad_set_id uuid NOT NULL REFERENCES ad_sets (id),
      platform_id text NOT NULL,
      name text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'archived', 'deleted')),
      creative_thumbnail_url text,
      -- Click-to-chat ads: where the ad sends people (e.g. 'chat_app_a', 'page_messenger',
      -- 'social_dm'), the business number or page it opens, its call to action, and the greeting
      -- the conversation starts with (greeting_status as the platform reports it).
      destination_type text,
      destination_phone_number text,
      destination_page_id text,
      call_to_action_type text,
      greeting text,
      greeting_status text,
      -- The welcome message as the platform shows it (greeting, pre-filled text, ice breakers); null = none configured.
      welcome_message jsonb,
      synced_at timestamptz NOT NULL DEFAULT now(),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, platform_id)
    )`
  yield* sql`CREATE INDEX ads_ad_set ON ads (ad_set_id)`
})
