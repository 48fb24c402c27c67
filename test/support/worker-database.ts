/**
 * A vitest setup file (runs in each test file's worker before the file). On PostgreSQL it points
 * DATABASE_URL at this worker's own database, a copy of the run's migrated template
 * (test/support/global-setup.ts) made on the worker's first file: files run in parallel, one per
 * worker, and files of one worker run one after another on its database. Before each later file
 * the copy is emptied back to what the template holds (every row but the migration ledger), so no
 * file sees what an earlier one left (a queued sync job of a stopped app was picked up by
 * test/api/commerce-sync-volume.test.ts). Dropping and copying again per file would cost ~2 s (a
 * checkpoint each), TRUNCATE of every table as much; the DELETEs take ~0.05 s.
 * Only the test process changes: DATABASE_URL is what every test, and every service process a test
 * starts, reads.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { databaseName, onDatabase, SERVER_URL_ENV, TEMPLATE_ENV, withDatabase, workerDatabaseName } from "./pg-databases.ts"

/** The migrated template has no row outside the migration ledger: deleting every other row restores it. */
const emptied = Effect.gen(function*() {
  const sql = yield* SqlClient
  const tables = yield* sql<{ readonly name: string }>`
    SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
    WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND tablename <> 'svc_migrations'`
  // Foreign keys are not checked meanwhile (replica role), so the order of the deletes does not matter.
  yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SET LOCAL session_replication_role = replica`
    for (const table of tables) yield* sql.unsafe(`DELETE FROM ${table.name}`)
  }))
})

const serverUrl = process.env[SERVER_URL_ENV]
const template = process.env[TEMPLATE_ENV]

if (serverUrl !== undefined && template !== undefined) {
  const name = workerDatabaseName(template, process.env["VITEST_POOL_ID"] ?? "1")
  // One worker runs one file at a time, so nothing else creates this worker's database meanwhile.
  await onDatabase(serverUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    const existing = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`
    if (existing[0]?.n === 0) yield* sql`CREATE DATABASE ${sql(name)} TEMPLATE ${sql(template)}`
    return existing[0]?.n !== 0
  })).then((reused) => reused ? onDatabase(withDatabase(serverUrl, name), emptied) : undefined)
  process.env["DATABASE_URL"] = withDatabase(serverUrl, name)
  if (databaseName(process.env["DATABASE_URL"]) !== name) throw new Error(`could not point DATABASE_URL at ${name}`)
}
