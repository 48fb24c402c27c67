import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type Conversion, forEachBlockRange, literal, monthName, monthStart, primaryKey, quoted } from "./monthly-partitions.ts"

/**
 * Splitting `<table>_legacy` into months while writes go on (decision 0147). A conversion leaves every
 * row it found in one partition from MINVALUE; a month there is dropped only when the newest row of
 * the whole partition is past the retention, and a read bounded in time reads all of it. The split
 * moves its rows into one table per month (and a new, smaller `_legacy` for rows older than
 * `SPLIT_MONTHS` months) without holding the table:
 *
 * 1. `startSplit`: a private partitioned table `<table>_split` with the parent's keys and indexes and
 *    one partition per month (each with a check of its range), and a trigger on the legacy partition
 *    that mirrors every row written, changed or deleted there into it, by primary key.
 * 2. `copySplit`: the stored rows copied a block range at a time (`FOR KEY SHARE`, so a row is not
 *    deleted between its read and its copy; a change is upserted by the trigger over the copy), the
 *    parent's foreign keys added `NOT VALID` and validated on each month; then `vacuumSplit`.
 * 3. `finishSplit`, in one short transaction under the parent's lock: the legacy partition detached,
 *    each month detached from the private table and attached to the parent (its indexes, key,
 *    foreign keys and range check adopted: nothing is built or read), the foreign keys that point at
 *    the table added again `NOT VALID` (detaching would read them); after the commit the old
 *    partition dropped and those keys validated.
 *
 * Every step can be run again: a split that stopped resumes where the trigger keeps the copy whole.
 */

/** Where a long split says how far it is (the command: a line on standard error). */
export type Progress = (line: string) => Effect.Effect<void>
const silent: Progress = () => Effect.void

/** Months split out at most, counted back from the legacy partition's end; older rows stay in the new `_legacy`. */
export const SPLIT_MONTHS = 60

/** Names used by a split of `table`. */
export const splitNames = (table: string) => ({
  legacy: `${table}_legacy`,
  staging: `${table}_split`,
  mirror: `${table}_split_mirror`,
  stagedLegacy: `${table}_split_legacy`,
  /** The old legacy partition between the swap and its drop. */
  old: `${table}_split_old`
})

export interface SplitPlan {
  readonly table: string
  /** The partitions the legacy one becomes: the new `_legacy` (from MINVALUE) and one per month. */
  readonly parts: ReadonlyArray<{ readonly staged: string; readonly final: string; readonly from: string | null; readonly to: string }>
}

export type SplitOutcome =
  | { readonly table: string; readonly split: false; readonly reason: string }
  | { readonly table: string; readonly split: true; readonly months: ReadonlyArray<string>; readonly legacyUntil: string | null; readonly lockedMs: number }

const catalogue = (table: string, column: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const columns = yield* sql<{ readonly name: string; readonly generated: string; readonly identity: string }>`
      SELECT attname::text AS name, attgenerated::text AS generated, attidentity::text AS identity FROM pg_attribute
      WHERE attrelid = to_regclass(${table}) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`
    const primary = yield* primaryKey(table)
    if (!primary.columns.includes(column)) return yield* Effect.die(new Error(`${table}: no primary key with ${column}`))
    const computed = columns.find((candidate) => candidate.generated !== "" || candidate.identity !== "")
    if (computed !== undefined) return yield* Effect.die(new Error(`${table}: column ${computed.name} is computed; a split copies values`))
    return { columns: columns.map((candidate) => candidate.name), key: primary.columns }
  })

/**
 * The partitions of `parent` with their bounds as ISO instants (`from` null for MINVALUE), parsed by
 * the database: the catalogue prints a bound in the session's time zone.
 */
const partitionsOf = (parent: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ readonly name: string; readonly from: string | null; readonly to: string | null }>`
      SELECT c.relname AS name,
        to_char((regexp_match(b.bound, 'FROM [(]''([^'']+)''[)]'))[1]::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "from",
        to_char((regexp_match(b.bound, 'TO [(]''([^'']+)''[)]'))[1]::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "to"
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
      WHERE i.inhparent = to_regclass(${parent}) ORDER BY c.relname`)

/** The legacy partition's upper bound, or none when the table has no legacy partition. */
const legacyBound = (table: string) =>
  Effect.gen(function*() {
    const { legacy } = splitNames(table)
    const row = (yield* partitionsOf(table)).find((candidate) => candidate.name === legacy)
    if (row === undefined) return undefined
    if (row.from !== null || row.to === null) return yield* Effect.die(new Error(`${legacy}: not a partition from MINVALUE`))
    return new Date(row.to)
  })

/** Whether the mirror trigger is on the legacy partition (a split under way). */
const mirroring = (table: string) =>
  Effect.flatMap(SqlClient, (sql) => {
    const names = splitNames(table)
    return Effect.map(
      sql<{ readonly ok: boolean }>`SELECT true AS ok FROM pg_trigger WHERE tgrelid = to_regclass(${names.legacy}) AND tgname = ${names.mirror}`,
      (rows) => rows.length > 0
    )
  })

/**
 * The months the legacy partition becomes, from its oldest row's month (at most `SPLIT_MONTHS`
 * back from its end) to its end, and the new `_legacy` before them.
 */
const planSplit = (entry: Conversion) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const names = splitNames(entry.table)
    const bound = yield* legacyBound(entry.table)
    if (bound === undefined) return { reason: "no legacy partition" } as const
    const [oldest] = yield* sql.unsafe<{ readonly at: string | null }>(
      `SELECT to_char(min(${quoted(entry.column)}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at FROM ${quoted(names.legacy)}`
    )
    if (oldest?.at == null) return { reason: "the legacy partition is empty" } as const
    const first = new Date(oldest.at)
    const earliest = monthStart(bound, -SPLIT_MONTHS).getTime()
    let from = new Date(Math.max(monthStart(first, 0).getTime(), earliest))
    const parts: Array<SplitPlan["parts"][number]> = [
      { staged: names.stagedLegacy, final: names.legacy, from: null, to: from.toISOString() }
    ]
    while (from.getTime() < bound.getTime()) {
      const to = monthStart(from, 1)
      parts.push({ staged: monthName(names.staging, from), final: monthName(entry.table, from), from: from.toISOString(), to: to.toISOString() })
      from = to
    }
    return { plan: { table: entry.table, parts } satisfies SplitPlan } as const
  })

/** The parts of a split under way, read back from the private table. */
const stagedParts = (entry: Conversion) =>
  Effect.map(partitionsOf(splitNames(entry.table).staging), (rows) => {
    const names = splitNames(entry.table)
    const iso = (at: string | null) => at === null ? null : new Date(at).toISOString()
    // As `planSplit` made them: the new legacy first, then the months in order.
    return rows.map((row) => ({
      staged: row.name,
      final: row.name === names.stagedLegacy ? names.legacy : `${entry.table}${row.name.slice(names.staging.length)}`,
      from: iso(row.from),
      to: iso(row.to) ?? ""
    })).sort((a, b) => (a.from ?? "").localeCompare(b.from ?? ""))
  })

const rangeCheck = (staged: string) => `${staged}_range`

/** A part's partition bound, as the private table and then the parent take it. */
const rangeOf = (part: SplitPlan["parts"][number]) =>
  part.from === null
    ? `FOR VALUES FROM (MINVALUE) TO (${literal(part.to)})`
    : `FOR VALUES FROM (${literal(part.from)}) TO (${literal(part.to)})`

/**
 * Gives `staged`'s indexes (and the key's constraint with its index) the names they would have had
 * as partitions of the table: the staged prefix replaced by the final one. Index names are
 * schema-wide, so the new legacy's are renamed only once the old legacy is dropped.
 */
const renameIndexes = (table: string, staged: string, final: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const indexes = yield* sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = to_regclass(${table}) ORDER BY c.relname`
    for (const index of indexes) {
      if (index.name.startsWith(staged)) {
        yield* sql.unsafe(`ALTER INDEX ${quoted(index.name)} RENAME TO ${quoted(`${final}${index.name.slice(staged.length)}`)}`)
      }
    }
  })

/**
 * Step 1: the private table and its months, and the mirror trigger. Answers why not when there is
 * nothing to split. A split found under way (its trigger in place) is kept; one that stopped before
 * its trigger is made again.
 */
export const startSplit = (entry: Conversion) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const names = splitNames(entry.table)
    if (yield* mirroring(entry.table)) return { plan: { table: entry.table, parts: yield* stagedParts(entry) } } as const
    // What a split that stopped after its swap left: the old partition, detached already.
    yield* sql.unsafe(`DROP TABLE IF EXISTS ${quoted(names.old)}`)
    yield* sql.unsafe(`DROP FUNCTION IF EXISTS ${quoted(names.mirror)}()`)
    yield* sql.unsafe(`DROP TABLE IF EXISTS ${quoted(names.staging)}`)
    const planned = yield* planSplit(entry)
    if (!("plan" in planned)) return planned
    const { parts } = planned.plan
    const { columns, key } = yield* catalogue(entry.table, entry.column)
    const at = quoted(entry.column)

    // The parent's indexes as they are defined, renamed onto the private table (without ONLY: they
    // reach its months). Built on empty tables, kept while the copy fills them.
    const indexes = yield* sql<{ readonly def: string }>`
      SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
      WHERE i.indrelid = to_regclass(${entry.table}) AND NOT i.indisprimary ORDER BY i.indexrelid`
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(
        `CREATE TABLE ${quoted(names.staging)} (LIKE ${quoted(entry.table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE) PARTITION BY RANGE (${at})`
      )
      yield* sql.unsafe(`ALTER TABLE ${quoted(names.staging)} ADD PRIMARY KEY (${key.map(quoted).join(", ")})`)
      let n = 0
      for (const index of indexes) {
        const def = index.def.replace(
          /^CREATE (UNIQUE )?INDEX \S+ ON (?:ONLY )?\S+ USING /,
          (_match, unique: string | undefined) => `CREATE ${unique ?? ""}INDEX ${quoted(`${names.staging}_i${++n}`)} ON ${quoted(names.staging)} USING `
        )
        if (def === index.def) return yield* Effect.die(new Error(`${entry.table}: cannot read index ${index.def}`))
        yield* sql.unsafe(def)
      }
      for (const part of parts) {
        yield* sql.unsafe(`CREATE TABLE ${quoted(part.staged)} PARTITION OF ${quoted(names.staging)} ${rangeOf(part)}`)
        // The range as a check of its own: the attach to the parent then reads no row to prove it.
        const check = part.from === null
          ? `${at} < ${literal(part.to)}::timestamptz`
          : `${at} >= ${literal(part.from)}::timestamptz AND ${at} < ${literal(part.to)}::timestamptz`
        yield* sql.unsafe(`ALTER TABLE ${quoted(part.staged)} ADD CONSTRAINT ${quoted(rangeCheck(part.staged))} CHECK (${check})`)
      }

      // Every change to a legacy row from now on reaches the private table: by primary key, the
      // newest version over whatever the copy wrote (a row's key may change with its time).
      const list = columns.map(quoted).join(", ")
      const keyList = key.map(quoted).join(", ")
      const sameKey = key.map((column) => `${quoted(column)} = OLD.${quoted(column)}`).join(" AND ")
      const rest = columns.filter((column) => !key.includes(column))
      const onConflict = rest.length === 0
        ? "DO NOTHING"
        : `DO UPDATE SET ${rest.map((column) => `${quoted(column)} = EXCLUDED.${quoted(column)}`).join(", ")}`
      yield* sql.unsafe(`
        CREATE OR REPLACE FUNCTION ${quoted(names.mirror)}() RETURNS trigger LANGUAGE plpgsql AS $mirror$
        BEGIN
          IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (${key.map((column) => `OLD.${quoted(column)}`).join(", ")}) IS DISTINCT FROM (${
        key.map((column) => `NEW.${quoted(column)}`).join(", ")
      })) THEN
            DELETE FROM ${quoted(names.staging)} WHERE ${sameKey};
          END IF;
          IF TG_OP <> 'DELETE' THEN
            INSERT INTO ${quoted(names.staging)} (${list}) VALUES (${columns.map((column) => `NEW.${quoted(column)}`).join(", ")})
            ON CONFLICT (${keyList}) ${onConflict};
          END IF;
          RETURN NULL;
        END
        $mirror$`)
      yield* sql.unsafe(`SET LOCAL lock_timeout = '5s'`)
      yield* sql.unsafe(
        `CREATE TRIGGER ${quoted(names.mirror)} AFTER INSERT OR UPDATE OR DELETE ON ${quoted(names.legacy)} ` +
          `FOR EACH ROW EXECUTE FUNCTION ${quoted(names.mirror)}()`
      )
    }))
    return planned
  })

/**
 * Step 2: copies the stored rows (again, harmlessly, on a resumed split), then readies each month
 * for the attach: the parent's foreign keys validated on it, its indexes named as the parent's
 * partitions' are.
 */
export const copySplit = (entry: Conversion, progress: Progress = silent) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const names = splitNames(entry.table)
    if (!(yield* mirroring(entry.table))) return yield* Effect.die(new Error(`${entry.table}: no split under way`))
    const { columns, key } = yield* catalogue(entry.table, entry.column)
    const list = columns.map(quoted).join(", ")
    let reported = -1
    yield* forEachBlockRange(
      names.legacy,
      "l",
      (where) =>
        sql.unsafe(
          `INSERT INTO ${quoted(names.staging)} (${list}) ` +
            `SELECT ${list} FROM (SELECT ${columns.map((column) => `l.${quoted(column)}`).join(", ")} FROM ${
              quoted(names.legacy)
            } l WHERE ${where} FOR KEY SHARE) c ` +
            `ON CONFLICT (${key.map(quoted).join(", ")}) DO NOTHING`
        ),
      // At each tenth of the table, and at its end.
      (done, total) => {
        const tenth = Math.floor(done * 10 / total)
        if (tenth <= reported) return Effect.void
        reported = tenth
        return progress(`copied ${done} of ${total} blocks of ${names.legacy}`)
      }
    )
    const parts = yield* stagedParts(entry)
    const foreign = yield* sql<{ readonly name: string; readonly def: string }>`
      SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = to_regclass(${entry.table}) AND contype = 'f' AND conparentid = 0 ORDER BY conname`
    for (const part of parts) {
      for (const key of foreign) {
        // The parent's name, as the partitions it makes get (a foreign key's name is the table's own).
        const name = key.name
        const [state] = yield* sql<{ readonly validated: boolean }>`
          SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = to_regclass(${part.staged}) AND conname = ${name}`
        // NOT VALID locks the referenced table a moment (bounded here); the validation blocks no write.
        if (state === undefined) {
          yield* sql.withTransaction(Effect.andThen(
            sql.unsafe(`SET LOCAL lock_timeout = '5s'`),
            sql.unsafe(`ALTER TABLE ${quoted(part.staged)} ADD CONSTRAINT ${quoted(name)} ${key.def} NOT VALID`)
          ))
        }
        if (state?.validated !== true) yield* sql.unsafe(`ALTER TABLE ${quoted(part.staged)} VALIDATE CONSTRAINT ${quoted(name)}`)
      }
      if (part.from !== null) yield* renameIndexes(part.staged, part.staged, part.final)
    }
  })

/**
 * Between steps 2 and 3: each month vacuumed and analysed. The legacy partition had statistics and a
 * visibility map; copied rows have neither, and the first reads of each would set every row's hint
 * bits (at 10M touches a day's rollup recompute took 2.4 s after a split without this, 0.9 s with
 * it). `VACUUM` runs outside any transaction; `ANALYZE` alone inside one.
 */
export const vacuumSplit = (entry: Conversion, options: { readonly inTransaction: boolean }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    for (const part of yield* stagedParts(entry)) {
      yield* sql.unsafe(`${options.inTransaction ? "ANALYZE" : "VACUUM (ANALYZE)"} ${quoted(part.staged)}`)
    }
  })

/**
 * Step 3: the swap, in one transaction holding the parent's lock for as long as catalogue changes
 * take; then the foreign keys into the table validated. Answers the months now in place.
 */
export const finishSplit = (entry: Conversion) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const names = splitNames(entry.table)
    const parts = yield* stagedParts(entry)
    const started = yield* Clock.currentTimeMillis
    const referencing = yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(`SET LOCAL lock_timeout = '5s'`)
      yield* sql.unsafe(`LOCK TABLE ${quoted(entry.table)} IN ACCESS EXCLUSIVE MODE`)
      if (!(yield* mirroring(entry.table))) return yield* Effect.die(new Error(`${entry.table}: no split under way`))
      // Detaching a partition that foreign keys point into reads them to refuse it; the rows stay,
      // so the keys go and come back NOT VALID (validated below, without the lock).
      const referencing = yield* sql<{ readonly table: string; readonly name: string; readonly def: string }>`
        SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE confrelid = to_regclass(${entry.table}) AND contype = 'f' AND conparentid = 0 ORDER BY 1, 2`
      for (const key of referencing) yield* sql.unsafe(`ALTER TABLE ${quoted(key.table)} DROP CONSTRAINT ${quoted(key.name)}`)
      yield* sql.unsafe(`ALTER TABLE ${quoted(entry.table)} DETACH PARTITION ${quoted(names.legacy)}`)
      // Dropped after the commit: a drop unlinks the files and clears the buffers of gigabytes
      // while the commit holds the lock (about 1 s at 10M touches).
      yield* sql.unsafe(`DROP TRIGGER ${quoted(names.mirror)} ON ${quoted(names.legacy)}`)
      yield* sql.unsafe(`ALTER TABLE ${quoted(names.legacy)} RENAME TO ${quoted(names.old)}`)
      for (const part of parts) {
        yield* sql.unsafe(`ALTER TABLE ${quoted(names.staging)} DETACH PARTITION ${quoted(part.staged)}`)
        yield* sql.unsafe(`ALTER TABLE ${quoted(part.staged)} RENAME TO ${quoted(part.final)}`)
        yield* sql.unsafe(`ALTER TABLE ${quoted(entry.table)} ATTACH PARTITION ${quoted(part.final)} ${rangeOf(part)}`)
        yield* sql.unsafe(`ALTER TABLE ${quoted(part.final)} DROP CONSTRAINT ${quoted(rangeCheck(part.staged))}`)
      }
      yield* sql.unsafe(`DROP TABLE ${quoted(names.staging)}`)
      for (const key of referencing) {
        yield* sql.unsafe(`ALTER TABLE ${quoted(key.table)} ADD CONSTRAINT ${quoted(key.name)} ${key.def} NOT VALID`)
      }
      return referencing
    }))
    // From asking for the lock to the commit: what writes to the table waited at most.
    const lockedMs = (yield* Clock.currentTimeMillis) - started
    yield* sql.unsafe(`DROP TABLE ${quoted(names.old)}`)
    yield* sql.unsafe(`DROP FUNCTION ${quoted(names.mirror)}()`)
    // The new legacy's index names were the old one's until that was dropped.
    yield* renameIndexes(names.legacy, names.stagedLegacy, names.legacy)
    for (const key of referencing) yield* sql.unsafe(`ALTER TABLE ${quoted(key.table)} VALIDATE CONSTRAINT ${quoted(key.name)}`)
    return {
      months: parts.filter((part) => part.from !== null).map((part) => part.final),
      legacyUntil: parts.find((part) => part.from === null)?.to ?? null,
      lockedMs
    }
  })

/**
 * The whole split (steps 1 to 3), each step committing its own work; `inTransaction` (tests, which
 * roll everything back) analyses the months without vacuuming them; `progress` hears each phase.
 */
export const splitLegacy = (
  entry: Conversion,
  options: { readonly inTransaction: boolean; readonly progress?: Progress } = { inTransaction: false }
) =>
  Effect.gen(function*() {
    const progress = options.progress ?? silent
    const started = yield* startSplit(entry)
    if (!("plan" in started)) return { table: entry.table, split: false, reason: started.reason } satisfies SplitOutcome
    yield* progress(`${started.plan.parts.length - 1} months and a new ${splitNames(entry.table).legacy}; copying while writes go on`)
    yield* copySplit(entry, progress)
    yield* progress("vacuuming and analysing the months")
    yield* vacuumSplit(entry, options)
    yield* progress("swapping the months in under the table's lock")
    const done = yield* finishSplit(entry)
    return { table: entry.table, split: true, months: done.months, legacyUntil: done.legacyUntil, lockedMs: done.lockedMs } satisfies SplitOutcome
  })
