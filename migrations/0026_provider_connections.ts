import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Connections made through connect hand-offs (decision 0055).
 *
 * - `connections` gains the grant: tokens sealed by SecretBox (never stored in clear), their
 *   expiry and scopes, the provider's user and account, the OAuth app that minted the hand-off
 *   (`app_id`, null for a profile's own key), the shop of a commerce connection. One live
 *   connection per (profile, provider, account).
 * - `connect_handoffs`: one row per minted hand-off; `handle` is the `/h/<handle>` page's;
 *   `state` is the OAuth `state` the provider returns (its SHA-256 only). `consent_started_at`
 *   lets a consent stopped partway be retried after 3 minutes.
 * - `pending_connections`: a grant that reaches several accounts waits here for the person's
 *   choice (finalize); its tokens stay parked on a refused finalize.
 * - `provider_events`: provider callback event ids already handled, so a redelivery writes once.
 * - `sync_jobs` gains what a worker needs: attempts, run_after, lease, progress and error.
 * - `ad_spend` gains the platform's own reported conversions and chats, impressions and clicks.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE connections DROP CONSTRAINT connections_provider_kind_check`
  yield* sql`
    ALTER TABLE connections ADD CONSTRAINT connections_provider_kind_check CHECK (provider_kind IN
      ('adplatform', 'crm', 'commerce', 'cardgw', 'chat_app_a', 'social_dm', 'page_messenger',
       'short_video_messaging', 'email', 'calendar'))`
  yield* sql`
    ALTER TABLE connections
      ADD COLUMN app_id uuid,
      ADD COLUMN provider_user_id text,
      ADD COLUMN currency text,
      ADD COLUMN timezone text,
      ADD COLUMN shop text,
      ADD COLUMN scopes text[] NOT NULL DEFAULT '{}',
      ADD COLUMN access_token_sealed text,
      ADD COLUMN refresh_token_sealed text,
      ADD COLUMN token_expires_at timestamptz,
      ADD COLUMN handoff_id uuid,
      ADD COLUMN last_synced_at timestamptz,
      ADD COLUMN app_grant_released_at timestamptz`
  yield* sql`
    CREATE UNIQUE INDEX connections_live_account ON connections (profile_id, provider, external_account_id)
    WHERE disconnected_at IS NULL`
  yield* sql`CREATE INDEX connections_account ON connections (provider, external_account_id) WHERE disconnected_at IS NULL`
  yield* sql`
    CREATE TABLE connect_handoffs (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      provider text NOT NULL,
      handle text NOT NULL UNIQUE,
      state_hash text NOT NULL UNIQUE,
      return_url text,
      shop text,
      app_id uuid,
      api_key_id uuid,
      status text NOT NULL DEFAULT 'minted' CHECK (status IN
        ('minted', 'in_consent', 'success', 'pending_selection', 'failed', 'cancelled')),
      reason text,
      consent_started_at timestamptz,
      connection_id uuid REFERENCES connections (id),
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX connect_handoffs_profile ON connect_handoffs (profile_id, created_at)`
  yield* sql`
    CREATE TABLE pending_connections (
      id uuid PRIMARY KEY,
      handoff_id uuid NOT NULL UNIQUE REFERENCES connect_handoffs (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      provider text NOT NULL,
      provider_user_id text,
      scopes text[] NOT NULL DEFAULT '{}',
      accounts jsonb NOT NULL,
      access_token_sealed text NOT NULL,
      refresh_token_sealed text,
      token_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      finalized_at timestamptz
    )`
  yield* sql`CREATE INDEX pending_connections_profile ON pending_connections (profile_id, provider) WHERE finalized_at IS NULL`
  yield* sql`
    CREATE TABLE provider_events (
      provider text NOT NULL,
      event_id text NOT NULL,
      connection_id uuid REFERENCES connections (id),
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (provider, event_id)
    )`
  yield* sql`
    ALTER TABLE sync_jobs
      ADD COLUMN attempts integer NOT NULL DEFAULT 0,
      ADD COLUMN run_after timestamptz NOT NULL DEFAULT now(),
      ADD COLUMN lease_until timestamptz,
      ADD COLUMN started_at timestamptz,
      ADD COLUMN finished_at timestamptz,
      ADD COLUMN progress jsonb NOT NULL DEFAULT '{}',
      ADD COLUMN error text`
  yield* sql`ALTER TABLE sync_jobs DROP CONSTRAINT sync_jobs_kind_check`
  yield* sql`ALTER TABLE sync_jobs ADD CONSTRAINT sync_jobs_kind_check CHECK (kind IN ('backfill', 'structure', 'insights', 'manual'))`
  yield* sql`
    ALTER TABLE ad_spend
      ADD COLUMN impressions bigint,
      ADD COLUMN clicks bigint,
      ADD COLUMN reported_conversions integer,
      ADD COLUMN reported_chats integer`
})
