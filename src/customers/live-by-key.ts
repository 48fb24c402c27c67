import type { SqlClient } from "effect/sql/SqlClient"
import type { Statement } from "effect/sql/Statement"

/**
 * The live customer a `customer_key` names, as one row `id`: the key's holder, or the survivor it
 * was merged into (a merge re-points earlier merges at the new survivor, so one hop reaches it).
 * None when the key is unknown or its person was erased.
 */
export const liveCustomerByKey = (sql: SqlClient, profileId: string, customerKey: string): Statement<{ readonly id: string }> =>
  sql<{ readonly id: string }>`
    SELECT s.id FROM customers x
    JOIN customers s ON s.id = coalesce(x.merged_into_id, x.id) AND s.merged_into_id IS NULL AND s.erased_at IS NULL
    WHERE x.profile_id = ${profileId} AND x.customer_key = ${customerKey} AND x.erased_at IS NULL
    ORDER BY x.merged_into_id IS NULL DESC, x.created_at, x.id LIMIT 1`
