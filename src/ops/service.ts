import { Context, Effect, Layer, Metric, Schedule } from "effect"
import { DatabaseUnavailable, ServiceUnavailable } from "../../schema/errors.ts"
import { APPLICATION_NAME, DATABASE_RETRY_AFTER_SECONDS, DatabaseInfo } from "../platform/database.ts"
import { Lifecycle } from "../platform/lifecycle.ts"
import { latestMigrationId } from "../platform/migrator.ts"
import { dbConnectionCount, queueDepth, queueLag, rollupLag } from "../platform/metrics.ts"
import { DatabaseProbe, QueueBacklogs } from "./repo.ts"

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

/**
 * The database as a status report tells it (the RPC `ServiceStatus`): the id of the last applied
 * migration, or undefined when the database failed or did not answer within two seconds. Never fails.
 */
export class DatabaseStatus extends Context.Service<DatabaseStatus, {
  readonly appliedMigration: Effect.Effect<number | undefined>
}>()("svc/DatabaseStatus") {
  static readonly layer = Layer.effect(DatabaseStatus)(
    Effect.gen(function*() {
      const probe = yield* DatabaseProbe
      const appliedMigration = probe.appliedMigration.pipe(
        Effect.timeoutOrElse({ duration: "2 seconds", orElse: () => Effect.succeed(undefined) }),
        Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(undefined))
      )
      return { appliedMigration }
    })
  ).pipe(Layer.provide(DatabaseProbe.layer))
}

/** How often each runner reads the queue backlogs (every runner reports the same figures: take the max across runners). */
const BACKLOG_POLL = "15 seconds"

/**
 * Keeps the queue gauges current (decision 0084): `svc.queue.depth` / `svc.queue.lag` per queue
 * and `svc.rollup.lag`, read every 15 s by a background fiber. A database outage skips a reading
 * (the gauges keep their last value; `/readyz` tells the outage).
 */
export const QueueGaugesLayer = Layer.effectDiscard(
  Effect.gen(function*() {
    const backlogs = yield* QueueBacklogs
    const info = yield* DatabaseInfo
    const reading = backlogs.read.pipe(
      Effect.flatMap((rows) =>
        Effect.forEach(rows, (row) =>
          row.queue === "rollups"
            ? Metric.update(rollupLag, row.lag_seconds)
            : Effect.andThen(
              Metric.update(Metric.withAttributes(queueDepth, { "svc.queue": row.queue }), row.depth),
              Metric.update(Metric.withAttributes(queueLag, { "svc.queue": row.queue }), row.lag_seconds)
            ), { discard: true })
      ),
      Effect.catchTag("DatabaseUnavailable", () => Effect.void),
      Effect.withTracerEnabled(false)
    )
    yield* Effect.forkScoped(Effect.repeat(reading, Schedule.spaced(BACKLOG_POLL)))
    // The embedded database is one in-process session with no server view of it: no pool gauges there.
    if (info.mode === "postgres") {
      const sampling = backlogs.connections.pipe(
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) =>
            Metric.update(Metric.withAttributes(dbConnectionCount, {
              "db.client.connection.state": row.state,
              "db.client.connection.pool.name": APPLICATION_NAME
            }), row.count), { discard: true })),
        Effect.catchTag("DatabaseUnavailable", () => Effect.void),
        Effect.withTracerEnabled(false)
      )
      yield* Effect.forkScoped(Effect.repeat(sampling, Schedule.spaced(BACKLOG_POLL)))
    }
  })
).pipe(Layer.provide(QueueBacklogs.layer))
