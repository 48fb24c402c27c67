import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The web tracker (decision 0031): per-profile tracker settings (a missing row reads as the
 * defaults), the daily counters of events the collector answered but did not store (bots,
 * do-not-track), and the index the collector's pre-flight uses to find whether any profile
 * allows an origin.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE tracking_settings (
      profile_id uuid PRIMARY KEY REFERENCES profiles (id),
      allowed_origins text[] NOT NULL DEFAULT '{}',
      capture_click_ids boolean NOT NULL DEFAULT true,
      cookie_domain text,
      respect_do_not_track boolean NOT NULL DEFAULT false,
      allow_server_side boolean NOT NULL DEFAULT false,
      -- Null until a PATCH changes something.
      updated_at timestamptz
    )`
  yield* sql`CREATE INDEX tracking_settings_origins ON tracking_settings USING gin (allowed_origins)`
  yield* sql`
    CREATE TABLE tracking_drops (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      day date NOT NULL,
      reason text NOT NULL CHECK (reason IN ('bot', 'do_not_track')),
      count bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (profile_id, day, reason)
    )`
})
