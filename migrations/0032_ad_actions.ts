import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The ad action ledger (issue 19, decision 0068): one row per write the service attempted on an
 * ad, ad set or campaign of the ad platform (pause, resume, budget change, rollback).
 *
 * - `pre_*` is what the platform showed just before the write (status and budgets), so a
 *   rollback can restore it; `written_*` is what the row set (null: not touched), so a rollback
 *   can tell whether the object still carries it (else `not_reversible` / `state_drifted`).
 * - `state`: `pending` is written before the provider call and settled afterwards (`applied`,
 *   `no_change`, `failed`), so a crash between the two leaves a visible trace, never a write
 *   without a row.
 * - `rollback_of` names the row a rollback or a campaign resume undoes.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE ad_actions (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL,
      connection_id uuid NOT NULL,
      level text NOT NULL CHECK (level IN ('ad', 'ad_set', 'campaign')),
      object_id text NOT NULL,
      action text NOT NULL CHECK (action IN ('pause', 'resume', 'budget', 'rollback')),
      state text NOT NULL CHECK (state IN ('pending', 'applied', 'no_change', 'not_reversible', 'failed')),
      reason_code text,
      applied_by uuid,
      applied_by_basis text CHECK (applied_by_basis IN ('applied_by', 'person', 'app_shadow_owner')),
      pre_status text NOT NULL CHECK (pre_status IN ('active', 'paused', 'archived', 'deleted')),
      pre_daily_budget_minor bigint,
      pre_lifetime_budget_minor bigint,
      written_status text CHECK (written_status IN ('active', 'paused')),
      written_daily_budget_minor bigint,
      written_lifetime_budget_minor bigint,
      affected_ads_count integer,
      rollback_of uuid REFERENCES ad_actions (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      settled_at timestamptz
    )`
  yield* sql`CREATE INDEX ad_actions_object ON ad_actions (profile_id, level, object_id, created_at DESC)`
})
