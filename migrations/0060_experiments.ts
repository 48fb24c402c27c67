import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Experiments (issue 32, decision 0122): one row per experiment, keyed by its profile first so
 * every read and index stays within one profile. No assignment table: a holdout's groups are a
 * hash of the customer and `salt`, a switchback's days are in `config.schedule`. `version` makes
 * every transition conditional on the state it was decided from.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE experiments (
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      kind text NOT NULL CHECK (kind IN ('audience_holdout', 'switchback', 'pre_post')),
      name text NOT NULL,
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'running', 'completed', 'stopped')),
      status_reason text,
      status_note text,
      config jsonb NOT NULL,
      conversion_key text NOT NULL,
      measure text NOT NULL CHECK (measure IN ('count', 'value')),
      -- The target a running experiment holds (one running experiment per target): 'customer_list' or 'campaign:<id>'.
      target_key text NOT NULL,
      salt text NOT NULL,
      window_start date NOT NULL,
      window_end date NOT NULL CHECK (window_end >= window_start),
      design jsonb,
      version integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      stopped_at timestamptz,
      completed_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, id)
    )`
  yield* sql`CREATE INDEX experiments_list ON experiments (profile_id, created_at, id)`
  // At most one running experiment per target: the overlap check's backstop.
  yield* sql`CREATE UNIQUE INDEX experiments_running_target ON experiments (profile_id, target_key) WHERE status = 'running'`
})
