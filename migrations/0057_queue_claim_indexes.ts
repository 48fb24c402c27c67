import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Queue claims whose plans hold without statistics (issue 34; test/api/queue-claim-plans.test.ts).
 * Autovacuum is off on these machines, so a prepared claim keeps a generic plan costed on guesses;
 * each index here is the exact one its statement needs for that plan to read only what it hands out.
 * (Numbered 0057: 0056 is taken by another change of issue 34.)
 *
 * - `sync_jobs_claim_order`: the sync claim's order, so it stops at the first claimable job instead
 *   of reading and sorting every queued one (264 ms at 200,000 queued).
 * - `work_jobs_replay_order`, `work_jobs_running_profile`: the replay claim's order, and its check
 *   that the profile has no live replay as one probe; that check intersected the profile's jobs
 *   with every pending one for each candidate (21.8 s per claim at 200,000 queued). The latter also
 *   serves the sweep of exhausted replays.
 * - `creative_analysis_jobs_running`, `report_runs_leased`: the sweeps of dead leases read leased
 *   rows only, not the queue behind them.
 * - `analytics_dirty_take`: the refresh takes whole-profile marks first, then by id; without it
 *   every settled mark was read and sorted (131 ms at 200,000 marks).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE INDEX sync_jobs_claim_order ON sync_jobs (run_after, created_at, id) WHERE status IN ('queued', 'running')`
  yield* sql`
    CREATE INDEX work_jobs_replay_order ON work_jobs (created_at, id)
    WHERE kind = 'attribution_replay' AND state IN ('queued', 'running')`
  yield* sql`CREATE INDEX work_jobs_running_profile ON work_jobs (profile_id, lease_until) WHERE state = 'running'`
  yield* sql`CREATE INDEX creative_analysis_jobs_running ON creative_analysis_jobs (lease_until) WHERE status = 'running'`
  yield* sql`CREATE INDEX report_runs_leased ON report_runs (lease_until) WHERE status IN ('running', 'sending')`
  yield* sql`CREATE INDEX analytics_dirty_take ON analytics_dirty ((day IS NULL) DESC, id)`
})
