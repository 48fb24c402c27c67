import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Analytics insights (decision 0043): the last UTM-health scan of a profile
 * (`POST /api/v1/quality/utm/refresh`). One row per profile, replaced by each scan; a call
 * within 10 minutes of `scanned_at` answers `summary` as stored.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE analytics_utm_scans (
      profile_id uuid PRIMARY KEY,
      scanned_at timestamptz NOT NULL,
      summary jsonb NOT NULL
    )`
})
