/**
 * The database probe behind readiness (`/readyz`) and the RPC status: one round trip, then the
 * id of the last applied migration.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { DatabaseUnavailable } from "../../schema/errors.ts"
import { APPLICATION_NAME, atDatabaseBoundary, DATABASE_RETRY_AFTER_SECONDS, decodeRows } from "../platform/database.ts"
import { appliedMigrationId } from "../platform/migrator.ts"

export class DatabaseProbe extends Context.Service<DatabaseProbe, {
  /**
   * The id of the last applied migration. Any failure of the database is `database_unavailable`
   * (reason `database_unreachable`), never a defect: a probe reports, whatever the error was.
   */
  readonly appliedMigration: Effect.Effect<number, DatabaseUnavailable>
}>()("svc/DatabaseProbe") {
  static readonly layer = Layer.effect(DatabaseProbe)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const appliedMigration = Effect.gen(function*() {
        yield* sql`SELECT 1`
        return yield* appliedMigrationId
      }).pipe(
        Effect.catchTag("SqlError", () =>
          Effect.fail(
            new DatabaseUnavailable({
              message: "The database is unreachable.",
              reason: "database_unreachable",
              retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS
            })
          )),
        Effect.provideService(SqlClient, sql)
      )
      return { appliedMigration }
    })
  )
}

/** One durable queue's backlog: rows waiting and the age of the oldest, in seconds. */
export const QueueBacklog = Schema.Struct({
  queue: Schema.String,
  depth: Schema.Int,
  lag_seconds: Schema.Finite
})
export type QueueBacklog = typeof QueueBacklog.Type

/** Sessions of this service in one state. */
export const ConnectionCount = Schema.Struct({
  state: Schema.Literals(["idle", "used"]),
  count: Schema.Int
})
export type ConnectionCount = typeof ConnectionCount.Type

/**
 * Reads (never writes) the backlog of the durable queues for the metrics (decision 0084): the
 * outbox (unpublished rows), replays (`work_jobs` queued), syncs (`sync_jobs` queued and due),
 * and the analytics rollups (`analytics_dirty` marks not yet folded in). One statement.
 */
export class QueueBacklogs extends Context.Service<QueueBacklogs, {
  readonly read: Effect.Effect<ReadonlyArray<QueueBacklog>, DatabaseUnavailable>
  /** This service's sessions on PostgreSQL by state (idle | used), as the server sees them; PostgreSQL only. */
  readonly connections: Effect.Effect<ReadonlyArray<ConnectionCount>, DatabaseUnavailable>
}>()("svc/QueueBacklogs") {
  static readonly layer = Layer.effect(QueueBacklogs)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = decodeRows(QueueBacklog)
      const backlog = (queue: string, from: string, waiting: string, since: string) =>
        sql`SELECT ${queue}::text AS queue, count(*)::int AS depth,
                   COALESCE(EXTRACT(EPOCH FROM now() - min(${sql.literal(since)})), 0)::float8 AS lag_seconds
            FROM ${sql.literal(from)} WHERE ${sql.literal(waiting)}`
      const read = rows(sql`
        ${backlog("outbox", "outbox", "published_at IS NULL", "created_at")}
        UNION ALL ${backlog("replays", "work_jobs", "state = 'queued'", "created_at")}
        UNION ALL ${backlog("sync_jobs", "sync_jobs", "status = 'queued' AND run_after <= now()", "run_after")}
        UNION ALL ${backlog("rollups", "analytics_dirty", "true", "marked_at")}`)
      // The driver's pool keeps its counts private (decision 0084), so the server's view is read:
      // sessions named after this service on this database, minus the one reading.
      const connections = decodeRows(ConnectionCount)(sql`
        SELECT s.state, count(a.pid)::int AS count
        FROM (VALUES ('idle'), ('used')) AS s(state)
        LEFT JOIN pg_stat_activity a
          ON a.datname = current_database() AND a.application_name = ${APPLICATION_NAME}
         AND a.pid <> pg_backend_pid()
         AND (CASE WHEN a.state = 'idle' THEN 'idle' ELSE 'used' END) = s.state
        GROUP BY s.state ORDER BY s.state`)
      return atDatabaseBoundary({ read, connections })
    })
  )
}
