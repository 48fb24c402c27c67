/**
 * The PostgreSQL side of running test files in parallel: one migrated template database per run
 * (made by test/support/global-setup.ts) and one copy of it per vitest worker
 * (test/support/worker-database.ts), so two files running at once never share a database.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { postgresOptions } from "../../src/platform/database.ts"

/** The server URL the run was started with (DATABASE_URL before a worker points it at its own copy). */
export const SERVER_URL_ENV = "SVC_TEST_PG_SERVER_URL"
/** Name of the run's migrated template database. */
export const TEMPLATE_ENV = "SVC_TEST_PG_TEMPLATE"

/** Runs `effect` on one connection to the database named by `url`. */
export const onDatabase = <A, E>(url: string, effect: Effect.Effect<A, E, SqlClient>) =>
  Effect.runPromise(
    effect.pipe(
      Effect.provide(PgClient.layer({ ...postgresOptions(Redacted.make(url)), maxConnections: 1, connectTimeout: "10 seconds" })),
      Effect.scoped
    )
  )

/** `url` naming the database `name` on the same server. */
export const withDatabase = (url: string, name: string) => {
  const next = new URL(url)
  next.pathname = `/${name}`
  return next.toString()
}

export const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\//, ""))

/** The worker copies of a run: `<run database>_w<pool id>` (a name is at most 63 bytes). */
export const workerDatabaseName = (template: string, poolId: string) => `${template.replace(/_tpl$/, "")}_w${poolId}`
