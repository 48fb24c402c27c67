import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { buildMonthlyIndexes, toMonthlyPartitions } from "./support/monthly-partitions.ts"

/**
 * Conversions become monthly range partitions over `occurred_at` (issue 35 part 3, decision 0144),
 * converted in place like touches (migration 0071): no row copied, the triggers (analytics marks,
 * the credit cascade and key guard) moved to the parent.
 *
 * - The one-conversion-per-outcome key gains the month: a conversion's `occurred_at` is its outcome
 *   event's, written once and never updated, so `(outcome_event_id, profile_id, occurred_at)` holds
 *   exactly what `(outcome_event_id, profile_id)` held. Built before the conversion (or found built
 *   by `partitions prepare`), so the old rows' index is adopted as it is.
 * - Outcome writers take any past or future time (a payment provider's, a CRM's), so a time past the
 *   months made ahead lands in `conversions_default`; the maintenance moves its rows into their month
 *   when it creates that month (src/ops/partitions/repo.ts).
 * - A trigger refuses a change of a conversion's `occurred_at` (none is made): the key above holds
 *   only while the time is the outcome event's.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* buildMonthlyIndexes("conversions", false)
  yield* sql`ALTER TABLE conversions DROP CONSTRAINT conversions_outcome_event_id_key`

  yield* toMonthlyPartitions({ table: "conversions", column: "occurred_at" })

  yield* sql`CREATE TABLE conversions_default PARTITION OF conversions DEFAULT`

  // The key above, and the credits' copy of the time (migration 0073), rest on this.
  yield* sql`
    CREATE FUNCTION conversions_time_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'a conversion''s occurred_at is its outcome event''s and cannot change' USING ERRCODE = 'check_violation';
    END $$`
  yield* sql`
    CREATE TRIGGER conversions_time_fixed BEFORE UPDATE OF occurred_at ON conversions
    FOR EACH ROW WHEN (OLD.occurred_at IS DISTINCT FROM NEW.occurred_at) EXECUTE FUNCTION conversions_time_fixed()`
})
