import { Effect } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { SqlClient } from "effect/sql/SqlClient"

/**
 * Row-locks these customers (`FOR UPDATE`) in id order, so that two transactions locking
 * overlapping sets never wait on each other in a cycle. Runs unprepared, planned for its ids each
 * time: a prepared statement's generic plan, picked while the table was small, stays a sequential
 * scan as the table grows until the next ANALYZE (decision 0047).
 */
export const lockCustomers = (sql: SqlClient, customerIds: ReadonlyArray<string>): Effect.Effect<void, SqlError> => {
  const ids = [...new Set(customerIds)].sort()
  return ids.length === 0
    ? Effect.void
    : Effect.asVoid(sql`SELECT id FROM customers WHERE id = ANY(${ids}::uuid[]) ORDER BY id FOR UPDATE`.unprepared)
}
