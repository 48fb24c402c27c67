import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A visitor's touches are found by the anonymous id first (decision 0155): `touches_anonymous`
 * (profile_id, anonymous_id, occurred_at) becomes `touches_visitor` (anonymous_id, profile_id,
 * occurred_at), same rows. Every other index of touches that an equality on the profile can use
 * also leads with the profile; without statistics (autovacuum is off here, and a new month has
 * none) such a read could take (profile_id, occurred_at) instead and walk the profile's window for
 * each visitor, a tie the planner breaks toward the narrower index. Led by the anonymous id, the
 * read names the profile as a filter and only this index can answer it.
 *
 * An index built beforehand under the same name (CONCURRENTLY, each month's partition then
 * attached: docs/runbook.md, "Indexes built before a release") is adopted as it is.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  const [existing] = yield* sql<{ readonly valid: boolean }>`
    SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('touches_visitor')`
  if (existing !== undefined && !existing.valid) yield* sql`DROP INDEX touches_visitor`
  if (existing?.valid !== true) {
    yield* sql`CREATE INDEX touches_visitor ON touches (anonymous_id, profile_id, occurred_at) WHERE anonymous_id IS NOT NULL`
  }
  yield* sql`DROP INDEX IF EXISTS touches_anonymous`
})
