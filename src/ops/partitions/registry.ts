/**
 * The tables kept as monthly range partitions (issue 35 part 3, decision 0133) and how long each
 * keeps its rows. The partition maintenance creates each table's months ahead and drops a
 * partition once its whole range is past the retention: rows go by the partition, never by a
 * DELETE. A table joins by converting it in a migration (`toMonthlyPartitions`, migrations/support) and
 * adding one entry here.
 */
import { PII_LOG_RETENTION_DAYS } from "../../kernel/audit/retention.ts"
import { REPLAY_WINDOW_DAYS } from "../../../schema/events.ts"
import { REQUEST_LOG_RETENTION_DAYS } from "../../../schema/request-logs.ts"

export interface PartitionedTable {
  /** The partitioned (parent) table. */
  readonly table: string
  /** The timestamptz column its range is over (part of its primary key). */
  readonly column: string
  /** Rows older than this many days are not kept: a month whose end is older is dropped. Null: kept. */
  readonly retentionDays: number | null
  /** Where the retention comes from. */
  readonly source: string
}

/** The spec's window for replaying the outbox's `outcome.recorded` events (`GET /api/v1/outcomes/recorded`). */
export const OUTBOX_RETENTION_DAYS = REPLAY_WINDOW_DAYS

/**
 * Decision 0133: the spec names no window for the delivery logs; they keep what they delivered as
 * long as the outbox they deliver from keeps it.
 */
export const DELIVERY_LOG_RETENTION_DAYS = OUTBOX_RETENTION_DAYS

export const PARTITIONED_TABLES: ReadonlyArray<PartitionedTable> = [
  {
    table: "webhook_delivery_attempts",
    column: "attempted_at",
    retentionDays: DELIVERY_LOG_RETENTION_DAYS,
    source: "decision 0133"
  },
  { table: "export_deliveries", column: "created_at", retentionDays: DELIVERY_LOG_RETENTION_DAYS, source: "decision 0133" },
  { table: "request_logs", column: "created_at", retentionDays: REQUEST_LOG_RETENTION_DAYS, source: "decision 0130" },
  // Decision 0142: kept while the conversions they credit are (not partitioned yet, no retention).
  { table: "touches", column: "occurred_at", retentionDays: null, source: "decision 0142 (spec silent)" },
  // Decision 0144: kept, like the touches they credit; times past the months made ahead wait in a default partition.
  { table: "conversions", column: "occurred_at", retentionDays: null, source: "decision 0144 (spec silent)" },
  // Decision 0145: in their conversion's month, kept as long as it is.
  { table: "attribution_credits", column: "converted_at", retentionDays: null, source: "decision 0145 (spec silent)" },
  // Decision 0146: kept, like the conversions made from them; keys across months in `outcome_keys`.
  { table: "outcome_events", column: "occurred_at", retentionDays: null, source: "decision 0146 (spec silent)" },
  { table: "outbox", column: "created_at", retentionDays: OUTBOX_RETENTION_DAYS, source: "spec: outcome replay, 90-day window" },
  { table: "pii_access_log", column: "occurred_at", retentionDays: PII_LOG_RETENTION_DAYS, source: "spec: PII access log, retained 365 days" }
]

/**
 * Months created ahead of the current one (the current month always exists too), the name of a
 * table's partition for the month starting at `from` (UTC), and a month's first instant: the
 * conversions name and make their months the same way, so all come from one place.
 */
export { monthName as partitionName, MONTHS_AHEAD, monthStart } from "../../../migrations/support/monthly-partitions.ts"
