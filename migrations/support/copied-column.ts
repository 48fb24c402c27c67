import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { forEachBlockRange, quoted } from "./monthly-partitions.ts"

/**
 * A time column a table gains from a parent row, so its rows name their month without a look-up
 * (issue 35 part 3):
 * - credit rows take their conversion's `occurred_at` (`converted_at`, decision 0145), their
 *   partition column;
 * - and their touch's `occurred_at` (`touch_at`, decision 0148), so a read from a credit row to its
 *   touch names the touch's whole key and reads that touch's month only.
 * The release writes it with every row from then on.
 *
 * Filling it rewrites every row, so, like the conversion's key (decision 0143), it can be done
 * beforehand while writes go on (`partitions prepare`): a trigger fills the column in rows the
 * running release writes without it, the stored rows are filled a block range at a time, and a
 * `NOT NULL` check is validated; the migration then finds nothing to fill and sets `NOT NULL`
 * without a scan (the valid check proves it). The table may be plain or partitioned.
 */
export interface CopiedColumn {
  readonly table: string
  /** The column added (timestamptz). */
  readonly column: string
  readonly parent: string
  /** The parent's time column copied. */
  readonly parentColumn: string
  /** Pairs (this table's column, the parent's column) naming the parent row. */
  readonly on: ReadonlyArray<readonly [string, string]>
  /**
   * Where the parent's time lies around a column of this row, when it is known: the look-up of a
   * partitioned parent then reads the months in that span only, not every month.
   */
  readonly near?: { readonly column: string; readonly before: string; readonly after: string }
}

/** Credit rows take their conversion's time (migration 0073). */
export const CREDITS_MONTH: CopiedColumn = {
  table: "attribution_credits",
  column: "converted_at",
  parent: "conversions",
  parentColumn: "occurred_at",
  on: [["conversion_id", "id"], ["profile_id", "profile_id"]]
}

/**
 * Credit rows take their touch's time (migration 0075). A credited touch lies in its conversion's
 * window, at most 365 days before it and never after it (the engine's candidates, with a millisecond
 * either side).
 */
export const CREDITS_TOUCH_TIME: CopiedColumn = {
  table: "attribution_credits",
  column: "touch_at",
  parent: "touches",
  parentColumn: "occurred_at",
  on: [["touch_id", "id"], ["profile_id", "profile_id"]],
  near: { column: "converted_at", before: "366 days", after: "1 millisecond" }
}

/** In the order `partitions prepare` fills them. */
export const COPIED_COLUMNS: ReadonlyArray<CopiedColumn> = [CREDITS_MONTH, CREDITS_TOUCH_TIME]

const fillTrigger = (entry: CopiedColumn) => `${entry.table}_${entry.column}_fill`
const notNullCheck = (entry: CopiedColumn) => `${entry.table}_${entry.column}_present`

/** Whether the preparation's `NOT NULL` check exists and is validated. */
const presenceValidated = (entry: CopiedColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [present] = yield* sql<{ readonly validated: boolean }>`
      SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = to_regclass(${entry.table}) AND conname = ${notNullCheck(entry)}`
    return present === undefined ? "absent" as const : present.validated ? "valid" as const : "not valid" as const
  })

/** The parent's time for the row `alias` of the table. */
const parentTime = (entry: CopiedColumn, alias: string) => {
  const near = entry.near === undefined ? [] : [
    `p.${quoted(entry.parentColumn)} >= ${alias}.${quoted(entry.near.column)} - interval '${entry.near.before}'`,
    `p.${quoted(entry.parentColumn)} <= ${alias}.${quoted(entry.near.column)} + interval '${entry.near.after}'`
  ]
  const on = entry.on.map(([mine, theirs]) => `p.${quoted(theirs)} = ${alias}.${quoted(mine)}`)
  return `(SELECT p.${quoted(entry.parentColumn)} FROM ${quoted(entry.parent)} p WHERE ${[...on, ...near].join(" AND ")})`
}

/** Whether the column is there and `NOT NULL` already: the migration has run. */
const completed = (entry: CopiedColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [column] = yield* sql<{ readonly not_null: boolean }>`
      SELECT attnotnull AS not_null FROM pg_attribute
      WHERE attrelid = to_regclass(${entry.table}) AND attname = ${entry.column} AND NOT attisdropped`
    return column?.not_null === true
  })

/**
 * Beforehand, outside a transaction (each statement commits on its own): the column, the trigger
 * filling it in rows written without it, the stored rows filled block range by block range, then a
 * check that it is present, validated. Running it again does only what is left. Answers whether
 * there was anything to prepare (false once the migration has completed the column).
 */
export const prepareCopiedColumn = (entry: CopiedColumn) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const table = quoted(entry.table)
    const column = quoted(entry.column)
    if (yield* completed(entry)) return false
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
    yield* forEachBlockRange(entry.table, "t", (range, relation) =>
      sql.unsafe(`UPDATE ${quoted(relation)} t SET ${column} = ${parentTime(entry, "t")} WHERE ${range} AND t.${column} IS NULL`))
    const check = quoted(notNullCheck(entry))
    const present = yield* presenceValidated(entry)
    if (present === "absent") yield* sql.unsafe(`ALTER TABLE ${table} ADD CONSTRAINT ${check} CHECK (${column} IS NOT NULL) NOT VALID`)
    if (present !== "valid") yield* sql.unsafe(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${check}`)
    return true
  })

/**
 * In the migration, under its lock: the column added unless prepared, every row still without it
 * filled (none when prepared), `NOT NULL` set (no scan when the prepared check is valid), and the
 * preparation's trigger and check dropped (the release writes the column itself).
 */
export const completeCopiedColumn = (entry: CopiedColumn) =>
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
