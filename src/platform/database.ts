import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { DatabaseUnavailable } from "../../schema/errors.ts"
import { mkdirSync } from "node:fs"
import { AppConfig } from "./config.ts"
import { pgliteStream } from "./pglite.ts"

/** Which database this process runs on; reported by readiness, status and the RPC surface. */
export interface DatabaseInfoShape {
  readonly mode: "postgres" | "embedded"
  /** Host:port/database for PostgreSQL, the data directory for the embedded database. Never a secret. */
  readonly location: string
}

export class DatabaseInfo extends Context.Service<DatabaseInfo, DatabaseInfoShape>()("svc/DatabaseInfo") {}

type ClientLayer = Layer.Layer<PgClient.PgClient | SqlClient | DatabaseInfo, unknown>

/** Connection settings for a real PostgreSQL, split out of the URL so spans carry the right server address. */
export const postgresOptions = (url: Redacted.Redacted<string>) => {
  const parsed = new URL(Redacted.value(url))
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "postgres"
  return {
    host: parsed.hostname || "127.0.0.1",
    port: parsed.port ? Number(parsed.port) : 5432,
    database,
    username: parsed.username ? decodeURIComponent(parsed.username) : "postgres",
    password: parsed.password ? Redacted.make(decodeURIComponent(parsed.password)) : undefined,
    ssl: parsed.searchParams.get("sslmode") === "require" ? true : undefined
  }
}

const postgresLayer = (url: Redacted.Redacted<string>): ClientLayer => {
  const options = postgresOptions(url)
  return Layer.merge(
    PgClient.layer({
      ...options,
      maxConnections: 10,
      minConnections: 0,
      // Requests answer 503 database_unavailable quickly while the server is away.
      connectTimeout: "3 seconds",
      idleTimeout: "60 seconds",
      applicationName: "attribution-service",
      // Timestamps are rendered and compared in UTC whatever the server's default.
      startupParameters: { timezone: "UTC" }
    }),
    Layer.succeed(DatabaseInfo)({ mode: "postgres", location: `${options.host}:${options.port}/${options.database}` })
  )
}

/**
 * Embedded PostgreSQL (PGlite) in `SVC_DATA_DIR`. One session, reached through the same
 * wire-protocol client as a real server, so every statement runs unchanged on both.
 */
const embeddedLayer = (dataDir: string): ClientLayer =>
  Layer.merge(
    PgClient.layerFrom(
      Effect.gen(function*() {
        mkdirSync(dataDir, { recursive: true })
        const db = yield* Effect.acquireRelease(
          Effect.promise(() => PGlite.create(dataDir)),
          (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
        )
        const client = yield* PgClient.makeClient({ stream: () => pgliteStream(db), database: "postgres", username: "postgres", ssl: false })
        // The cluster's runner storage switches to table leases for a single-session database.
        Object.defineProperty(client, "driver", { value: "pglite" })
        return client
      })
    ),
    Layer.succeed(DatabaseInfo)({ mode: "embedded", location: dataDir })
  )

/** PostgreSQL when `DATABASE_URL` is set, the embedded database otherwise. */
export const DatabaseLive: Layer.Layer<PgClient.PgClient | SqlClient | DatabaseInfo, unknown, AppConfig> = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Option.match(settings.databaseUrl, {
      onNone: () => embeddedLayer(settings.dataDir),
      onSome: postgresLayer
    }))
)

/**
 * A column of nullable values as one array parameter (for `unnest(...::type[])`). The driver
 * infers an array's type from its elements, so an array of nulls only is sent as the array
 * literal `{NULL,...}` instead, which the statement's cast types.
 */
export const nullableColumn = <A extends string | boolean>(values: ReadonlyArray<A | null>): ReadonlyArray<A | null> | string =>
  values.length > 0 && values.every((value) => value === null) ? `{${values.map(() => "NULL").join(",")}}` : values

/** Seconds a client should wait before retrying while the database is away. */
export const DATABASE_RETRY_AFTER_SECONDS = 2

export const databaseUnavailable = (reason = "database_unreachable") =>
  new DatabaseUnavailable({
    message: "The database is unreachable. Retry the same request shortly.",
    reason,
    retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS
  })

/**
 * Where `SqlError` stops: a lost or refused connection becomes `database_unavailable`
 * (retry the same request), anything else is a defect (a bug or a broken invariant), and so
 * is a row that does not decode with its schema.
 */
export const orDatabaseUnavailable = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError | Schema.SchemaError> | DatabaseUnavailable, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E, SqlError | Schema.SchemaError> => isSqlError(error) || Schema.isSchemaError(error),
    (error) => isSqlError(error) && isConnectionFailure(error) ? Effect.fail(databaseUnavailable()) : Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, SqlError | Schema.SchemaError> | DatabaseUnavailable, R>

/**
 * For a transaction's own failures (BEGIN, COMMIT): a lost connection is `database_unavailable`,
 * anything else a defect, as `orDatabaseUnavailable` does for statements.
 */
export const transactionFailures = <A, E, R>(
  effect: Effect.Effect<A, E | SqlError, R>
): Effect.Effect<A, Exclude<E, SqlError> | DatabaseUnavailable, R> =>
  Effect.catchIf(
    effect,
    (error): error is Extract<E | SqlError, SqlError> => isSqlError(error),
    (error) => isConnectionFailure(error) ? Effect.fail(databaseUnavailable()) : Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, SqlError> | DatabaseUnavailable, R>

const connectionReasons = new Set(["ConnectionError", "AuthenticationError", "AuthorizationError", "StatementTimeoutError"])

export const isConnectionFailure = (error: SqlError): boolean => connectionReasons.has(error.reason._tag)

/** A statement's rows decoded with `schema` (a row that does not decode is a defect, via orDatabaseUnavailable). */
export const decodeRows = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.flatMap(statement, decode)
}

/** The first row of a statement, decoded with `schema`, if there is one. */
export const decodeFirstRow = <S extends Schema.Top>(schema: S) => {
  const rows = decodeRows(schema)
  return <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
    Effect.map(rows(statement), (decoded) => Option.fromNullishOr(decoded[0]))
}
