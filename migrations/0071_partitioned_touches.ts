import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { toMonthlyPartitions } from "./support/monthly-partitions.ts"

/**
 * Touches become monthly range partitions over `occurred_at` (issue 35 part 3, decision 0142),
 * converted in place like the logs of migration 0067 (no touch copied; their triggers move to the
 * parent).
 *
 * Two things held to all time could not stay on a table whose keys must carry the month:
 * - The idempotency key of a touch (tracker `event_id`, a partner's key) must stay unique across
 *   months: a tracker event sent without `occurred_at` is stamped when it arrives, so a retry can
 *   carry another time. The keys move to `touch_keys`, keyed by (profile, source system, key), which
 *   every insert claims in the same statement as its touch.
 * - A declared source's foreign key to its touch must name the month: the answer's `answered_at`
 *   is its touch's `occurred_at` (one value written to both, src/ingestion/partner/service.ts), so
 *   the key becomes `(touch_id, profile_id, answered_at)`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE touch_keys (
      profile_id uuid NOT NULL REFERENCES profiles(id),
      source_system text NOT NULL,
      idempotency_key text NOT NULL,
      touch_id uuid NOT NULL,
      occurred_at timestamptz NOT NULL,
      PRIMARY KEY (profile_id, source_system, idempotency_key)
    )`
  yield* sql`
    INSERT INTO touch_keys (profile_id, source_system, idempotency_key, touch_id, occurred_at)
    SELECT profile_id, source_system, idempotency_key, id, occurred_at FROM touches WHERE idempotency_key IS NOT NULL`
  yield* sql`DROP INDEX touches_idempotency`

  const [mismatched] = yield* sql<{ readonly n: number }>`
    SELECT count(*)::int AS n FROM declared_sources a
    WHERE NOT EXISTS (SELECT 1 FROM touches t WHERE t.id = a.touch_id AND t.profile_id = a.profile_id AND t.occurred_at = a.answered_at)`
  if ((mismatched?.n ?? 0) > 0) {
    return yield* Effect.die(new Error(`declared_sources: ${mismatched?.n} answers whose touch is not at their answered_at`))
  }
  yield* sql`ALTER TABLE declared_sources DROP CONSTRAINT declared_sources_touch_id_fkey`

  yield* toMonthlyPartitions({ table: "touches", column: "occurred_at" })

  yield* sql`
    ALTER TABLE declared_sources ADD CONSTRAINT declared_sources_touch_id_fkey
    FOREIGN KEY (touch_id, profile_id, answered_at) REFERENCES touches (id, profile_id, occurred_at) ON DELETE CASCADE`
})
