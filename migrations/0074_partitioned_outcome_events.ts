import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { buildMonthlyIndexes, toMonthlyPartitions } from "./support/monthly-partitions.ts"
import { completeOutcomeKeys, OUTCOME_KEYS, referenceKeys } from "./support/outcome-keys.ts"

/**
 * Outcome events become monthly range partitions over `occurred_at` (issue 35 part 3, decision
 * 0146), converted in place like conversions (migration 0072): no event copied.
 *
 * - **`outcome_keys`**, one row per event: its idempotency key, id and month. The key must hold
 *   across months (a retry of a CRM outcome may carry a corrected time), so it moves here, and each
 *   writer claims it in the same statement as the event (as `touch_keys`, migration 0071). The row
 *   points at its event by the whole key.
 * - The four tables that name an event (`conversions`, `conversion_exports`, `payment_actions`,
 *   `conversation_leads`; three carry no time) now point at its `outcome_keys` row, which points at
 *   the event. Built beforehand by `partitions prepare`, they are adopted here without a scan. A
 *   conversion's time is its event's (checked before the move; both times are guarded).
 * - A default partition takes times past the months made ahead (outcome writers take any time).
 * - `(profile_id, occurred_at, id)` replaces the profile prefix the old key's index gave.
 * - A trigger refuses a change of an event's `occurred_at` (none is made): the key row and the
 *   conversions copy it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  // Made and filled here, or beforehand by `partitions prepare outcome_events` while writes go on.
  yield* completeOutcomeKeys(OUTCOME_KEYS)
  yield* sql`ALTER TABLE outcome_events DROP CONSTRAINT outcome_events_profile_id_idempotency_key_key`
  // The dropped key was also the index of a profile's events (its event names read by the goals
  // and definitions): built before the conversion (or by `partitions prepare`), so the old rows keep theirs.
  yield* buildMonthlyIndexes("outcome_events", false)

  for (const table of OUTCOME_KEYS.referencing) {
    yield* sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_outcome_event_id_fkey`)
  }

  yield* toMonthlyPartitions({ table: "outcome_events", column: "occurred_at" })
  yield* sql`CREATE TABLE outcome_events_default PARTITION OF outcome_events DEFAULT`

  yield* sql`
    CREATE FUNCTION outcome_events_time_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'an outcome event''s occurred_at cannot change' USING ERRCODE = 'check_violation';
    END $$`
  yield* sql`
    CREATE TRIGGER outcome_events_time_fixed BEFORE UPDATE OF occurred_at ON outcome_events
    FOR EACH ROW WHEN (OLD.occurred_at IS DISTINCT FROM NEW.occurred_at) EXECUTE FUNCTION outcome_events_time_fixed()`

  // Every key row's event exists: the rows were copied from the events, so this key is added
  // without reading them (it holds for new rows at once); the partition maintenance validates it
  // outside the lock.
  yield* sql`
    ALTER TABLE outcome_keys ADD CONSTRAINT outcome_keys_outcome_event_id_fkey
    FOREIGN KEY (outcome_event_id, profile_id, occurred_at) REFERENCES outcome_events (id, profile_id, occurred_at) NOT VALID`
  yield* referenceKeys(OUTCOME_KEYS)
})
