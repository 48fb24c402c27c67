import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * URL-tag changes in the ad action ledger (issue 19, decision 0088). On the ad platform a new
 * set of URL tags is a new creative, so the row records the ad's creative before the call
 * (`pre_creative_id`) and the one the call put it on (`written_creative_id`): a rollback puts the
 * previous creative back only while the ad still carries the written one.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE ad_actions DROP CONSTRAINT ad_actions_action_check`
  yield* sql`
    ALTER TABLE ad_actions ADD CONSTRAINT ad_actions_action_check
      CHECK (action IN ('pause', 'resume', 'budget', 'rollback', 'url_tags'))`
  yield* sql`ALTER TABLE ad_actions ADD COLUMN pre_creative_id text`
  yield* sql`ALTER TABLE ad_actions ADD COLUMN written_creative_id text`
  yield* sql`CREATE INDEX ad_actions_profile_recent ON ad_actions (profile_id, created_at DESC, id DESC) WHERE level = 'ad'`
})
