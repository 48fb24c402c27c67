import { Effect, Option, Schema } from "effect"
import * as Migrator from "effect/sql/Migrator"
import { SqlClient } from "effect/sql/SqlClient"
import { latestMigrationId, migrations } from "../../migrations/index.ts"
import { decodeFirstRow } from "./database.ts"

export const MIGRATIONS_TABLE = "svc_migrations"

const run = Migrator.make({})

/** Applies every pending migration under PostgreSQL's table lock; returns what it applied. */
export const migrate = run({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE }).pipe(
  Effect.withSpan("Migrator.migrate")
)

const firstPresent = decodeFirstRow(Schema.Struct({ present: Schema.Boolean }))
const firstId = decodeFirstRow(Schema.Struct({ id: Schema.NullOr(Schema.Int) }))

/** The newest applied migration id, or 0 on an empty database. */
export const appliedMigrationId = Effect.gen(function*() {
  const sql = yield* SqlClient
  const exists = yield* firstPresent(sql`SELECT to_regclass(${MIGRATIONS_TABLE}) IS NOT NULL AS present`)
  if (!Option.exists(exists, (row) => row.present)) return 0
  const latest = yield* firstId(sql`SELECT max(migration_id) AS id FROM ${sql(MIGRATIONS_TABLE)}`)
  return Option.getOrElse(Option.flatMapNullishOr(latest, (row) => row.id), () => 0)
}).pipe(
  // Callers handle only `SqlError` (readiness reports it): a row that does not decode is a defect.
  Effect.catchIf(Schema.isSchemaError, Effect.die)
)

export { latestMigrationId }
