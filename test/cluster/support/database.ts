import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { postgresOptions } from "../../../src/platform/database.ts"

export interface TestDatabase {
  /** `DATABASE_URL` of the fresh database. */
  readonly url: string
  readonly name: string
  readonly drop: () => Promise<void>
}

const onAdmin = <A, E>(adminUrl: string, effect: Effect.Effect<A, E, SqlClient>) => {
  const options = postgresOptions(Redacted.make(adminUrl))
  return Effect.runPromise(
    effect.pipe(
      Effect.provide(PgClient.layer({ ...options, maxConnections: 1, connectTimeout: "3 seconds" })),
      Effect.scoped
    )
  )
}

/** A new, empty database on the server of `adminUrl` (which names an existing database, e.g. `postgres`). */
export const createTestDatabase = async (adminUrl: string, prefix = "svc_cluster_test"): Promise<TestDatabase> => {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`
  await onAdmin(adminUrl, Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`CREATE DATABASE ${sql(name)}`
  }))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () =>
      onAdmin(
        adminUrl,
        Effect.gen(function*() {
          const sql = yield* SqlClient
          yield* sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`
        })
      ).then(() => undefined)
  }
}
