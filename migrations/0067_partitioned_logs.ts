import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The append-only logs become monthly range partitions (issue 35 part 3, decision 0133): the
 * webhook delivery attempts, the export delivery ledger, the request log and the PII access log. Their rows then go by dropping a month whole (src/ops/partitions), not by DELETE.
 *
 * Each table is converted in place, without copying a row: the table is renamed `<name>_legacy`,
 * a partitioned table takes its name and shape (columns, defaults, checks, indexes, foreign keys,
 * comment), and the old table is attached as its first partition, from MINVALUE to the start of
 * the month after its newest row (or after now). Its indexes that the parent also has are adopted,
 * not rebuilt; only the primary key is built again, with the partition column appended, as
 * PostgreSQL requires of a partitioned table's keys. The attach reads the old table once to check
 * its rows fit the range; the whole conversion is a catalogue change, an index build and that
 * read, seconds at the sizes the tests and benches use. The next two months are created here; the
 * maintenance job keeps two ahead from then on and drops the legacy partition like any other once
 * its range is past the retention.
 *
 * Identity columns cannot be carried by a partitioned table before PostgreSQL 17: the attempts'
 * `id` becomes a plain column fed by a sequence that continues where the identity stopped.
 *
 * The outbox stays a plain table for now: its fan-out read takes the rest of each claimed producer
 * batch per batch, and over monthly partitions a planner without statistics expects a row per
 * partition per batch, past the bound test/api/webhooks-claim-plan.test.ts holds it to.
 *
 * `outcome_events` stays a plain table: it is not history alone (retractions update and delete
 * it), its idempotency key must be unique across all time, and conversions, exports, payments and
 * leads hold foreign keys to it; it is converted with `conversions`.
 */

interface Conversion {
  readonly table: string
  /** The timestamptz column the months are over. */
  readonly column: string
}

const TABLES: ReadonlyArray<Conversion> = [
  { table: "webhook_delivery_attempts", column: "attempted_at" },
  { table: "export_deliveries", column: "created_at" },
  { table: "request_logs", column: "created_at" },
  { table: "pii_access_log", column: "occurred_at" }
]

const MONTHS_AHEAD = 2

const quoted = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

const monthName = (table: string, from: Date) =>
  `${table}_p${from.getUTCFullYear()}${String(from.getUTCMonth() + 1).padStart(2, "0")}`

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
    const [primary] = yield* sql<{ readonly name: string; readonly cols: ReadonlyArray<string> }>`
      SELECT k.conname AS name,
        ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
              JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i) AS cols
      FROM pg_constraint k WHERE k.conrelid = to_regclass(${table}) AND k.contype = 'p'`
    if (primary === undefined) return yield* Effect.die(new Error(`${table}: no primary key`))
    const indexes = yield* sql<{ readonly name: string; readonly def: string; readonly is_unique: boolean }>`
      SELECT x.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique AS is_unique
      FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
      WHERE i.indrelid = to_regclass(${table}) AND NOT i.indisprimary
      ORDER BY x.relname`
    const unique = indexes.find((index) => index.is_unique)
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
    // Where the first partition ends: the start of the month after the newest row, or after now.
    const [bound] = yield* sql.unsafe<{ readonly at: string }>(
      `SELECT to_char(date_trunc('month', greatest(now(), max(${quoted(column)})) AT TIME ZONE 'UTC') + interval '1 month',
                      'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at
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
    yield* sql.unsafe(`ALTER TABLE ${quoted(legacy)} DROP CONSTRAINT ${quoted(primary.name)}`)
    for (const trigger of triggers) yield* sql.unsafe(`DROP TRIGGER ${quoted(trigger.name)} ON ${quoted(legacy)}`)
    for (const index of indexes) yield* sql.unsafe(`ALTER INDEX ${quoted(index.name)} RENAME TO ${quoted(`${index.name}_legacy`)}`)

    yield* sql.unsafe(
      `CREATE TABLE ${quoted(table)} (LIKE ${quoted(legacy)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS) ` +
        `PARTITION BY RANGE (${quoted(column)})`
    )
    const keyColumns = primary.cols.includes(column) ? primary.cols : [...primary.cols, column]
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(primary.name)} PRIMARY KEY (${keyColumns.map(quoted).join(", ")})`
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
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(table)} ATTACH PARTITION ${quoted(legacy)} FOR VALUES FROM (MINVALUE) TO (${literal(bound.at)})`
    )
    const first = new Date(bound.at)
    for (let offset = 0; offset < MONTHS_AHEAD; offset++) {
      const from = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + offset, 1))
      const to = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + offset + 1, 1))
      yield* sql.unsafe(
        `CREATE TABLE ${quoted(monthName(table, from))} PARTITION OF ${quoted(table)} ` +
          `FOR VALUES FROM (${literal(from.toISOString())}) TO (${literal(to.toISOString())})`
      )
    }
  })

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  // It served the request log's row-by-row retention, which dropping months replaces.
  yield* sql`DROP INDEX request_logs_created_at`
  for (const conversion of TABLES) yield* toMonthlyPartitions(conversion)
})
