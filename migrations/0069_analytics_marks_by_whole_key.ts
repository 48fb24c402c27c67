import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The analytics marks of credit rows look their conversions up one key at a time (decision 0137).
 * Joined to `conversions`, a statement trigger over a credit write (46,000 rows, 2,900 conversions
 * in a replay's) was planned without statistics as a read of every conversion of every profile
 * (152 ms on a 70,000-conversion table, growing with the table); a LATERAL probe by the whole
 * key `(id, profile_id)` reads only the rows' own conversions, with or without statistics (26 and
 * 23 ms). Same rows marked, same days.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION analytics_mark_credits() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT a.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT conversion_id, profile_id FROM new_rows) a
        CROSS JOIN LATERAL (
          SELECT x.occurred_at FROM conversions x WHERE x.id = a.conversion_id AND x.profile_id = a.profile_id OFFSET 0
        ) c
        JOIN profiles p ON p.id = a.profile_id;
      END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT a.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT conversion_id, profile_id FROM old_rows) a
        CROSS JOIN LATERAL (
          SELECT x.occurred_at FROM conversions x WHERE x.id = a.conversion_id AND x.profile_id = a.profile_id OFFSET 0
        ) c
        JOIN profiles p ON p.id = a.profile_id;
      END IF;
      RETURN NULL;
    END $$`
})
