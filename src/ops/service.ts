import { Context, Effect, Layer } from "effect"
import { DatabaseUnavailable, ServiceUnavailable } from "../../schema/errors.ts"
import { DATABASE_RETRY_AFTER_SECONDS, DatabaseInfo } from "../platform/database.ts"
import { Lifecycle } from "../platform/lifecycle.ts"
import { latestMigrationId } from "../platform/migrator.ts"
import { DatabaseProbe } from "./repo.ts"

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
  /** `readiness`, and not stopping: from a stop signal on, `service_unavailable` (reason `shutting_down`). */
  readonly ready: Effect.Effect<ReadinessReport, DatabaseUnavailable | ServiceUnavailable>
}>()("svc/Health") {
  static readonly layer = Layer.effect(Health)(
    Effect.gen(function*() {
      const probe = yield* DatabaseProbe
      const info = yield* DatabaseInfo
      const lifecycle = yield* Lifecycle
      const readiness = probe.appliedMigration.pipe(
        Effect.map((applied): ReadinessReport => ({
          mode: info.mode,
          location: info.location,
          migrations: { applied, latest: latestMigrationId }
        })),
        Effect.timeoutOrElse({
          duration: "2 seconds",
          orElse: () => Effect.fail(unavailable("database_unreachable", "The database did not answer in time."))
        }),
        Effect.flatMap((report) =>
          report.migrations.applied < report.migrations.latest
            ? Effect.fail(unavailable("migrations_pending", `Migrations pending: ${report.migrations.applied} of ${report.migrations.latest} applied.`))
            : Effect.succeed(report)
        ),
        Effect.withSpan("Health.readiness")
      )
      const ready = Effect.suspend((): Effect.Effect<ReadinessReport, DatabaseUnavailable | ServiceUnavailable> =>
        lifecycle.isDraining()
          ? Effect.fail(
            new ServiceUnavailable({
              message: "The service is stopping: send new requests to another instance.",
              reason: "shutting_down",
              retry_after_seconds: 1
            })
          )
          : readiness
      )
      return { readiness, ready }
    })
  ).pipe(Layer.provide(DatabaseProbe.layer))
}
