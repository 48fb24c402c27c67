/**
 * Runs once per `vitest run`, before any test file. On the embedded database (no DATABASE_URL)
 * it migrates one PGlite data directory through the real CLI (`migrate`) and hands its path to
 * the test processes in SVC_TEST_PGLITE_TEMPLATE: `testSettings()` (test/support/app.ts) starts
 * each app on a copy of it (about 0.1 s) instead of a fresh initdb plus every migration (about
 * 8 s each, over 100 apps a run). Startup still runs the migrator on the copy, which finds nothing
 * to do; the start-up tests (test/e2e/lifecycle.test.ts, test/e2e/cli-live-service.test.ts,
 * test/unit/startup-config.test.ts) keep an empty directory, so migrating one stays covered.
 * The copies are made beside the template and removed with it when the run ends.
 *
 * On PostgreSQL (DATABASE_URL) it migrates a template database `<database>_tpl` the same way;
 * each vitest worker runs its files on its own copy `<database>_w<n>` (test/support/worker-database.ts,
 * `CREATE DATABASE ... TEMPLATE`, about 0.3 s), so files run in parallel without sharing a database.
 * The run's own database stays as it was; the template and the copies are dropped when the run ends.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { databaseName, onDatabase, SERVER_URL_ENV, TEMPLATE_ENV, withDatabase, workerDatabaseName } from "./pg-databases.ts"

const cli = fileURLToPath(new URL("../../src/main/cli.ts", import.meta.url))

/** The template and worker databases of a run (all of them, also those left by a run that was killed). */
const runDatabases = (serverUrl: string, template: string) =>
  onDatabase(serverUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    const prefix = workerDatabaseName(template, "")
    const rows = yield* sql<{ readonly datname: string }>`SELECT datname FROM pg_database`
    return rows.map((row) => row.datname).filter((name) => name === template || name.startsWith(prefix))
  }))

const dropDatabases = (serverUrl: string, names: ReadonlyArray<string>) =>
  onDatabase(serverUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    for (const name of names) yield* sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`
  }))

const setupPostgres = async (serverUrl: string): Promise<() => Promise<void>> => {
  const template = `${databaseName(serverUrl)}_tpl`
  await dropDatabases(serverUrl, await runDatabases(serverUrl, template))
  await onDatabase(serverUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`CREATE DATABASE ${sql(template)}`
  }))
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: withDatabase(serverUrl, template),
    // The service refuses DATABASE_URL without a secrets key (decision 0105); migrating seals nothing.
    SVC_SECRETS_KEY: process.env["SVC_SECRETS_KEY"] ?? randomBytes(32).toString("base64")
  }
  execFileSync(process.execPath, [cli, "migrate"], { env, stdio: ["ignore", "ignore", "inherit"], timeout: 120_000 })
  process.env[SERVER_URL_ENV] = serverUrl
  process.env[TEMPLATE_ENV] = template
  return async () => dropDatabases(serverUrl, await runDatabases(serverUrl, template))
}

export default async function setup(): Promise<(() => void | Promise<void>) | undefined> {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl !== undefined && databaseUrl !== "") return setupPostgres(databaseUrl)
  // A caller's own template (an already migrated directory) is used as is.
  if (process.env["SVC_TEST_PGLITE_TEMPLATE"] !== undefined) return undefined
  const root = mkdtempSync(join(tmpdir(), "svc-pglite-template-"))
  const dataDir = join(root, "db")
  const env: Record<string, string | undefined> = { ...process.env, SVC_DATA_DIR: dataDir }
  delete env["DATABASE_URL"]
  // The vitest process runs on the pinned Node (npm scripts): the CLI runs under the same binary.
  execFileSync(process.execPath, [cli, "migrate"], { env, stdio: ["ignore", "ignore", "inherit"], timeout: 120_000 })
  process.env["SVC_TEST_PGLITE_TEMPLATE"] = dataDir
  return () => rmSync(root, { recursive: true, force: true })
}
