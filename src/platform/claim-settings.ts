import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"

/**
 * Settings for a claim's transaction (`SET LOCAL`, until it ends), run first in it: a claim is
 * written as a walk of its queue's index in claim order that stops at its limit (issue 34). Planned
 * on an empty queue (no statistics: autovacuum is off here, and a new queue has none anyway),
 * PostgreSQL prices a bitmap of every due row and a sort of them as cheap as that walk, and a
 * pooled connection keeps that plan: at 200,000 queued sync jobs one claim then read all of them
 * (397 ms). With bitmaps and full sorts priced out, the walk is the plan whatever the statistics.
 */
export const orderedClaimSettings = (sql: SqlClient) =>
  sql`SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)`

/**
 * Settings for a transaction whose statements all read by key (crediting and replays; the rollups'
 * take of marks): no JIT compilation, whose cost (tens of ms a statement) exceeds these short
 * statements' own, and no sequential scans. A table emptied and analyzed (a replay's reset of a
 * month, the marks table drained) keeps statistics that say "empty" beside an index that kept its
 * pages; a probe planned there became a scan, kept on the connection while the table refilled: one
 * read of stored credit rows took 325 s of a 10M-touch replay, the take 153 ms at 200,000 marks. With
 * scans priced out, the plan stays a probe whatever the statistics say. No parallel workers either: a
 * probe costed high by a table without statistics was planned parallel, and starting the workers
 * took 100 ms on a busy machine for one row (test/api/visitor-reads-plan.test.ts, in a CI run).
 */
export const byKeySettings = (sql: SqlClient) =>
  sql`SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true),
             set_config('max_parallel_workers_per_gather', '0', true)`

/**
 * `effect` in a transaction of its own (a savepoint, inside a caller's) under `byKeySettings`: a
 * statement by key outside any tuned transaction, such as a lookup an API request makes or the
 * ingest's binding of visitors. Inside a caller's transaction the settings hold until that
 * transaction ends (a released savepoint keeps `SET LOCAL`); they only price out scans, JIT and
 * parallel workers, and a plan first made under them stays a probe (the touches' analytics trigger,
 * planned under them once per connection, kept 0.6-0.8 ms for 200 touches against 7.2 ms under
 * `keyedWriteSettings`).
 */
export const byKey = <A, E, R>(sql: SqlClient, effect: Effect.Effect<A, E, R>) =>
  sql.withTransaction(Effect.andThen(byKeySettings(sql), effect))

/**
 * Settings for a transaction that writes rows it names by key from an array (`unnest`), such as
 * the export worker's acknowledgement of a batch: with scans of the table, bitmaps and hash or merge
 * joins priced out, each row is a probe of the primary key. Kept from an empty queue, the join was
 * planned as a hash of a sequential scan of the whole queue (53 ms at 200,000 exports, in a CI run).
 */
export const keyedWriteSettings = (sql: SqlClient) =>
  sql`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
             set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`

/**
 * `statement` in a transaction of its own that first applies `keyedWriteSettings`: a write that
 * names rows another transaction may change meanwhile updates them by key (decision 0153).
 */
export const keyedWrite = <A, E, R>(sql: SqlClient, statement: Effect.Effect<A, E, R>) =>
  sql.withTransaction(Effect.andThen(keyedWriteSettings(sql), statement))
