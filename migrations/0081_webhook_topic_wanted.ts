import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Whether a subscription of a profile that the webhook fan-out reads (not deleted, not disabled)
 * lists a topic: the outbox insert writes a row no one takes already published (decision 0156).
 * A function with its own `enable_seqscan = off`, so the check is a probe of
 * `webhook_subscriptions_profile` whatever the statistics say: written inline, a plan made after an
 * ANALYZE of a small table was a sequential scan per outbox row, kept while the table grew (111.6 ms
 * for 20 rows at 20,000 subscriptions, against 0.3-0.7 ms here).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION webhook_topic_wanted(profile uuid, topic text) RETURNS boolean
    LANGUAGE sql STABLE SET enable_seqscan = off AS $$
      SELECT EXISTS (
        SELECT 1 FROM webhook_subscriptions s
        WHERE s.profile_id = $1 AND s.deleted_at IS NULL AND s.status <> 'disabled' AND $2 = ANY (s.event_types))
    $$`
})
