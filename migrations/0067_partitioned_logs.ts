import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type Conversion, toMonthlyPartitions } from "./support/monthly-partitions.ts"

/**
 * The append-only logs become monthly range partitions (issue 35 part 3, decision 0133): the
 * webhook delivery attempts, the export delivery ledger, the request log and the PII access log. Their rows then go by dropping a month whole (src/ops/partitions), not by DELETE.
 *
 * Each table is converted in place, without copying a row: the table is renamed `<name>_legacy`,
 * a partitioned table takes its name and shape (columns, defaults, checks, indexes, foreign keys,
 * comment), and the old table is attached as its first partition, from MINVALUE to the start of
 * the month after its newest row (or after now). Its indexes that the parent also has are adopted,
 * not rebuilt; only the primary key is built again, with the partition column appended, as
 * PostgreSQL requires of a partitioned table's keys. The attach reads the old table once to check
 * its rows fit the range; the whole conversion is a catalogue change, an index build and that
 * read, seconds at the sizes the tests and benches use. The next two months are created here; the
 * maintenance job keeps two ahead from then on and drops the legacy partition like any other once
 * its range is past the retention.
 *
 * Identity columns cannot be carried by a partitioned table before PostgreSQL 17: the attempts'
 * `id` becomes a plain column fed by a sequence that continues where the identity stopped.
 *
 * The outbox stays a plain table for now: its fan-out read takes the rest of each claimed producer
 * batch per batch, and over monthly partitions a planner without statistics expects a row per
 * partition per batch, past the bound test/api/webhooks-claim-plan.test.ts holds it to.
 *
 * `outcome_events` stays a plain table: it is not history alone (retractions update and delete
 * it), its idempotency key must be unique across all time, and conversions, exports, payments and
 * leads hold foreign keys to it; it is converted with `conversions`.
 */

const TABLES: ReadonlyArray<Conversion> = [
  { table: "webhook_delivery_attempts", column: "attempted_at" },
  { table: "export_deliveries", column: "created_at" },
  { table: "request_logs", column: "created_at" },
  { table: "pii_access_log", column: "occurred_at" }
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  // It served the request log's row-by-row retention, which dropping months replaces.
  yield* sql`DROP INDEX request_logs_created_at`
  for (const conversion of TABLES) yield* toMonthlyPartitions(conversion)
})
