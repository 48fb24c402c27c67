import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { forEachBlockRange, quoted } from "./monthly-partitions.ts"

/**
 * `outcome_keys`, one row per outcome event (its idempotency key, id and month), which the key
 * moves to before outcome events are kept in monthly partitions (decision 0146).
 *
 * Filling it reads every event, so it can be done beforehand while writes go on (`partitions
 * prepare outcome_events`), like a month column (decision 0145): the table is made, a trigger copies
 * the key of every event the running release inserts, the stored events are copied a block range
 * at a time, and the trigger is then renamed to say the copy is whole. The migration finds it so
 * and copies nothing; otherwise it copies every event under its lock.
 */

export interface KeyTable {
  /** The events (id, profile_id, idempotency_key, occurred_at). */
  readonly events: string
  /** The table of their keys. */
  readonly keys: string
  /** Tables naming an event by `(outcome_event_id, profile_id)`: their foreign keys move to the key table. */
  readonly referencing: ReadonlyArray<string>
}

export const OUTCOME_KEYS: KeyTable = {
  events: "outcome_events",
  keys: "outcome_keys",
  referencing: ["conversions", "conversion_exports", "payment_actions", "conversation_leads"]
}

/** A referencing table's foreign key to the key table. */
export const keyForeignKey = (table: string) => `${table}_outcome_key_fkey`

const keyReference = (entry: KeyTable) => `FOREIGN KEY (outcome_event_id, profile_id) REFERENCES ${quoted(entry.keys)} (outcome_event_id, profile_id)`

/** Whether `table` has the foreign key `name`, and whether it is validated. */
const foreignKey = (table: string, name: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly validated: boolean }>`
        SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = to_regclass(${table}) AND conname = ${name}`,
      (rows) => rows[0] === undefined ? "absent" as const : rows[0].validated ? "valid" as const : "not valid" as const
    ))

/**
 * The foreign key `name` of `table` to the key table, added `NOT VALID` (a moment's lock, no scan)
 * and then validated (reads the rows, blocking no write): beforehand, while writes go on.
 */
const referenceOnline = (entry: KeyTable, table: string, name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const state = yield* foreignKey(table, name)
    if (state === "absent") yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(name)} ${keyReference(entry)} NOT VALID`)
    if (state !== "valid") yield* sql.unsafe(`ALTER TABLE ${quoted(table)} VALIDATE CONSTRAINT ${quoted(name)}`)
  })

/** Refuses to go on while a conversion's time differs from its event's: the readers join on it. */
const timesAgree = (entry: KeyTable) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    if (!entry.referencing.includes("conversions")) return
    const [mismatched] = yield* sql.unsafe<{ readonly n: number }>(`
      SELECT count(*)::int AS n FROM conversions c
      WHERE NOT EXISTS (SELECT 1 FROM ${quoted(entry.events)} e
                        WHERE e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at)`)
    if ((mismatched?.n ?? 0) > 0) {
      return yield* Effect.die(new Error(`conversions: ${mismatched?.n} conversions not at their outcome event's time`))
    }
  })

/** The trigger while stored events are still being copied, and once they all are. */
const filling = ({ keys }: KeyTable) => `${keys}_filling`
const filled = ({ keys }: KeyTable) => `${keys}_filled`
const fillFunction = ({ keys }: KeyTable) => `${keys}_fill`

const createKeys = (entry: KeyTable) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql.unsafe(`
      CREATE TABLE IF NOT EXISTS ${quoted(entry.keys)} (
        profile_id uuid NOT NULL REFERENCES profiles(id),
        idempotency_key text NOT NULL,
        outcome_event_id uuid NOT NULL,
        occurred_at timestamptz NOT NULL,
        PRIMARY KEY (profile_id, idempotency_key),
        CONSTRAINT ${quoted(`${entry.keys}_event`)} UNIQUE (outcome_event_id, profile_id)
      )`))

const copyKeys = (entry: KeyTable, where: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql.unsafe(`
      INSERT INTO ${quoted(entry.keys)} (profile_id, idempotency_key, outcome_event_id, occurred_at)
      SELECT e.profile_id, e.idempotency_key, e.id, e.occurred_at FROM ${quoted(entry.events)} e ${where}
      ON CONFLICT DO NOTHING`))

const trigger = (entry: KeyTable) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly name: string }>`
        SELECT tgname AS name FROM pg_trigger
        WHERE tgrelid = to_regclass(${entry.events}) AND tgname IN (${filling(entry)}, ${filled(entry)})`,
      (rows) => rows[0]?.name
    ))

/**
 * The table, the trigger copying what the running release inserts, and the stored events copied
 * block range by block range; then the trigger renamed to say the copy is whole.
 */
const copyOnline = (entry: KeyTable) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* createKeys(entry)
    // The running release claims a key with the events' own unique index, so an inserted event's
    // key is new: the copy conflicts only with the block copy below, which it may race.
    yield* sql.unsafe(`
      CREATE OR REPLACE FUNCTION ${quoted(fillFunction(entry))}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ${quoted(entry.keys)} (profile_id, idempotency_key, outcome_event_id, occurred_at)
        VALUES (NEW.profile_id, NEW.idempotency_key, NEW.id, NEW.occurred_at)
        ON CONFLICT DO NOTHING;
        RETURN NULL;
      END $$`)
    yield* sql.unsafe(`
      CREATE OR REPLACE TRIGGER ${quoted(filling(entry))} AFTER INSERT ON ${quoted(entry.events)}
      FOR EACH ROW EXECUTE FUNCTION ${quoted(fillFunction(entry))}()`)
    yield* forEachBlockRange(entry.events, "e", (range) => copyKeys(entry, `WHERE ${range}`))
    // Every event stored before the trigger was copied above; every one since, by the trigger.
    yield* sql.unsafe(`ALTER TRIGGER ${quoted(filling(entry))} ON ${quoted(entry.events)} RENAME TO ${quoted(filled(entry))}`)
  })

/**
 * Beforehand, outside a transaction (each statement commits on its own): the table, the trigger,
 * the stored events copied block range by block range. Running it again does only what is left.
 */
export const prepareOutcomeKeys = (entry: KeyTable) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    // Converted already: nothing to prepare.
    const [kind] = yield* sql<{ readonly relkind: string }>`SELECT relkind::text AS relkind FROM pg_class WHERE oid = to_regclass(${entry.events})`
    if (kind?.relkind !== "r") return
    // A copy finished by an earlier run is not made again; the check and keys below are.
    if ((yield* trigger(entry)) !== filled(entry)) yield* copyOnline(entry)
    yield* timesAgree(entry)
    // The foreign keys the migration moves to the key table, built now so that it adopts them. A
    // partitioned table's key cannot be added unvalidated, but its partitions' can, and the
    // parent's key then takes them over without reading a row (a month made later is read then).
    for (const table of entry.referencing) {
      const partitions = yield* sql<{ readonly name: string }>`
        SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = to_regclass(${table}) ORDER BY 1`
      if (partitions.length === 0) yield* referenceOnline(entry, table, keyForeignKey(table))
      for (const partition of partitions) yield* referenceOnline(entry, partition.name, keyForeignKey(partition.name))
    }
  })

/**
 * In the migration, after the events' conversion: each referencing table's foreign key to the key
 * table, adopted where prepared (a prepared partition's key is taken over without a scan), built
 * and validated under the lock where not.
 */
export const referenceKeys = (entry: KeyTable) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    for (const table of entry.referencing) {
      if ((yield* foreignKey(table, keyForeignKey(table))) === "absent") {
        yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ADD CONSTRAINT ${quoted(keyForeignKey(table))} ${keyReference(entry)}`)
      }
    }
  })

/**
 * In the migration, under its lock: the table made unless prepared, every event's key copied
 * unless the preparation finished, and the preparation's trigger dropped (the release claims keys itself).
 */
export const completeOutcomeKeys = (entry: KeyTable) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const state = yield* trigger(entry)
    yield* createKeys(entry)
    if (state !== filled(entry)) {
      yield* copyKeys(entry, "")
      yield* timesAgree(entry)
    }
    if (state !== undefined) yield* sql.unsafe(`DROP TRIGGER ${quoted(state)} ON ${quoted(entry.events)}`)
    yield* sql.unsafe(`DROP FUNCTION IF EXISTS ${quoted(fillFunction(entry))}()`)
  })
