import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { completeCopiedColumn, CREDITS_MONTH } from "./support/copied-column.ts"
import { toMonthlyPartitions } from "./support/monthly-partitions.ts"

/**
 * Credit rows become monthly range partitions over their conversion's time (issue 35 part 3,
 * decision 0145), so a conversion's rows sit in its month beside it and a replay or a rollup of a
 * range of days reads those months only.
 *
 * - `converted_at`: the conversion's `occurred_at`, copied into every row (filled here, or
 *   beforehand by `partitions prepare attribution_credits` while writes go on) and written by the
 *   engine with every row from now on. A conversion's time never changes (migration 0072's guard).
 * - The cascade from a deleted conversion names the whole key, so it reads that month only.
 * - Like conversions, a default partition takes times past the months made so far.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* completeCopiedColumn(CREDITS_MONTH)
  yield* toMonthlyPartitions({ table: "attribution_credits", column: "converted_at" })
  yield* sql`CREATE TABLE attribution_credits_default PARTITION OF attribution_credits DEFAULT`
  yield* sql`
    CREATE OR REPLACE FUNCTION attribution_credits_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- In profile order, so two deletes spanning the same profiles cannot deadlock on these locks.
      PERFORM pg_advisory_xact_lock(attribution_credit_lock_key(x.profile_id))
      FROM (SELECT DISTINCT profile_id FROM old_rows ORDER BY 1) x;
      IF TG_TABLE_NAME = 'conversions' THEN
        DELETE FROM attribution_credits a USING old_rows o
        WHERE a.conversion_id = o.id AND a.profile_id = o.profile_id AND a.converted_at = o.occurred_at;
      ELSE
        DELETE FROM attribution_credits a USING old_rows o WHERE a.touch_id = o.id AND a.profile_id = o.profile_id;
      END IF;
      RETURN NULL;
    END $$`
})
