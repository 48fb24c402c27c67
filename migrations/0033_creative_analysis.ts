import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Creative analysis jobs and recommendations (decisions 0071, 0072).
 *
 * - `creative_analysis_jobs`: the durable queue of creative analyses of one ad (its platform id)
 *   and the result. `creative_fingerprint` hashes the creative fields at queue time (a repeat for
 *   the same fingerprint within 24 hours joins the job); `caller` is the credential the call is
 *   metered against. The rows are also the budget counters (hour per caller, UTC day per profile
 *   and per caller), so a restart loses no count. Claimed with a lease; `attempts` fences.
 * - `recommendations`: generated from the profile's analytics; the id is derived from (profile,
 *   rule, target level, target), so regenerating the same data writes no second row.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE creative_analysis_jobs (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      ad_platform_id text NOT NULL,
      creative_fingerprint text NOT NULL,
      caller text NOT NULL,
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      result jsonb,
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX creative_analysis_jobs_ad ON creative_analysis_jobs (profile_id, ad_platform_id, created_at DESC)`
  yield* sql`CREATE INDEX creative_analysis_jobs_caller ON creative_analysis_jobs (caller, created_at)`
  yield* sql`CREATE INDEX creative_analysis_jobs_profile ON creative_analysis_jobs (profile_id, created_at)`
  yield* sql`
    CREATE INDEX creative_analysis_jobs_open ON creative_analysis_jobs (created_at) WHERE status IN ('queued', 'running')`
  yield* sql`
    CREATE TABLE recommendations (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      rule_id text NOT NULL,
      target_level text NOT NULL CHECK (target_level IN ('campaign', 'ad_set', 'ad')),
      target_platform_id text NOT NULL,
      action_type text NOT NULL CHECK (action_type IN ('pause', 'budget')),
      previous_daily_budget_minor bigint,
      new_daily_budget_minor bigint,
      rule jsonb NOT NULL,
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'dismissed', 'applied', 'expired')),
      action_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      dismissed_at timestamptz,
      applied_at timestamptz,
      UNIQUE (profile_id, rule_id, target_level, target_platform_id)
    )`
  yield* sql`CREATE INDEX recommendations_profile ON recommendations (profile_id, created_at DESC, id DESC)`
})
