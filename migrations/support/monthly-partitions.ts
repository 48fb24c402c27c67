import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Converting a plain table to monthly range partitions in place (issue 35 part 3, decisions 0133
 * and 0143), shared by the migrations that convert tables (0067, 0070, 0071) and the operator's
 * `partitions prepare` (src/main/cli.ts), which does the long part of a conversion beforehand
 * without blocking writes.
 */

export interface Conversion {
  readonly table: string
  /** The timestamptz column the months are over. */
  readonly column: string
}

/** Months made ahead of the current one; the maintenance job keeps the same (src/ops/partitions). */
export const MONTHS_AHEAD = 2

/** An identifier, quoted for SQL text. */
export const quoted = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

/** Blocks of a table one statement of an online fill reads (about 100,000 narrow rows). */
const FILL_BLOCKS = 1_000

/**
 * Runs `statement` once per range of `FILL_BLOCKS` blocks of `table`, given the range's `ctid`
 * condition on `alias` and the relation to name: each range its own statement, so an online fill
 * holds no row long. A partitioned table's ranges are those of each of its partitions in turn, the
 * partition named (a `ctid` names a row within one partition only; a range over the parent would
 * take that range of every partition in one statement). `progress`, if given, hears the blocks
 * done and the total after each range.
 */
export const forEachBlockRange = <E, R>(
  table: string,
  alias: string,
  statement: (where: string, relation: string) => Effect.Effect<unknown, E, R>,
  progress?: (done: number, total: number) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const leaves = yield* sql<{ readonly name: string; readonly blocks: number }>`
      SELECT c.relname AS name, (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS blocks
      FROM pg_partition_tree(to_regclass(${table})) p JOIN pg_class c ON c.oid = p.relid
      WHERE p.isleaf
      -- A plain table is not in a tree; a partition is its own (one row for both: UNION).
      UNION
      SELECT c.relname, (pg_relation_size(c.oid) / current_setting('block_size')::int)::int FROM pg_class c
      WHERE c.oid = to_regclass(${table}) AND c.relkind = 'r'
      ORDER BY 1`
    const total = leaves.reduce((sum, leaf) => sum + leaf.blocks, 0)
    let done = 0
    for (const leaf of leaves) {
      for (let from = 0; from < leaf.blocks; from += FILL_BLOCKS) {
        yield* statement(`${alias}.ctid >= '(${from},0)'::tid AND ${alias}.ctid < '(${from + FILL_BLOCKS},0)'::tid`, leaf.name)
        done += Math.min(FILL_BLOCKS, leaf.blocks - from)
        if (progress !== undefined) yield* progress(done, total)
      }
    }
  })
/** A string literal for SQL text. */
export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The first instant (UTC) of the month `offset` months after the one holding `at`. */
export const monthStart = (at: Date, offset: number) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1))

/** The name of `table`'s partition for the month starting at `from` (UTC). */
export const monthName = (table: string, from: Date) =>
  `${table}_p${from.getUTCFullYear()}${String(from.getUTCMonth() + 1).padStart(2, "0")}`

/**
 * Indexes a table needs before it is converted, built where a conversion can adopt them:
 * - unique keys that gain the month column, each where the month follows from the key (so the
 *   wider key holds exactly what the old one did): a conversion's `occurred_at` is its outcome
 *   event's, written once (decision 0144);
 * - plain indexes replacing what a dropped key gave its readers: outcome events' profile prefix,
 *   which their idempotency key's index served until the key moved to `outcome_keys` (decision 0146).
 * The migration builds each before converting, unless `prepareMonthlyPartitions` already did, concurrently.
 */
export const MONTHLY_INDEXES: Readonly<
  Record<string, ReadonlyArray<{ readonly name: string; readonly columns: ReadonlyArray<string>; readonly unique: boolean }>>
> = {
  conversions: [{ name: "conversions_outcome_event_month", columns: ["outcome_event_id", "profile_id", "occurred_at"], unique: true }],
  // The whole key after the profile, like conversions' (profile_id, occurred_at, id): a probe by
  // the whole key that picks it anyway (a plan made while a month was empty, and cached, as the
  // foreign keys' checks are) still finds its one row, not the profile's month or instant.
  outcome_events: [{ name: "outcome_events_profile_time", columns: ["profile_id", "occurred_at", "id"], unique: false }]
}

/**
 * Builds the index `name` unless it exists and is valid: a failed concurrent build leaves an
 * invalid one behind, dropped and built again. `concurrently` outside a transaction (prepare),
 * inside one under the migration's lock.
 */
const buildIndex = (table: string, name: string, columns: ReadonlyArray<string>, unique: boolean, concurrently: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const how = concurrently ? " CONCURRENTLY" : ""
    const [existing] = yield* sql<{ readonly valid: boolean }>`
      SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass(${name})`
    if (existing?.valid === true) return
    if (existing !== undefined) yield* sql.unsafe(`DROP INDEX${how} ${quoted(name)}`)
    yield* sql.unsafe(
      `CREATE${unique ? " UNIQUE" : ""} INDEX${how} ${quoted(name)} ON ${quoted(table)} (${columns.map(quoted).join(", ")})`
    )
  })

/** Builds `table`'s `MONTHLY_INDEXES` that are missing or invalid (see `buildIndex`). */
export const buildMonthlyIndexes = (table: string, concurrently: boolean) =>
  Effect.forEach(
    MONTHLY_INDEXES[table] ?? [],
    (index) => buildIndex(table, index.name, index.columns, index.unique, concurrently),
    { discard: true }
  )

/** The unique index `prepareMonthlyPartitions` builds: the key the table's months will need. */
export const preparedIndexName = (table: string) => `${table}_pkey_monthly`
/** The check `prepareMonthlyPartitions` validates: every row before the first month; its comment is the bound. */
export const preparedBoundName = (table: string) => `${table}_months_bound`

/**
 * What a conversion spends under its lock on a large table, done beforehand while writes go on
 * (decision 0143): the primary key with the month column (and the table's `MONTHLY_INDEXES`), built
 * `CONCURRENTLY`, and a check that
 * every row lies before the first month, validated (which reads the table, holding only
 * `SHARE UPDATE EXCLUSIVE`). The conversion then adopts both: the old table becomes a partition
 * without a scan or an index build. The bound is the start of the month after the newest row and
 * at least two months from now: a row at or past it is refused until the conversion runs, so the
 * migration is due before then (running this again pushes the bound on). Outside any transaction
 * (`CONCURRENTLY` refuses one). Answers the bound, or none for a table converted already.
 */
export const prepareMonthlyPartitions = ({ column, table }: Conversion) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [kind] = yield* sql<{ readonly relkind: string }>`SELECT relkind::text AS relkind FROM pg_class WHERE oid = to_regclass(${table})`
    if (kind === undefined) return yield* Effect.die(new Error(`${table}: no such table`))
    // Converted already: nothing to prepare.
    if (kind.relkind !== "r") return Option.none<string>()
    const { columns: keyColumns } = yield* monthlyKey(table, column)
    const index = preparedIndexName(table)
    const check = preparedBoundName(table)
    const [bound] = yield* sql.unsafe<{ readonly at: string }>(
      `SELECT to_char(greatest(date_trunc('month', max(${quoted(column)}) AT TIME ZONE 'UTC') + interval '1 month',
                               date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months'),
                      'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at
       FROM ${quoted(table)}`
    )
    if (bound === undefined) return yield* Effect.die(new Error(`${table}: no bound`))

    yield* buildIndex(table, index, keyColumns, true, true)
    yield* buildMonthlyIndexes(table, true)
    // The check under a new name first, then the old one dropped: no moment without a bound.
    const fresh = `${check}_next`
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} DROP CONSTRAINT IF EXISTS ${quoted(fresh)}`)
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(fresh)} CHECK (${quoted(column)} < ${literal(bound.at)}::timestamptz) NOT VALID`
    )
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} VALIDATE CONSTRAINT ${quoted(fresh)}`)
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} DROP CONSTRAINT IF EXISTS ${quoted(check)}`)
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} RENAME CONSTRAINT ${quoted(fresh)} TO ${quoted(check)}`)
    yield* sql.unsafe(`COMMENT ON CONSTRAINT ${quoted(check)} ON ${quoted(table)} IS ${literal(bound.at)}`)
    return Option.some(bound.at)
  })

/** The table's primary key: its name and its columns, in order. */
export const primaryKey = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [primary] = yield* sql<{ readonly name: string; readonly cols: ReadonlyArray<string> }>`
      SELECT k.conname AS name,
        ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
              JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i) AS cols
      FROM pg_constraint k WHERE k.conrelid = to_regclass(${table}) AND k.contype = 'p'`
    if (primary === undefined) return yield* Effect.die(new Error(`${table}: no primary key`))
    return { name: primary.name, columns: primary.cols }
  })

/**
 * The table's primary key: its name, and its columns with `column` appended (a partitioned
 * table's keys carry it).
 */
const monthlyKey = (table: string, column: string) =>
  Effect.map(primaryKey(table), ({ columns, name }) => ({ name, columns: columns.includes(column) ? columns : [...columns, column] }))

/** Converts one plain table to monthly range partitions over `column`, keeping its rows where they are. */
export const toMonthlyPartitions = ({ column, table }: Conversion) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const legacy = `${table}_legacy`
    const [kind] = yield* sql<{ readonly relkind: string; readonly comment: string | null }>`
      SELECT c.relkind::text AS relkind, obj_description(c.oid, 'pg_class') AS comment FROM pg_class c
      WHERE c.oid = to_regclass(${table})`
    if (kind === undefined) return yield* Effect.die(new Error(`${table}: no such table`))
    if (kind.relkind !== "r") return yield* Effect.die(new Error(`${table}: not a plain table (${kind.relkind})`))

    // What the parent must have: the primary key (with the partition column), every other index as
    // it is defined now (its definition names the table, which the parent will be), the foreign keys.
    const { columns: keyColumns, name: primaryName } = yield* monthlyKey(table, column)
    // Done beforehand by `prepareMonthlyPartitions`: the key built and the bound validated. Anything
    // less (a build that failed, a check not validated) is dropped and the conversion does it all.
    const index = preparedIndexName(table)
    const check = preparedBoundName(table)
    const [built] = yield* sql<{ readonly valid: boolean; readonly cols: ReadonlyArray<string> }>`
      SELECT i.indisvalid AS valid,
        ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY u(n, k)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.n ORDER BY u.k) AS cols
      FROM pg_index i WHERE i.indexrelid = to_regclass(${index}) AND i.indrelid = to_regclass(${table})`
    const [bounded] = yield* sql<{ readonly validated: boolean; readonly at: string | null }>`
      SELECT convalidated AS validated, obj_description(oid, 'pg_constraint') AS at FROM pg_constraint
      WHERE conrelid = to_regclass(${table}) AND conname = ${check}`
    const prepared = built !== undefined && built.valid && built.cols.join(",") === keyColumns.join(",") &&
      bounded !== undefined && bounded.validated && bounded.at !== null && !Number.isNaN(Date.parse(bounded.at))
    if (!prepared && built !== undefined) yield* sql.unsafe(`DROP INDEX ${quoted(index)}`)
    if (!prepared && bounded !== undefined) yield* sql.unsafe(`ALTER TABLE ${quoted(table)} DROP CONSTRAINT ${quoted(check)}`)

    const indexes = yield* sql<{ readonly name: string; readonly def: string; readonly is_unique: boolean; readonly monthly: boolean }>`
      SELECT x.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique AS is_unique,
        EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attname = ${column}
                AND a.attnum = ANY (i.indkey::int2[])) AS monthly
      FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
      WHERE i.indrelid = to_regclass(${table}) AND NOT i.indisprimary AND x.relname <> ${index}
      ORDER BY x.relname`
    // A unique index that carries the month column holds on the parent as it is (the caller has
    // made it so where the column follows from the key); any other would stop holding across months.
    const unique = indexes.find((index) => index.is_unique && !index.monthly)
    if (unique !== undefined) return yield* Effect.die(new Error(`${table}: unique index ${unique.name} cannot span months`))
    const foreign = yield* sql<{ readonly name: string; readonly def: string }>`
      SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = to_regclass(${table}) AND contype = 'f' ORDER BY conname`
    // Foreign keys that point at the table would follow it to its new name: the caller moves them.
    const [referenced] = yield* sql<{ readonly name: string }>`
      SELECT conname AS name FROM pg_constraint WHERE confrelid = to_regclass(${table}) AND contype = 'f' LIMIT 1`
    if (referenced !== undefined) return yield* Effect.die(new Error(`${table}: foreign key ${referenced.name} points at it`))
    // Triggers go to the parent (a statement trigger there sees the rows of every partition in its
    // transition tables; a row trigger is cloned onto each partition), read before the rename.
    const triggers = yield* sql<{ readonly name: string; readonly def: string }>`
      SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger
      WHERE tgrelid = to_regclass(${table}) AND NOT tgisinternal ORDER BY tgname`
    const identities = yield* sql<{ readonly name: string }>`
      SELECT attname::text AS name FROM pg_attribute
      WHERE attrelid = to_regclass(${table}) AND attidentity <> '' AND NOT attisdropped ORDER BY attnum`
    // Where the first partition ends: the prepared bound, or the start of the month after the
    // newest row (or after now). An empty table (a new install) starts its months with the current
    // one: only rows dated before it (an import of history) go to the first partition.
    const [bound] = prepared && bounded?.at != null
      ? [{ at: new Date(bounded.at).toISOString(), empty: false }]
      : yield* sql.unsafe<{ readonly at: string; readonly empty: boolean }>(
        `SELECT to_char(CASE WHEN max(${quoted(column)}) IS NULL THEN date_trunc('month', now() AT TIME ZONE 'UTC')
                             ELSE date_trunc('month', greatest(now(), max(${quoted(column)})) AT TIME ZONE 'UTC') + interval '1 month' END,
                        'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at,
                max(${quoted(column)}) IS NULL AS empty
         FROM ${quoted(table)}`
      )
    if (bound === undefined) return yield* Effect.die(new Error(`${table}: no bound`))

    // Identity columns: the values continue from a sequence (the identity and its own sequence go).
    const sequences: Array<{ readonly column: string; readonly sequence: string }> = []
    for (const identity of identities) {
      const sequence = `${table}_${identity.name}_seq`
      const [last] = yield* sql.unsafe<{ readonly n: string }>(
        `SELECT coalesce(max(${quoted(identity.name)}), 0)::text AS n FROM ${quoted(table)}`
      )
      yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ALTER COLUMN ${quoted(identity.name)} DROP IDENTITY`)
      yield* sql.unsafe(`CREATE SEQUENCE ${quoted(sequence)} AS bigint`)
      yield* sql.unsafe(`SELECT setval(${literal(sequence)}, ${Number(last?.n ?? "0") + 1}, false)`)
      sequences.push({ column: identity.name, sequence })
    }

    // The old table steps aside under another name; its indexes too (index names are schema-wide).
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} RENAME TO ${quoted(legacy)}`)
    yield* sql.unsafe(`ALTER TABLE ${quoted(legacy)} DROP CONSTRAINT ${quoted(primaryName)}`)
    // The prepared index becomes the old rows' key as it is: the attach adopts it, nothing is built.
    if (prepared) yield* sql.unsafe(`ALTER TABLE ${quoted(legacy)} ADD CONSTRAINT ${quoted(`${legacy}_pkey`)} PRIMARY KEY USING INDEX ${quoted(index)}`)
    for (const trigger of triggers) yield* sql.unsafe(`DROP TRIGGER ${quoted(trigger.name)} ON ${quoted(legacy)}`)
    for (const index of indexes) yield* sql.unsafe(`ALTER INDEX ${quoted(index.name)} RENAME TO ${quoted(`${index.name}_legacy`)}`)

    yield* sql.unsafe(
      `CREATE TABLE ${quoted(table)} (LIKE ${quoted(legacy)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS) ` +
        `PARTITION BY RANGE (${quoted(column)})`
    )
    // The bound is the old rows' alone (LIKE copied it): on the parent it would refuse every new month.
    if (prepared) yield* sql.unsafe(`ALTER TABLE ${quoted(table)} DROP CONSTRAINT ${quoted(check)}`)
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(primaryName)} PRIMARY KEY (${keyColumns.map(quoted).join(", ")})`
    )
    for (const index of indexes) yield* sql.unsafe(index.def)
    for (const key of foreign) yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(key.name)} ${key.def}`)
    for (const { column: name, sequence } of sequences) {
      yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ALTER COLUMN ${quoted(name)} SET DEFAULT nextval(${literal(sequence)})`)
      yield* sql.unsafe(`ALTER SEQUENCE ${quoted(sequence)} OWNED BY ${quoted(table)}.${quoted(name)}`)
    }
    if (kind.comment !== null) yield* sql.unsafe(`COMMENT ON TABLE ${quoted(table)} IS ${literal(kind.comment)}`)
    for (const trigger of triggers) yield* sql.unsafe(trigger.def)

    // The old rows become the first partition: its matching indexes and foreign keys are adopted.
    // Prepared, the validated bound implies the partition's range, so the attach reads no row.
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(table)} ATTACH PARTITION ${quoted(legacy)} FOR VALUES FROM (MINVALUE) TO (${literal(bound.at)})`
    )
    if (prepared) yield* sql.unsafe(`ALTER TABLE ${quoted(legacy)} DROP CONSTRAINT ${quoted(check)}`)
    const first = new Date(bound.at)
    // Through the same month as otherwise: the current one and MONTHS_AHEAD more exist.
    for (let offset = 0; offset < (bound.empty ? MONTHS_AHEAD + 1 : MONTHS_AHEAD); offset++) {
      const from = monthStart(first, offset)
      const to = monthStart(first, offset + 1)
      yield* sql.unsafe(
        `CREATE TABLE ${quoted(monthName(table, from))} PARTITION OF ${quoted(table)} ` +
          `FOR VALUES FROM (${literal(from.toISOString())}) TO (${literal(to.toISOString())})`
      )
    }
  })

