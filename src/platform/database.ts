import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted, Schedule, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { DatabaseUnavailable } from "../../schema/errors.ts"
import { AppConfig } from "./config.ts"
import { privateDir, privateTree } from "./data-dir.ts"
import { DataDirLock, holdDataDir, type LockContents } from "./data-dir-lock.ts"
import { countTransactionWaits } from "./db-metrics.ts"
import { pgliteStream } from "./pglite.ts"

/** Which database this process runs on; reported by readiness, status and the RPC surface. */
export interface DatabaseInfoShape {
  readonly mode: "postgres" | "embedded"
  /** Host:port/database for PostgreSQL, the data directory for the embedded database. Never a secret. */
  readonly location: string
}

export class DatabaseInfo extends Context.Service<DatabaseInfo, DatabaseInfoShape>()("svc/DatabaseInfo") {}

type ClientLayer = Layer.Layer<PgClient.PgClient | SqlClient | DatabaseInfo | DataDirLock, unknown>

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

/** The `application_name` of this service's PostgreSQL sessions (the pool gauges count them by it). */
export const APPLICATION_NAME = "attribution-service"

const postgresLayer = (url: Redacted.Redacted<string>): ClientLayer => {
  const options = postgresOptions(url)
  return Layer.merge(
    // Built as `PgClient.layer` does, with transactions counted while they wait for a connection (decision 0101).
    PgClient.layerFrom(Effect.map(PgClient.make({
      ...options,
      maxConnections: 10,
      minConnections: 0,
      // Requests answer 503 database_unavailable quickly while the server is away.
      connectTimeout: "3 seconds",
      idleTimeout: "60 seconds",
      applicationName: APPLICATION_NAME,
      // Timestamps are rendered and compared in UTC whatever the server's default. No JIT (decision
      // 0125): a generic plan costed without statistics passes jit_above_cost and was compiled on
      // every execution (34 ms of a 15 ms statement).
      startupParameters: { timezone: "UTC", jit: "off" }
    }), countTransactionWaits)),
    Layer.merge(
      Layer.succeed(DatabaseInfo)({ mode: "postgres", location: `${options.host}:${options.port}/${options.database}` }),
      DataDirLock.none
    )
  )
}

/**
 * Embedded PostgreSQL (PGlite) in `SVC_DATA_DIR`. One session, reached through the same
 * wire-protocol client as a real server, so every statement runs unchanged on both.
 */
const embeddedLayer = (dataDir: string, opener: LockContents["kind"]): ClientLayer => {
  // Held before PGlite opens the directory and released after it closes (decision 0052).
  const lock = Layer.effect(DataDirLock)(Effect.gen(function*() {
    yield* warnIfNotPrivate(dataDir, Effect.sync(() => privateDir(dataDir)))
    return yield* holdDataDir(dataDir, opener)
  }))
  const client = PgClient.layerFrom(
    Effect.gen(function*() {
      // Opened only by the lock's holder.
      yield* DataDirLock
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => PGlite.create(dataDir)),
        (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
      )
      // initdb's files are 0666 (and relcache files 0644): the owner's only, now that they exist.
      yield* warnIfNotPrivate(dataDir, Effect.sync(() => privateTree(dataDir)))
      const client = yield* PgClient.makeClient({ stream: () => pgliteStream(db), database: "postgres", username: "postgres", ssl: false })
      // The cluster's runner storage switches to table leases for a single-session database.
      Object.defineProperty(client, "driver", { value: "pglite" })
      return countTransactionWaits(client)
    })
  )
  return Layer.merge(client, Layer.succeed(DatabaseInfo)({ mode: "embedded", location: dataDir })).pipe(
    Layer.provideMerge(lock)
  )
}

/** What could not be made the owner's alone (a directory or file of another user) is said once, not fatal. */
const warnIfNotPrivate = (dataDir: string, tightened: Effect.Effect<ReadonlyArray<string>>) =>
  Effect.flatMap(tightened, (problems) =>
    problems.length === 0 ? Effect.void : Effect.logWarning(
      `SVC_DATA_DIR ${dataDir}: ${problems.length} path(s) could not be made the service user's alone ` +
        `(directories 0700, files 0600): ${problems.slice(0, 3).join(", ")}`
    ))

const databaseFor = (opener: LockContents["kind"]): Layer.Layer<PgClient.PgClient | SqlClient | DatabaseInfo | DataDirLock, unknown, AppConfig> =>
  Layer.unwrap(
    AppConfig.useSync((settings) =>
      Option.match(settings.databaseUrl, {
        onNone: () => embeddedLayer(settings.dataDir, opener),
        onSome: postgresLayer
      }))
  )

/** PostgreSQL when `DATABASE_URL` is set, the embedded database otherwise (held by this serving process). */
export const DatabaseLayer = databaseFor("service")

/** The same database for a one-shot CLI command: an embedded one is held as `cli` while it runs. */
export const CliDatabaseLayer = databaseFor("cli")

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
    (error) => isSqlError(error) && isConnectionFailure(error) ? Effect.fail(databaseUnavailable(reasonOf(error))) : Effect.die(error)
  ) as Effect.Effect<A, Exclude<E, SqlError | Schema.SchemaError> | DatabaseUnavailable, R>

/** A repository method as its callers see it: no `SqlError` or row-decoding failure, `database_unavailable` instead. */
export type AtBoundary<F> = F extends (...args: infer A) => Effect.Effect<infer X, infer E, infer R>
  ? (...args: A) => Effect.Effect<X, Exclude<E, SqlError | Schema.SchemaError> | DatabaseUnavailable, R>
  : F extends Effect.Effect<infer X, infer E, infer R>
    ? Effect.Effect<X, Exclude<E, SqlError | Schema.SchemaError> | DatabaseUnavailable, R>
  : F

/**
 * A repository's methods with `SqlError` stopped once, at its boundary (`orDatabaseUnavailable`
 * applied to every effect a method returns), instead of a wrapper around each statement.
 */
export const atDatabaseBoundary = <M extends Record<string, unknown>>(methods: M): { readonly [K in keyof M]: AtBoundary<M[K]> } =>
  Object.fromEntries(Object.entries(methods).map(([name, method]) => [
    name,
    Effect.isEffect(method)
      ? orDatabaseUnavailable(method)
      : typeof method === "function"
      ? (...args: ReadonlyArray<unknown>) => {
        const result: unknown = method(...args)
        return Effect.isEffect(result) ? orDatabaseUnavailable(result) : result
      }
      : method
  ])) as { readonly [K in keyof M]: AtBoundary<M[K]> }

/**
 * Failures that say nothing about the request: the connection is gone or refused, or the
 * database gave up on a transaction that can succeed as is when retried (deadlock,
 * serialization, lock or statement timeout). A statement the database rejects for its
 * content is not among them: retrying it cannot help.
 */
const connectionReasons = new Set([
  "ConnectionError",
  "AuthenticationError",
  "AuthorizationError",
  "StatementTimeoutError",
  "DeadlockError",
  "SerializationError",
  "LockTimeoutError"
])

/**
 * SQLSTATE classes that say the server, not the statement, is the problem: 08 (connection
 * exception) and 57P (operator intervention: shutting down, crash shutdown, starting up after a
 * restart, 57P03, while it replays its log). The driver files 57P under `UnknownError`, so the
 * code is read from the cause it keeps.
 */
const unavailableSqlStates = /^(08|57P)/

/** What the socket says when the server is not there (yet) or went away mid-conversation. */
const unavailableSocketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"])

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined

export const isConnectionFailure = (error: SqlError): boolean => {
  if (connectionReasons.has(error.reason._tag)) return true
  const code = codeOf(error.reason.cause)
  return code !== undefined && (unavailableSqlStates.test(code) || unavailableSocketCodes.has(code))
}

/** A transaction the database aborted to resolve a conflict with another one: it can succeed as is when run again. */
const conflictReasons = new Set(["DeadlockError", "SerializationError"])

const reasonOf = (error: SqlError) => conflictReasons.has(error.reason._tag) ? "transaction_conflict" : "database_unreachable"

/**
 * Runs a whole transaction again (up to three times, after a short jittered pause) when the
 * database aborted it to break a deadlock or a serialization conflict; a client never sees
 * a conflict that a retry here resolves. Wrap the transaction, never a statement inside it.
 */
export const retryConflicts = <A, E, R>(transaction: Effect.Effect<A, E | DatabaseUnavailable, R>) =>
  Effect.retry(transaction, {
    times: 3,
    schedule: Schedule.jittered(Schedule.exponential("10 millis")),
    while: (error) => error instanceof DatabaseUnavailable && error.reason === "transaction_conflict"
  })

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
