import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The web tracker's installation (decision 0034): first-party collector domains with their DNS
 * verification verdict, install-verification attempts, and the browser origin the collector
 * accepted each tracker touch from (what an install verification looks for).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE tracking_domains (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      -- Lower-case, without a trailing dot; one profile per hostname (the unique index below).
      hostname text NOT NULL,
      -- The value of the TXT record _svc-verify.<hostname>.
      verify_token text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
      -- The records the latest check did not find: [{type, name, expected, found}].
      missing jsonb NOT NULL DEFAULT '[]'::jsonb,
      -- The resolver's error of the latest check, when it failed.
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      checked_at timestamptz,
      -- Serving since (the snippet posts there, the collector accepts it); null: not serving.
      verified_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX tracking_domains_hostname ON tracking_domains (hostname)`
  yield* sql`CREATE INDEX tracking_domains_profile ON tracking_domains (profile_id, created_at)`
  yield* sql`
    CREATE TABLE tracking_verifications (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      started_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      -- When the first tracker event from an allowed browser origin arrived inside the window.
      verified_at timestamptz,
      -- That event (no foreign key: erasing the touch leaves the verdict).
      touch_id uuid,
      origin text,
      event_type text
    )`
  yield* sql`CREATE INDEX tracking_verifications_latest ON tracking_verifications (profile_id, started_at DESC, id DESC)`
  // The request's Origin when the collector accepted it as one of the profile's allowed origins;
  // null for server-side and sandboxed senders, and for touches of other sources.
  yield* sql`ALTER TABLE touches ADD COLUMN collector_origin text`
})
