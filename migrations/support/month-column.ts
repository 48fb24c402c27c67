import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { forEachBlockRange, quoted } from "./monthly-partitions.ts"

/**
 * A month column a table gains from its parent row before it can be kept in monthly partitions
 * (issue 35 part 3, decision 0145): credit rows have no time of their own, so they take their
 * conversion's `occurred_at`, written with every row from then on.
 *
 * Filling it rewrites every row, so, like the conversion's key (decision 0143), it can be done
 * beforehand while writes go on (`partitions prepare`): a trigger fills the column in rows the
 * running release writes without it, the stored rows are filled a block range at a time, and a
 * `NOT NULL` check is validated; the migration then finds nothing to fill and sets `NOT NULL`
 * without a scan (the valid check proves it).
 */
export interface MonthColumn {
  readonly table: string
  /** The column added (timestamptz), the table's partition column. */
  readonly column: string
  readonly parent: string
  /** The parent's time column copied. */
  readonly parentColumn: string
  /** Pairs (this table's column, the parent's column) naming the parent row. */
  readonly on: ReadonlyArray<readonly [string, string]>
}

/** Credit rows take their conversion's time (migration 0073). */
export const CREDITS_MONTH: MonthColumn = {
  table: "attribution_credits",
  column: "converted_at",
  parent: "conversions",
  parentColumn: "occurred_at",
  on: [["conversion_id", "id"], ["profile_id", "profile_id"]]
}

export const MONTH_COLUMNS: ReadonlyArray<MonthColumn> = [CREDITS_MONTH]

const fillTrigger = (entry: MonthColumn) => `${entry.table}_${entry.column}_fill`
const notNullCheck = (entry: MonthColumn) => `${entry.table}_${entry.column}_present`

/** Whether the preparation's `NOT NULL` check exists and is validated. */
const presenceValidated = (entry: MonthColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [present] = yield* sql<{ readonly validated: boolean }>`
      SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = to_regclass(${entry.table}) AND conname = ${notNullCheck(entry)}`
    return present === undefined ? "absent" as const : present.validated ? "valid" as const : "not valid" as const
  })

/** The parent's time for the row `alias` of the table. */
const parentTime = (entry: MonthColumn, alias: string) =>
  `(SELECT p.${quoted(entry.parentColumn)} FROM ${quoted(entry.parent)} p WHERE ` +
  entry.on.map(([mine, theirs]) => `p.${quoted(theirs)} = ${alias}.${quoted(mine)}`).join(" AND ") + ")"

/**
 * Beforehand, outside a transaction (each statement commits on its own): the column, the trigger
 * filling it in rows written without it, the stored rows filled block range by block range, then a
 * check that it is present, validated. Running it again does only what is left.
 */
export const prepareMonthColumn = (entry: MonthColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const table = quoted(entry.table)
    const column = quoted(entry.column)
    // Converted already (the column is its partition key by then): nothing to prepare.
    const [kind] = yield* sql<{ readonly relkind: string }>`SELECT relkind::text AS relkind FROM pg_class WHERE oid = to_regclass(${entry.table})`
    if (kind?.relkind !== "r") return
    yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} timestamptz`)
    yield* sql.unsafe(`
      CREATE OR REPLACE FUNCTION ${quoted(fillTrigger(entry))}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.${column} IS NULL THEN NEW.${column} := ${parentTime(entry, "NEW")}; END IF;
        RETURN NEW;
      END $$`)
    // Inserts and updates both: an update of a row not filled yet moves it past the blocks read below.
    yield* sql.unsafe(`
      CREATE OR REPLACE TRIGGER ${quoted(fillTrigger(entry))} BEFORE INSERT OR UPDATE ON ${table}
      FOR EACH ROW EXECUTE FUNCTION ${quoted(fillTrigger(entry))}()`)
    yield* forEachBlockRange(entry.table, "t", (range) =>
      sql.unsafe(`UPDATE ${table} t SET ${column} = ${parentTime(entry, "t")} WHERE ${range} AND t.${column} IS NULL`))
    const check = quoted(notNullCheck(entry))
    const present = yield* presenceValidated(entry)
    if (present === "absent") yield* sql.unsafe(`ALTER TABLE ${table} ADD CONSTRAINT ${check} CHECK (${column} IS NOT NULL) NOT VALID`)
    if (present !== "valid") yield* sql.unsafe(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${check}`)
  })

/**
 * In the migration, under its lock: the column added unless prepared, every row still without it
 * filled (none when prepared), `NOT NULL` set (no scan when the prepared check is valid), and the
 * preparation's trigger and check dropped (the release writes the column itself).
 */
export const completeMonthColumn = (entry: MonthColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const table = quoted(entry.table)
    const column = quoted(entry.column)
    yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} timestamptz`)
    yield* sql.unsafe(`DROP TRIGGER IF EXISTS ${quoted(fillTrigger(entry))} ON ${table}`)
    yield* sql.unsafe(`DROP FUNCTION IF EXISTS ${quoted(fillTrigger(entry))}()`)
    if ((yield* presenceValidated(entry)) !== "valid") {
      yield* sql.unsafe(`UPDATE ${table} t SET ${column} = ${parentTime(entry, "t")} WHERE t.${column} IS NULL`)
      // A row whose parent is gone has no time (migration 0066's cascade deletes them): said plainly.
      const [orphan] = yield* sql.unsafe<{ readonly n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} IS NULL`)
      if ((orphan?.n ?? 0) > 0) return yield* Effect.die(new Error(`${entry.table}: ${orphan?.n} rows without a ${entry.parent} row`))
    }
    yield* sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN ${column} SET NOT NULL`)
    yield* sql.unsafe(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${quoted(notNullCheck(entry))}`)
  })
