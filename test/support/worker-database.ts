/**
 * A vitest setup file (runs in each test file's worker before the file). On PostgreSQL it points
 * DATABASE_URL at this worker's own database, a copy of the run's migrated template
 * (test/support/global-setup.ts), made on the worker's first file: files run in parallel, one per
 * worker, and files of one worker run one after another on its database, as the whole run used to
 * on one. Only the test process changes: DATABASE_URL is what every test, and every service
 * process a test starts, reads.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { databaseName, onDatabase, SERVER_URL_ENV, TEMPLATE_ENV, withDatabase, workerDatabaseName } from "./pg-databases.ts"

const serverUrl = process.env[SERVER_URL_ENV]
const template = process.env[TEMPLATE_ENV]

if (serverUrl !== undefined && template !== undefined) {
  const name = workerDatabaseName(template, process.env["VITEST_POOL_ID"] ?? "1")
  // One worker runs one file at a time, so nothing else creates this worker's database meanwhile.
  await onDatabase(serverUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    const existing = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_database WHERE datname = ${name}`
    if (existing[0]?.n === 0) yield* sql`CREATE DATABASE ${sql(name)} TEMPLATE ${sql(template)}`
  }))
  process.env["DATABASE_URL"] = withDatabase(serverUrl, name)
  if (databaseName(process.env["DATABASE_URL"]) !== name) throw new Error(`could not point DATABASE_URL at ${name}`)
}
