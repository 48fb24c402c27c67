import type { SqlClient } from "effect/sql/SqlClient"

/**
 * A timestamptz column rendered as ISO 8601 UTC with microseconds
 * (`2026-11-21T14:20:01.123456Z`): what the wire shows, and exact enough to be a keyset.
 */
export const isoTimestamp = (sql: SqlClient, column: string) =>
  sql.literal(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
