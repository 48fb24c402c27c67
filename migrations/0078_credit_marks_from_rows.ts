import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The analytics marks of credit rows take each row's day from the row itself: `converted_at` is
 * its conversion's `occurred_at`, copied (migration 0073, never changed after). Migration 0069
 * probed `conversions` by `(id, profile_id)`; since conversions are monthly partitions (0072) that
 * is not their whole key, and each probe went into every month's index (issue 35 part 1). Same
 * rows marked, same days, and no read of `conversions` at all.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION analytics_mark_credits() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT a.profile_id, (a.converted_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT profile_id, converted_at FROM new_rows) a
        JOIN profiles p ON p.id = a.profile_id;
      END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT a.profile_id, (a.converted_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT profile_id, converted_at FROM old_rows) a
        JOIN profiles p ON p.id = a.profile_id;
      END IF;
      RETURN NULL;
    END $$`
})
