/**
 * The partitions of the monthly-partitioned tables (decision 0133): listed from the catalogue,
 * created a month at a time, dropped whole. Only DDL: the rows belong to each table's owner.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"

/** One partition and its range, in epoch milliseconds; null for MINVALUE / MAXVALUE (or a default partition). */
export const PartitionRow = Schema.Struct({
  name: Schema.String,
  from_ms: Schema.NullOr(Schema.Number),
  to_ms: Schema.NullOr(Schema.Number),
  is_default: Schema.Boolean
})
export type PartitionRow = typeof PartitionRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

const quoted = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

/**
 * Waits this long at most for a table's lock: creating or dropping a partition locks its parent,
 * and a long query on it must not hold every later statement queued behind this one.
 */
const LOCK_TIMEOUT = "5s"

export class PartitionsRepo extends Context.Service<PartitionsRepo, {
  /** The table's partitions with their bounds (none when the table is not partitioned or absent). */
  readonly list: (table: string) => Repo<ReadonlyArray<PartitionRow>>
  /** Creates the partition `[from, to)` of `table` unless one of that name exists. */
  readonly create: (table: string, name: string, from: Date, to: Date) => Repo<void>
  /** Drops a partition of `table`, with its rows (the name comes from `list`). */
  readonly drop: (table: string, name: string) => Repo<void>
  /**
   * Runs `effect` in a transaction holding the table's maintenance lock, or answers none at once
   * when another runner holds it (that runner does the same work).
   */
  readonly locked: <A, E, R>(table: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<Option.Option<A>, E | DatabaseUnavailable, R>
  /**
   * The foreign keys a migration added `NOT VALID` to keep its lock short (decision 0146): new rows
   * are checked already; the stored ones are left to `validate`.
   */
  readonly unvalidated: Repo<ReadonlyArray<{ readonly table: string; readonly name: string }>>
  /**
   * Validates one of them: reads the stored rows without blocking writes (`SHARE UPDATE
   * EXCLUSIVE`). Answers false, the key left as it was, when a stored row breaks it.
   */
  readonly validate: (table: string, name: string) => Repo<boolean>
}>()("svc/PartitionsRepo") {
  static readonly layer = Layer.effect(PartitionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const many = decodeRows(PartitionRow)

      // The bounds as the catalogue prints them (a timestamptz literal with its offset), read back as
      // instants; the brackets spare the pattern a backslash (the template would cook it away).
      const list = (table: string) =>
        many(sql`
          SELECT c.relname AS name,
            (extract(epoch FROM (regexp_match(b.bound, 'FROM [(]''([^'']+)''[)]'))[1]::timestamptz) * 1000)::float8 AS from_ms,
            (extract(epoch FROM (regexp_match(b.bound, 'TO [(]''([^'']+)''[)]'))[1]::timestamptz) * 1000)::float8 AS to_ms,
            b.bound = 'DEFAULT' AS is_default
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
          CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
          WHERE i.inhparent = to_regclass(${table})
          ORDER BY c.relname`)

      const create = (table: string, name: string, from: Date, to: Date) =>
        Effect.gen(function*() {
          const range = `FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`
          const [fallback] = yield* sql<{ readonly name: string; readonly column: string }>`
            SELECT d.relname AS name, a.attname::text AS column
            FROM pg_partitioned_table p
            JOIN pg_class d ON d.oid = p.partdefid
            JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
            WHERE p.partrelid = to_regclass(${table})`
          if (fallback === undefined) {
            yield* sql.unsafe(`CREATE TABLE IF NOT EXISTS ${quoted(name)} PARTITION OF ${quoted(table)} ${range}`)
            return
          }
          const [exists] = yield* sql<{ readonly ok: boolean }>`SELECT true AS ok FROM pg_class WHERE oid = to_regclass(${name})`
          if (exists !== undefined) return
          // A default partition holds the times past the months made so far (decision 0144): the
          // month's rows move out of it into the new table, which is then attached. The default is
          // held meanwhile (the attach would take it anyway), so no row of the month lands there
          // in between; both scans the attach makes read only that month's few rows.
          const columns = yield* sql<{ readonly name: string }>`
            SELECT attname::text AS name FROM pg_attribute
            WHERE attrelid = to_regclass(${table}) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`
          const list = columns.map((column) => quoted(column.name)).join(", ")
          const at = quoted(fallback.column)
          yield* sql.unsafe(`LOCK TABLE ${quoted(fallback.name)} IN ACCESS EXCLUSIVE MODE`)
          yield* sql.unsafe(
            `CREATE TABLE ${quoted(name)} (LIKE ${quoted(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`
          )
          yield* sql.unsafe(
            `WITH moved AS (DELETE FROM ${quoted(fallback.name)} WHERE ${at} >= '${from.toISOString()}' AND ${at} < '${to.toISOString()}' ` +
              `RETURNING ${list}) INSERT INTO ${quoted(name)} (${list}) SELECT ${list} FROM moved`
          )
          yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ATTACH PARTITION ${quoted(name)} ${range}`)
        })

      const drop = (table: string, name: string) =>
        Effect.gen(function*() {
          // Only a partition of this table, read again under the lock: a name alone could be any table.
          const owned = yield* sql<{ readonly ok: boolean }>`
            SELECT true AS ok FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = to_regclass(${table}) AND c.relname = ${name}`
          if (owned.length === 0) return
          yield* sql.unsafe(`DROP TABLE ${quoted(name)}`)
        })

      const locked = <A, E, R>(table: string, effect: Effect.Effect<A, E, R>) =>
        orDatabaseUnavailable(sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<{ readonly locked: boolean }>`
            SELECT pg_try_advisory_xact_lock(hashtextextended(${`partition_maintenance:${table}`}, 0)) AS locked`
          if (row?.locked !== true) return Option.none<A>()
          yield* sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
          return Option.some(yield* effect)
        })))

      const unvalidated = Effect.map(
        sql<{ readonly table: string; readonly name: string }>`
          SELECT c.conrelid::regclass::text AS table, c.conname AS name FROM pg_constraint c
          WHERE c.contype = 'f' AND NOT c.convalidated AND c.conparentid = 0
            AND c.connamespace = current_schema()::regnamespace
          ORDER BY 1, 2`,
        (rows) => rows.map((row) => ({ table: row.table, name: row.name }))
      )

      const validate = (table: string, name: string) =>
        // In a savepoint of the caller's transaction: a refusal ends the savepoint, not the transaction.
        sql.withTransaction(sql.unsafe(`ALTER TABLE ${quoted(table)} VALIDATE CONSTRAINT ${quoted(name)}`)).pipe(
          Effect.as(true),
          Effect.catchIf((error) => error.reason._tag === "ConstraintError", () => Effect.succeed(false))
        )

      return { ...atDatabaseBoundary({ list, create, drop, validate }), unvalidated: orDatabaseUnavailable(unvalidated), locked }
    })
  )
}
