/**
 * `partitions split` (decision 0147): `<table>_legacy` becomes one partition per month while writes
 * go on. Each test runs in a transaction rolled back at the end, on the migrated tables of whichever
 * database the run uses; the writes another release would make during the split are made between
 * its steps (before the copy, after it), and the rows read through the parent just before the swap
 * (from the legacy partition) must be the rows read after it (from the months).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { toMonthlyPartitions } from "../../migrations/support/monthly-partitions.ts"
import { copySplit, finishSplit, SPLIT_MONTHS, splitLegacy, splitNames, startSplit, vacuumSplit } from "../../migrations/support/split-legacy.ts"
import { monthStart, PARTITIONED_TABLES, partitionName } from "../../src/ops/partitions/registry.ts"
import { PartitionsRepo } from "../../src/ops/partitions/repo.ts"
import { PartitionMaintenance } from "../../src/ops/partitions/service.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { testSettings } from "../support/app.ts"
import { rolledBack } from "../support/rolled-back.ts"
import { seedProfile } from "../support/tenancy.ts"

const database = DatabaseLayer.pipe(Layer.provide(AppConfig.layerWith(testSettings())))
const services = Layer.mergeAll(PartitionMaintenance.layer, PartitionsRepo.layer).pipe(Layer.provideMerge(database))

const entry = (table: string) => {
  const found = PARTITIONED_TABLES.find((candidate) => candidate.table === table)
  if (found === undefined) throw new Error(table)
  return found
}

/** The partitions of `table` with their bounds, as the repository lists them. */
const bounds = (table: string) => PartitionsRepo.use((repo) => repo.list(table))

/** Every row of `table` as JSON, in key order: the parent's view, whichever partitions hold it. */
const rowsOf = (table: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql.unsafe<{ readonly row: string }>(`SELECT to_jsonb(t)::text AS row FROM ${table} t ORDER BY id`),
      (rows) => rows.map((row) => row.row)
    ))

/** `months` months before the current one, plus `days` days and an hour (inside that month). */
const monthsAgo = (months: number, days = 3) => new Date(monthStart(new Date(), -months).getTime() + days * 86_400_000 + 3_600_000)

const insertTouch = (profileId: string, at: Date, name: string) =>
  Effect.flatMap(SqlClient, (sql) => {
    const id = crypto.randomUUID()
    return Effect.as(
      sql`INSERT INTO touches (id, profile_id, kind, occurred_at, channel, campaign_name)
          VALUES (${id}, ${profileId}, 'web_touch', ${at}, 'paid_search', ${name})`,
      id
    )
  })

const where = (table: string, id: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ readonly part: string }>`SELECT tableoid::regclass::text AS part FROM ${sql(table)} WHERE id = ${id}`,
      (rows) => rows[0]?.part
    ))

layer(services, { timeout: "120 seconds" })("partitions split", (it) => {
  it.effect("touches: writes before and during the copy reach the months; every row equal and in its month; keys, indexes and triggers in place", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const { profileId } = yield* seedProfile()
      const legacyBefore = (yield* bounds("touches")).find((row) => row.name === "touches_legacy")
      assert.isDefined(legacyBefore)
      // Rows in legacy: three months, one month far back (past SPLIT_MONTHS: stays in the new legacy).
      const old = yield* insertTouch(profileId, monthsAgo(SPLIT_MONTHS + 20), "ancient")
      const a = yield* insertTouch(profileId, monthsAgo(14), "a")
      const b = yield* insertTouch(profileId, monthsAgo(3), "b")
      const c = yield* insertTouch(profileId, monthsAgo(2), "c")
      const d = yield* insertTouch(profileId, monthsAgo(2, 10), "d")
      const customer = crypto.randomUUID()
      yield* sql`INSERT INTO customers (id, profile_id) VALUES (${customer}, ${profileId})`
      // A declared source names touch b: its foreign key points into the legacy partition.
      yield* sql`INSERT INTO declared_sources (id, profile_id, customer_id, answer_key, request_hash, answered_at, touch_id)
                 VALUES (${crypto.randomUUID()}, ${profileId}, ${customer}, 'friend', 'h', ${monthsAgo(3)}, ${b})`
      assert.strictEqual(yield* where("touches", a), "touches_legacy")

      const started = yield* startSplit(entry("touches"))
      assert.isTrue("plan" in started)
      // Writes of the running release before the copy: changed, deleted, inserted (the trigger's).
      yield* sql`UPDATE touches SET campaign_name = 'a changed', customer_id = ${customer} WHERE id = ${a}`
      yield* sql`DELETE FROM touches WHERE id = ${c}`
      const e = yield* insertTouch(profileId, monthsAgo(5), "e")
      yield* copySplit(entry("touches"))
      // Run again (a split that stopped): the split under way is kept and the copy harmlessly redone.
      const resumed = yield* startSplit(entry("touches"))
      assert.deepStrictEqual(resumed, started)
      yield* copySplit(entry("touches"))
      // And after it: the copy's rows are changed over, deleted, and a row moves months.
      yield* sql`UPDATE touches SET campaign_name = 'b changed' WHERE id = ${b}`
      yield* sql`DELETE FROM touches WHERE id = ${e}`
      yield* sql`UPDATE touches SET occurred_at = ${monthsAgo(4)} WHERE id = ${d}`
      const f = yield* insertTouch(profileId, monthsAgo(1), "f")
      yield* vacuumSplit(entry("touches"), { inTransaction: true })
      const before = yield* rowsOf("touches")

      const done = yield* finishSplit(entry("touches"))
      assert.deepStrictEqual(yield* rowsOf("touches"), before)
      assert.include(done.months, partitionName("touches", monthStart(new Date(), -14)))
      assert.strictEqual(done.months.length, SPLIT_MONTHS)
      // Each row in its own month; the far one in the new legacy, which ends where the months start.
      assert.strictEqual(yield* where("touches", a), partitionName("touches", monthStart(new Date(), -14)))
      assert.strictEqual(yield* where("touches", b), partitionName("touches", monthStart(new Date(), -3)))
      assert.strictEqual(yield* where("touches", d), partitionName("touches", monthStart(new Date(), -4)))
      assert.strictEqual(yield* where("touches", f), partitionName("touches", monthStart(new Date(), -1)))
      assert.strictEqual(yield* where("touches", old), "touches_legacy")
      const after = yield* bounds("touches")
      const legacy = after.find((row) => row.name === "touches_legacy")
      assert.strictEqual(legacy?.to_ms, monthStart(legacyBefore.to_ms === null ? new Date() : new Date(legacyBefore.to_ms), -SPLIT_MONTHS).getTime())
      assert.isNull(legacy?.from_ms)
      // The range is whole: a touch at any old time has a partition.
      const g = yield* insertTouch(profileId, monthsAgo(7), "g")
      assert.strictEqual(yield* where("touches", g), partitionName("touches", monthStart(new Date(), -7)))

      // Every month has each of the parent's indexes (adopted, not extra) and its row triggers.
      const month = partitionName("touches", monthStart(new Date(), -3))
      const [indexes] = yield* sql<{ readonly parent: number; readonly child: number; readonly own: number }>`
        SELECT (SELECT count(*)::int FROM pg_index WHERE indrelid = 'touches'::regclass) AS parent,
               (SELECT count(*)::int FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indexrelid
                WHERE i.indrelid = to_regclass(${month})) AS child,
               (SELECT count(*)::int FROM pg_index WHERE indrelid = to_regclass(${month})) AS own`
      assert.deepStrictEqual(indexes, { parent: indexes!.parent, child: indexes!.parent, own: indexes!.parent })
      const [triggers] = yield* sql<{ readonly parent: number; readonly child: number }>`
        SELECT (SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 'touches'::regclass AND NOT tgisinternal
                AND tgtype & 1 = 1) AS parent,
               (SELECT count(*)::int FROM pg_trigger WHERE tgrelid = to_regclass(${month}) AND NOT tgisinternal) AS child`
      assert.strictEqual(triggers?.child, triggers?.parent)
      // The foreign keys: the parent's adopted on each month (not added twice), the declared source's back and validated.
      const keys = yield* sql<{ readonly name: string; readonly validated: boolean; readonly inherited: boolean }>`
        SELECT conname AS name, convalidated AS validated, conparentid <> 0 AS inherited FROM pg_constraint
        WHERE conrelid = to_regclass(${month}) AND contype IN ('f', 'c') ORDER BY conname`
      assert.isTrue(keys.length > 0 && keys.every((key) => key.validated), JSON.stringify(keys))
      assert.deepStrictEqual(keys.filter((key) => !key.inherited && !key.name.endsWith("_check")), [])
      assert.isFalse(keys.some((key) => key.name.endsWith("_range")))
      const [declared] = yield* sql<{ readonly validated: boolean }>`
        SELECT convalidated AS validated FROM pg_constraint WHERE conname = 'declared_sources_touch_id_fkey'`
      assert.isTrue(declared?.validated)
      // Nothing of the split is left.
      const names = splitNames("touches")
      const left = yield* sql<{ readonly name: string }>`
        SELECT relname AS name FROM pg_class WHERE starts_with(relname, ${names.staging})
        UNION ALL SELECT proname FROM pg_proc WHERE proname = ${names.mirror}`
      assert.deepStrictEqual(left, [])
      // The declared source's cascade still reaches through the months.
      yield* sql`DELETE FROM touches WHERE id = ${b}`
      const [cascaded] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM declared_sources WHERE touch_id = ${b}`
      assert.strictEqual(cascaded?.n, 0)
    })))

  it.effect("outcome events (a default partition, a key table pointing in): split whole; a second run has nothing to split", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const { profileId } = yield* seedProfile()
      const ids: Array<string> = []
      for (const months of [9, 6, 6, 1]) {
        const id = crypto.randomUUID()
        ids.push(id)
        yield* sql`WITH e AS (
            INSERT INTO outcome_events (id, profile_id, event_name, occurred_at, idempotency_key, request_hash)
            VALUES (${id}, ${profileId}, 'lead', ${monthsAgo(months)}, ${`k-${id}`}, 'h')
            RETURNING profile_id, idempotency_key, id, occurred_at)
          INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
      }
      const before = yield* rowsOf("outcome_events")
      const done = yield* splitLegacy(entry("outcome_events"), { inTransaction: true })
      assert.isTrue(done.split)
      assert.deepStrictEqual(yield* rowsOf("outcome_events"), before)
      assert.strictEqual(yield* where("outcome_events", ids[0]!), partitionName("outcome_events", monthStart(new Date(), -9)))
      const [key] = yield* sql<{ readonly validated: boolean }>`
        SELECT convalidated AS validated FROM pg_constraint WHERE conname = 'outcome_keys_outcome_event_id_fkey'`
      assert.isTrue(key?.validated)
      assert.isTrue((yield* bounds("outcome_events")).some((row) => row.is_default))
      // The new legacy holds nothing (every row was within SPLIT_MONTHS): a second run says so.
      const again = yield* splitLegacy(entry("outcome_events"), { inTransaction: true })
      assert.deepStrictEqual(again, { table: "outcome_events", split: false, reason: "the legacy partition is empty" })
    })))

  it.effect("the outbox: after the split, the maintenance drops the months past the retention, rows younger stay", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const { profileId } = yield* seedProfile()
      const ids: Array<string> = []
      for (const months of [8, 5, 2]) {
        const id = crypto.randomUUID()
        ids.push(id)
        yield* sql`INSERT INTO outbox (id, profile_id, topic, payload, created_at, published_at)
                   VALUES (${id}, ${profileId}, 'outcome.recorded', '{}', ${monthsAgo(months)}, now())`
      }
      // Before: the maintenance (at the real time: a test's clock starts in 1970) keeps the whole legacy partition (its newest row is inside 90 days).
      yield* PartitionMaintenance.use((maintenance) => maintenance.run({ tables: [entry("outbox")], now: new Date() }))
      const [kept] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM outbox WHERE id IN ${sql.in(ids)}`
      assert.strictEqual(kept?.n, 3)
      yield* splitLegacy(entry("outbox"), { inTransaction: true })
      const [pass] = yield* PartitionMaintenance.use((maintenance) => maintenance.run({ tables: [entry("outbox")], now: new Date() }))
      assert.include(pass?.dropped ?? [], partitionName("outbox", monthStart(new Date(), -8)))
      assert.include(pass?.dropped ?? [], "outbox_legacy")
      assert.notInclude(pass?.dropped ?? [], partitionName("outbox", monthStart(new Date(), -2)))
      const left = yield* sql<{ readonly id: string }>`SELECT id FROM outbox WHERE id IN ${sql.in(ids)} ORDER BY created_at`
      assert.deepStrictEqual(left.map((row) => row.id), [ids[2]])
    })))

  it.effect("the whole split as the command runs it (each step committed, the months vacuumed), on a table of its own", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const probe = { table: "split_probe", column: "created_at" }
      const drop = sql.unsafe(`DROP TABLE IF EXISTS split_probe, split_probe_split, split_probe_split_old CASCADE`)
      yield* drop
      yield* Effect.ensuring(
        Effect.gen(function*() {
          yield* sql`CREATE TABLE split_probe (id uuid NOT NULL, profile_id uuid NOT NULL, created_at timestamptz NOT NULL, note text,
                     PRIMARY KEY (id, profile_id))`
          yield* sql`CREATE INDEX split_probe_note ON split_probe (profile_id, note)`
          for (const months of [5, 3, 3, 1]) {
            yield* sql`INSERT INTO split_probe VALUES (gen_random_uuid(), gen_random_uuid(), ${monthsAgo(months)}, ${`row ${months}`})`
          }
          yield* toMonthlyPartitions(probe)
          const before = yield* rowsOf("split_probe")
          const done = yield* splitLegacy(probe)
          assert.isTrue(done.split)
          assert.deepStrictEqual(yield* rowsOf("split_probe"), before)
          const month = partitionName("split_probe", monthStart(new Date(), -3))
          const [row] = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(month)}`
          assert.strictEqual(row?.n, 2)
          // Vacuumed: the visibility map covers the month's page.
          const [visible] = yield* sql<{ readonly pages: number }>`SELECT relallvisible AS pages FROM pg_class WHERE relname = ${month}`
          assert.isAbove(visible?.pages ?? 0, 0)
          const left = yield* sql<{ readonly name: string }>`SELECT relname AS name FROM pg_class WHERE starts_with(relname, 'split_probe_split')`
          assert.deepStrictEqual(left, [])
        }),
        Effect.orDie(drop)
      )
    }))
})
