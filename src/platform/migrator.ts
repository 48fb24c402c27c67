import { Effect } from "effect"
import * as Migrator from "effect/sql/Migrator"
import { SqlClient } from "effect/sql/SqlClient"
import { latestMigrationId, migrations } from "../../migrations/index.ts"

export const MIGRATIONS_TABLE = "svc_migrations"

const run = Migrator.make({})

/** Applies every pending migration under PostgreSQL's table lock; returns what it applied. */
export const migrate = run({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE }).pipe(
  Effect.withSpan("Migrator.migrate")
)

/** The newest applied migration id, or 0 on an empty database. */
export const appliedMigrationId = Effect.gen(function*() {
  const sql = yield* SqlClient
  const exists = yield* sql<{ present: boolean }>`SELECT to_regclass(${MIGRATIONS_TABLE}) IS NOT NULL AS present`
  if (exists[0]?.present !== true) return 0
  const rows = yield* sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM ${sql(MIGRATIONS_TABLE)}`
  return rows[0]?.id ?? 0
})

export { latestMigrationId }
