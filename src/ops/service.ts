import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { DatabaseUnavailable } from "../../schema/errors.ts"
import { DATABASE_RETRY_AFTER_SECONDS, DatabaseInfo } from "../platform/database.ts"
import { appliedMigrationId, latestMigrationId } from "../platform/migrator.ts"

export interface ReadinessReport {
  readonly mode: "postgres" | "embedded"
  readonly location: string
  readonly migrations: { readonly applied: number; readonly latest: number }
}

const unavailable = (reason: string, message: string) =>
  new DatabaseUnavailable({ message, reason, retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS })

/** Liveness and readiness of this process and its database. */
export class Health extends Context.Service<Health, {
  /** Database reachable and every migration applied, within two seconds; otherwise `database_unavailable`. */
  readonly readiness: Effect.Effect<ReadinessReport, DatabaseUnavailable>
}>()("svc/Health") {
  static readonly layer = Layer.effect(Health)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const info = yield* DatabaseInfo
      const readiness = Effect.gen(function*() {
        yield* sql`SELECT 1`
        const applied = yield* appliedMigrationId
        return { mode: info.mode, location: info.location, migrations: { applied, latest: latestMigrationId } }
      }).pipe(
        Effect.timeoutOrElse({
          duration: "2 seconds",
          orElse: () => Effect.fail(unavailable("database_unreachable", "The database did not answer in time."))
        }),
        Effect.catchTag("SqlError", () => Effect.fail(unavailable("database_unreachable", "The database is unreachable."))),
        Effect.flatMap((report) =>
          report.migrations.applied < report.migrations.latest
            ? Effect.fail(unavailable("migrations_pending", `Migrations pending: ${report.migrations.applied} of ${report.migrations.latest} applied.`))
            : Effect.succeed(report)
        ),
        Effect.provideService(SqlClient, sql),
        Effect.withSpan("Health.readiness")
      )
      return { readiness }
    })
  )
}
