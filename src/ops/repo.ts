/**
 * The database probe behind readiness (`/readyz`) and the RPC status: one round trip, then the
 * id of the last applied migration.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { DatabaseUnavailable } from "../../schema/errors.ts"
import { DATABASE_RETRY_AFTER_SECONDS } from "../platform/database.ts"
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
