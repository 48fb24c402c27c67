/**
 * Monthly partitions (issue 35 part 3, decision 0133), on the migrated catalogue of whichever
 * database the run uses (PostgreSQL or the embedded one):
 *
 * - migration 0067's conversion keeps a table's rows where they are (the old table becomes the
 *   first partition), its keys with the partition column, its identity's values continuing;
 * - the registered tables are partitioned, with the current month and two more in place;
 * - the maintenance creates months ahead, once, and drops a partition past the retention whole
 *   (its rows go with it; younger partitions keep every row), and skips a table another runner holds.
 *
 * - a conversion prepared beforehand (`partitions prepare`, PostgreSQL only: `CONCURRENTLY` needs
 *   no transaction) adopts the key built and the bound validated: the old table's key is the
 *   prepared index itself, and no bound is left on either table;
 * - touches (migration 0071): a touch's idempotency key holds across months (`touch_keys`), and
 *   the conversion carries a table's triggers to the parent;
 * - outcome events (migration 0074): their key holds across months (`outcome_keys`), their time is
 *   fixed, and what names an event without its time names its key row.
 *
 * The conversions and passes over probe tables run in a transaction rolled back at the end, so
 * nothing they make outlives the test.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { completeCopiedColumn, type CopiedColumn, prepareCopiedColumn } from "../../migrations/support/copied-column.ts"
import { completeOutcomeKeys, type KeyTable, prepareOutcomeKeys, referenceKeys } from "../../migrations/support/outcome-keys.ts"
import { preparedBoundName, preparedIndexName, prepareMonthlyPartitions, toMonthlyPartitions } from "../../migrations/support/monthly-partitions.ts"
import { EventsRepo, type NewEvent } from "../../src/attribution/conversions/repo.ts"
import { type NewWebTouch, TouchesRepo } from "../../src/attribution/touches/repo.ts"
import { MONTHS_AHEAD, monthStart, PARTITIONED_TABLES, type PartitionedTable, partitionName } from "../../src/ops/partitions/registry.ts"
import { creditedTouchesStatement, creditFactsStatement } from "../../src/analytics/rollups/repo.ts"
import { PartitionsRepo } from "../../src/ops/partitions/repo.ts"
import { PartitionMaintenance, plan } from "../../src/ops/partitions/service.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { testSettings } from "../support/app.ts"
import { rolledBack } from "../support/rolled-back.ts"
import { seedProfile } from "../support/tenancy.ts"

const database = DatabaseLayer.pipe(Layer.provide(AppConfig.layerWith(testSettings())))
const services = Layer.mergeAll(PartitionMaintenance.layer, PartitionsRepo.layer).pipe(Layer.provideMerge(database))

const partitionsOf = (table: string) =>
  Effect.map(PartitionsRepo.use((repo) => repo.list(table)), (rows) => rows.map((row) => row.name))

/** A plain table of the shape the logs have, with rows from `months` (offsets from now) and an identity key. */
const probe = (table: string, months: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql.unsafe(`CREATE TABLE ${table} (
      id bigint GENERATED ALWAYS AS IDENTITY,
      profile_id uuid NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      note text CHECK (char_length(note) <= 20),
      PRIMARY KEY (id, profile_id))`)
    yield* sql.unsafe(`CREATE INDEX ${table}_note ON ${table} (profile_id, note)`)
    yield* sql.unsafe(`COMMENT ON TABLE ${table} IS 'local: a probe'`)
    for (const [n, offset] of months.entries()) {
      yield* sql.unsafe(
        `INSERT INTO ${table} (profile_id, created_at, note) VALUES (gen_random_uuid(), now() + make_interval(months => ${offset}), 'row ${n}')`
      )
    }
  })

/**
 * One maintenance pass, as the hourly job makes (decision 0133): a database migrated before a month
 * began has this month and two more only once a pass has run since (a suite that started on the
 * last evening of a month failed here).
 */
const caughtUp = PartitionMaintenance.use((maintenance) => maintenance.run())

layer(services, { timeout: "120 seconds" })("monthly partitions", (it) => {
  it.effect("the conversion keeps the rows in place, the keys with the month column, the identity's values going on", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* probe("partition_probe", [-14, -3, -1, 0, 0])
      const before = yield* sql<{ id: string; note: string }>`SELECT id::text, note FROM partition_probe ORDER BY id`
      yield* toMonthlyPartitions({ table: "partition_probe", column: "created_at" })

      const [kind] = yield* sql<{ relkind: string; comment: string | null }>`
        SELECT relkind::text AS relkind, obj_description(oid, 'pg_class') AS comment FROM pg_class WHERE oid = 'partition_probe'::regclass`
      assert.deepStrictEqual(kind, { relkind: "p", comment: "local: a probe" })
      // Every row kept, in the old table, now the first partition.
      assert.deepStrictEqual(yield* sql<{ id: string; note: string }>`SELECT id::text, note FROM partition_probe ORDER BY id`, before)
      const [legacy] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM partition_probe_legacy`
      assert.strictEqual(legacy?.n, 5)
      const names = yield* partitionsOf("partition_probe")
      const next = monthStart(new Date(), 1)
      assert.deepStrictEqual(names.length, 1 + MONTHS_AHEAD)
      assert.include(names, "partition_probe_legacy")
      // The key carries the month column; the other index and the check are on the parent too.
      const [key] = yield* sql<{ def: string }>`
        SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'partition_probe'::regclass AND contype = 'p'`
      assert.strictEqual(key?.def, "PRIMARY KEY (id, profile_id, created_at)")
      const indexes = yield* sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'partition_probe'::regclass ORDER BY c.relname`
      assert.deepStrictEqual(indexes.map((row) => row.name), ["partition_probe_note", "partition_probe_pkey"])
      // The ids go on from the identity's last value; a row of next month lands in next month's partition.
      const [added] = yield* sql<{ id: string; part: string }>`
        INSERT INTO partition_probe (profile_id, created_at, note) VALUES (gen_random_uuid(), ${next.toISOString()}::timestamptz + interval '1 hour', 'next')
        RETURNING id::text, tableoid::regclass::text AS part`
      assert.strictEqual(Number(added?.id), Number(before.at(-1)?.id) + 1)
      assert.strictEqual(added?.part, partitionName("partition_probe", next))
      // The check came along (tried in a savepoint: the failed statement must not end the transaction).
      const refused = yield* sql.withTransaction(sql`INSERT INTO partition_probe (profile_id, note) VALUES (gen_random_uuid(), repeat('x', 21))`).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(refused))
    })))

  it.effect("the conversion of an empty table (a new install) starts its months with the current one", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* probe("partition_probe_empty", [])
      yield* toMonthlyPartitions({ table: "partition_probe_empty", column: "created_at" })
      const now = new Date()
      const months = Array.from({ length: MONTHS_AHEAD + 1 }, (_, offset) => partitionName("partition_probe_empty", monthStart(now, offset)))
      assert.deepStrictEqual(yield* partitionsOf("partition_probe_empty"), ["partition_probe_empty_legacy", ...months].sort())
      // A row of today is in this month's partition; one of last month (history) in the first one.
      const rows = yield* sql<{ part: string }>`
        INSERT INTO partition_probe_empty (profile_id, created_at) VALUES (gen_random_uuid(), now()), (gen_random_uuid(), now() - interval '1 month')
        RETURNING tableoid::regclass::text AS part`
      assert.deepStrictEqual(rows.map((row) => row.part), [months[0], "partition_probe_empty_legacy"])
    })))

  it.effect("every registered table is partitioned by its column, its key carries it, and this month and two more exist", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* caughtUp
      for (const entry of PARTITIONED_TABLES) {
        const [row] = yield* sql<{ key: string; pk: string }>`
          SELECT pg_get_partkeydef(c.oid) AS key,
                 (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p') AS pk
          FROM pg_class c WHERE c.oid = to_regclass(${entry.table}) AND c.relkind = 'p'`
        assert.strictEqual(row?.key, `RANGE (${entry.column})`, entry.table)
        assert.include(row?.pk ?? "", entry.column, entry.table)
        const parts = yield* PartitionsRepo.use((repo) => repo.list(entry.table))
        const now = new Date()
        for (let offset = 0; offset <= MONTHS_AHEAD; offset++) {
          const at = monthStart(now, offset).getTime()
          assert.isTrue(
            parts.some((part) => (part.from_ms === null || part.from_ms <= at) && (part.to_ms === null || part.to_ms > at)),
            `${entry.table}: month +${offset}`
          )
        }
      }
      // Another pass now has nothing to create and nothing to drop.
      const passes = yield* PartitionMaintenance.use((maintenance) => maintenance.run())
      for (const pass of passes) assert.deepStrictEqual(pass, { table: pass.table, created: [], dropped: [], skipped: false })
    }))

  it.effect("the retentions are the spec's where it gives one (the outbox's replay window, the PII log) and decision 0133's elsewhere", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(
        Object.fromEntries(PARTITIONED_TABLES.map((entry) => [entry.table, entry.retentionDays])),
        { webhook_delivery_attempts: 90, export_deliveries: 90, request_logs: 7, touches: null, conversions: null, attribution_credits: null, outcome_events: null, outbox: 90, pii_access_log: 365 }
      )
    }))

  it.effect("the maintenance creates the months ahead once, and drops a partition past the retention whole", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* probe("partition_probe_kept", [-1, 0])
      yield* toMonthlyPartitions({ table: "partition_probe_kept", column: "created_at" })
      const entry: PartitionedTable = { table: "partition_probe_kept", column: "created_at", retentionDays: 30, source: "test" }
      const maintenance = yield* PartitionMaintenance
      const base = new Date()
      const monthName = (offset: number) => {
        const from = monthStart(base, offset)
        return partitionName("partition_probe_kept", from)
      }

      // Now: the migration's months are there; nothing to do, twice.
      assert.deepStrictEqual(yield* maintenance.run({ tables: [entry], now: base }), [
        { table: entry.table, created: [], dropped: [], skipped: false }
      ])
      // Five days into month +3: months +3 to +5 come; the legacy partition (ended at the start of
      // month +1) and month +1 are more than 30 days past their end, month +2 is not.
      const later = new Date(monthStart(base, 3).getTime() + 5 * 86_400_000)
      const [pass] = yield* maintenance.run({ tables: [entry], now: later })
      assert.deepStrictEqual(pass?.created, [monthName(3), monthName(4), monthName(5)])
      assert.deepStrictEqual(pass?.dropped, ["partition_probe_kept_legacy", monthName(1)])
      // A second pass at that time changes nothing.
      assert.deepStrictEqual(yield* maintenance.run({ tables: [entry], now: later }), [
        { table: entry.table, created: [], dropped: [], skipped: false }
      ])
      assert.deepStrictEqual(yield* partitionsOf(entry.table), [monthName(2), monthName(3), monthName(4), monthName(5)].sort())
      // The old rows went with their partition; a row in a kept month is still there.
      yield* sql.unsafe(`INSERT INTO partition_probe_kept (profile_id, created_at, note) VALUES (gen_random_uuid(), '${monthStart(base, 2).toISOString()}', 'kept')`)
      const rows = yield* sql<{ note: string }>`SELECT note FROM partition_probe_kept ORDER BY note`
      assert.deepStrictEqual(rows.map((row) => row.note), ["kept"])
      const [gone] = yield* sql<{ present: boolean }>`SELECT to_regclass('partition_probe_kept_legacy') IS NOT NULL AS present`
      assert.isFalse(gone?.present)
    })))

  it.effect("the plan keeps a partition whose range ends inside the retention, and ignores a default partition", () =>
    Effect.sync(() => {
      const entry: PartitionedTable = { table: "t", column: "created_at", retentionDays: 7, source: "test" }
      const now = new Date("2027-03-05T00:00:00Z")
      const at = (iso: string) => new Date(iso).getTime()
      const result = plan(entry, [
        { name: "t_legacy", from_ms: null, to_ms: at("2027-02-01T00:00:00Z"), is_default: false },
        { name: "t_p202702", from_ms: at("2027-02-01T00:00:00Z"), to_ms: at("2027-03-01T00:00:00Z"), is_default: false },
        { name: "t_p202703", from_ms: at("2027-03-01T00:00:00Z"), to_ms: at("2027-04-01T00:00:00Z"), is_default: false },
        { name: "t_default", from_ms: null, to_ms: null, is_default: true }
      ], now)
      // February ended 4 days ago: inside 7 days, kept; the legacy range ended 32 days ago.
      assert.deepStrictEqual(result.drop, ["t_legacy"])
      assert.deepStrictEqual(result.create.map((month) => month.name), ["t_p202704", "t_p202705"])
    }))

  it.effect.skipIf(process.env["DATABASE_URL"] === undefined)("a table whose maintenance lock another runner holds is skipped", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const entry = PARTITIONED_TABLES[0]!
      const held = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // Another session holds the table's lock in an open transaction while this pass runs.
      const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`partition_maintenance:${entry.table}`}, 0))`
        yield* Deferred.succeed(held, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(held)
      const passes = yield* PartitionMaintenance.use((maintenance) => maintenance.run({ tables: [entry] }))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      assert.deepStrictEqual(passes, [{ table: entry.table, created: [], dropped: [], skipped: true }])
    }))
})

const withTouches = Layer.mergeAll(TouchesRepo.layer).pipe(Layer.provideMerge(database))

layer(withTouches, { timeout: "120 seconds" })("partitioned touches (migration 0071, decision 0142)", (it) => {
  const webTouch = (profileId: string, key: string, occurredAt: string | null): NewWebTouch => ({
    profileId, occurredAt, idempotencyKey: key, eventType: "page_view", anonymousId: "v-1", sessionId: null, channel: "direct",
    source: "(direct)", medium: "(none)", campaignExternalId: null, campaignName: null, clickIdKind: null, clickId: null,
    url: "https://shop.example.com/", path: "/", referrerDomain: null, device: null, browser: null, os: null, country: null,
    city: null, collectorOrigin: null, linkCustomerId: null, payload: {}
  })

  it.effect("a touch's key holds across months: the same key in another month, or stamped on arrival, inserts nothing", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const repo = yield* TouchesRepo
      const { profileId } = yield* seedProfile({ name: "touch keys" })
      const customerId = crypto.randomUUID()
      yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${customerId}, ${profileId}, 'c-1')`
      const now = Date.now()
      // Next month: a partition of its own whatever the database's age (this month may still be in the legacy one).
      const nextMonth = new Date(monthStart(new Date(now), 1).getTime() + 3_600_000).toISOString()

      // Partner touches: the key taken this month, then again next month (another partition), then twice in one batch.
      const partner = (key: string, occurredAt: string) => ({
        id: crypto.randomUUID(), profileId, kind: "synthetic" as const, occurredAt, sourceSystem: "partner_test", idempotencyKey: key,
        customerId, joinMethod: null, channel: "paid_social", source: "meta", medium: "cpc", campaignExternalId: null,
        campaignName: null, adSetExternalId: null, adSetName: null, adExternalId: null, adName: null, clickIdKind: null,
        clickId: null, payload: {}
      })
      assert.deepStrictEqual(yield* repo.insertPartnerTouches([partner("k-1", new Date(now).toISOString())]), ["k-1"])
      assert.deepStrictEqual(yield* repo.insertPartnerTouches([partner("k-1", nextMonth)]), [])
      assert.deepStrictEqual(yield* repo.insertPartnerTouches([partner("k-2", nextMonth), partner("k-2", new Date(now).toISOString())]), ["k-2"])

      // Tracker touches: an event stamped on arrival, its retry with a time of next month.
      const first = crypto.randomUUID()
      assert.deepStrictEqual([...yield* repo.insertWebTouches([{ id: first, touch: webTouch(profileId, "evt-1", null) }])], [first])
      assert.deepStrictEqual([...yield* repo.insertWebTouches([{ id: crypto.randomUUID(), touch: webTouch(profileId, "evt-1", nextMonth) }])], [])

      const rows = yield* sql<{ key: string; part: string }>`
        SELECT idempotency_key AS key, tableoid::regclass::text AS part FROM touches WHERE profile_id = ${profileId} ORDER BY idempotency_key`
      assert.deepStrictEqual(rows.map((row) => row.key), ["evt-1", "k-1", "k-2"])
      // k-2's first row (next month) won; the rows sit in their months' partitions.
      const next = monthStart(new Date(now), 1)
      assert.strictEqual(rows[2]!.part, partitionName("touches", next))
      assert.notStrictEqual(rows[1]!.part, rows[2]!.part)
      const [keys] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM touch_keys WHERE profile_id = ${profileId}`
      assert.strictEqual(keys?.n, 3)
    })))

  it.effect("the conversion moves the table's triggers to the parent and refuses a table another table's foreign key names", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* probe("partition_probe_triggers", [-2, 0])
      yield* sql.unsafe(`CREATE TABLE partition_probe_seen (n int)`)
      yield* sql.unsafe(`CREATE FUNCTION partition_probe_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO partition_probe_seen SELECT count(*)::int FROM new_rows; RETURN NULL; END $$`)
      yield* sql.unsafe(`CREATE TRIGGER partition_probe_count AFTER INSERT ON partition_probe_triggers
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION partition_probe_count()`)
      yield* toMonthlyPartitions({ table: "partition_probe_triggers", column: "created_at" })
      // One statement into two partitions (the legacy one and next month's): the parent's trigger sees both rows.
      yield* sql.unsafe(`INSERT INTO partition_probe_triggers (profile_id, created_at, note)
        VALUES (gen_random_uuid(), now() - interval '2 months', 'old'), (gen_random_uuid(), now() + interval '1 month', 'next')`)
      assert.deepStrictEqual(yield* sql<{ n: number }>`SELECT n FROM partition_probe_seen`, [{ n: 2 }])
      const [where] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_trigger WHERE tgname = 'partition_probe_count' AND tgrelid = 'partition_probe_triggers'::regclass`
      assert.strictEqual(where?.n, 1)

      yield* probe("partition_probe_target", [0])
      yield* sql.unsafe(`CREATE TABLE partition_probe_child (id bigint, profile_id uuid,
        FOREIGN KEY (id, profile_id) REFERENCES partition_probe_target (id, profile_id))`)
      const refused = yield* sql.withTransaction(toMonthlyPartitions({ table: "partition_probe_target", column: "created_at" })).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(refused))
    })))
})

layer(services, { timeout: "120 seconds" })("partitioned conversions (migration 0072, decision 0144)", (it) => {
  it.effect("a time past the months made ahead waits in the default partition and moves to its month when the month is made", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const { profileId } = yield* seedProfile({ name: "conversion months" })
      const eventId = crypto.randomUUID()
      const conversionId = crypto.randomUUID()
      const now = new Date()
      // Six months ahead: past the two made ahead, so no month holds it yet.
      const far = new Date(monthStart(now, 6).getTime() + 86_400_000).toISOString()
      yield* sql`WITH e AS (
                   INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
                   VALUES (${eventId}, ${profileId}, 'o-1', 'h', 'purchase', ${far})
                   RETURNING profile_id, idempotency_key, id, occurred_at)
                 INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
      const conversion = (id: string) =>
        sql`INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, counts_as_cash, attribution_eligible)
            VALUES (${id}, ${profileId}, ${eventId}, 'purchase', ${far}, true, true)`
      yield* conversion(conversionId)
      const where = () =>
        sql<{ part: string }>`SELECT tableoid::regclass::text AS part FROM conversions WHERE profile_id = ${profileId}`
      assert.deepStrictEqual(yield* where(), [{ part: "conversions_default" }])
      // One conversion per outcome event still (tried in a savepoint: the failure must not end the transaction).
      const second = yield* sql.withTransaction(conversion(crypto.randomUUID())).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(second))

      // The maintenance, five months on, makes months +5 to +7: the row moves to its month, the same row.
      const entry = PARTITIONED_TABLES.find((table) => table.table === "conversions")!
      const [pass] = yield* PartitionMaintenance.use((maintenance) => maintenance.run({ tables: [entry], now: monthStart(now, 5) }))
      assert.deepStrictEqual(pass?.created, [5, 6, 7].map((offset) => partitionName("conversions", monthStart(now, offset))))
      assert.deepStrictEqual(yield* where(), [{ part: partitionName("conversions", monthStart(now, 6)) }])
      const [moved] = yield* sql<{ id: string; event: string }>`
        SELECT id::text AS id, outcome_event_id::text AS event FROM conversions WHERE profile_id = ${profileId}`
      assert.deepStrictEqual(moved, { id: conversionId, event: eventId })
      // The new month has the parent's indexes (adopted at the attach): the key still holds there.
      const again = yield* sql.withTransaction(conversion(crypto.randomUUID())).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(again))
      const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM conversions_default`
      assert.strictEqual(left?.n, 0)
      // The key rests on the time being the outcome's: a change of it is refused.
      const moved2 = yield* sql.withTransaction(sql`UPDATE conversions SET occurred_at = now() WHERE id = ${conversionId}`).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(moved2))
    })))
})

const withOutcomes = Layer.mergeAll(EventsRepo.layer, PartitionMaintenance.layer).pipe(Layer.provideMerge(database))

layer(withOutcomes, { timeout: "120 seconds" })("partitioned outcome events (migration 0074, decision 0146)", (it) => {
  const outcome = (profileId: string, key: string, occurredAt: string): NewEvent => ({
    id: crypto.randomUUID(), profileId, source: "api", idempotencyKey: key, requestHash: `h-${key}`, eventName: "purchase",
    occurredAt, valueAmount: null, currency: null, subjectRef: null, orderGroup: null, actionSource: null, clickIds: {}
  })

  it.effect("an outcome's key holds across months: the same key at another month's time, or twice in a batch, claims nothing", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* caughtUp
      const repo = yield* EventsRepo
      const { profileId } = yield* seedProfile({ name: "outcome keys" })
      const now = new Date()
      // Next month and the one after: partitions of their own whatever the database's age.
      const next = new Date(monthStart(now, 1).getTime() + 3_600_000).toISOString()
      const later = new Date(monthStart(now, 2).getTime() + 3_600_000).toISOString()
      const first = outcome(profileId, "o-1", next)
      assert.deepStrictEqual([...(yield* repo.claimEvents([first])).keys()], [first.id])
      // A retry of the key with a corrected time (another month): nothing claimed, the first event found.
      const retry = outcome(profileId, "o-1", later)
      const both = [outcome(profileId, "o-2", later), outcome(profileId, "o-2", next)]
      assert.deepStrictEqual([...(yield* repo.claimEvents([retry, ...both])).keys()], [both[0]!.id])
      const found = yield* repo.findEvent(profileId, "o-1")
      assert.strictEqual(Option.getOrThrow(found).id, first.id)

      const rows = yield* sql<{ key: string; part: string }>`
        SELECT idempotency_key AS key, tableoid::regclass::text AS part FROM outcome_events WHERE profile_id = ${profileId}
        ORDER BY idempotency_key`
      assert.deepStrictEqual(rows, [
        { key: "o-1", part: partitionName("outcome_events", monthStart(now, 1)) },
        { key: "o-2", part: partitionName("outcome_events", monthStart(now, 2)) }
      ])
      const keys = yield* sql<{ key: string; event: string }>`
        SELECT idempotency_key AS key, outcome_event_id::text AS event FROM outcome_keys WHERE profile_id = ${profileId}
        ORDER BY idempotency_key`
      assert.deepStrictEqual(keys, [{ key: "o-1", event: first.id }, { key: "o-2", event: both[0]!.id }])

      // The retraction's lock finds the event by its key, with its month.
      const locked = Option.getOrThrow(yield* repo.lockEvent(profileId, "o-2"))
      assert.strictEqual(locked.id, both[0]!.id)
      assert.strictEqual(Date.parse(locked.occurred_at), Date.parse(later))
    })))

  it.effect("keys copied beforehand: the trigger copies events the old release writes, and the migration copies nothing again", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const { profileId } = yield* seedProfile({ name: "outcome keys prepared" })
      /** A plain table of the events' shape as the old release has it, with `n` events, and its key table. */
      const events = (name: string, n: number) =>
        Effect.gen(function*() {
          yield* sql.unsafe(`CREATE TABLE ${name} (id uuid, profile_id uuid, idempotency_key text, occurred_at timestamptz,
            PRIMARY KEY (id, profile_id), UNIQUE (profile_id, idempotency_key))`)
          yield* sql.unsafe(`INSERT INTO ${name} SELECT gen_random_uuid(), '${profileId}', 'k-' || g, now() - make_interval(days => g)
            FROM generate_series(1, ${n}) g`)
          return { events: name, keys: `${name}_keys`, referencing: [] as ReadonlyArray<string> }
        })
      const keysOf = (entry: KeyTable) =>
        Effect.map(sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM ${entry.keys} k
          JOIN ${entry.events} e ON e.id = k.outcome_event_id AND e.occurred_at = k.occurred_at AND e.idempotency_key = k.idempotency_key`),
          (rows) => rows[0]?.n)
      const triggers = (entry: KeyTable) =>
        Effect.map(sql<{ name: string }>`SELECT tgname AS name FROM pg_trigger WHERE tgrelid = to_regclass(${entry.events})`,
          (rows) => rows.map((row) => row.name))

      // A plain table and a partitioned one naming the events, as exports and conversions do.
      const base = yield* events("probe_outcomes", 3)
      yield* sql.unsafe(`CREATE TABLE probe_refs AS SELECT id AS outcome_event_id, profile_id FROM probe_outcomes`)
      yield* sql.unsafe(`CREATE TABLE probe_refs_parted (outcome_event_id uuid, profile_id uuid, n int) PARTITION BY RANGE (n)`)
      yield* sql.unsafe(`CREATE TABLE probe_refs_parted_a PARTITION OF probe_refs_parted FOR VALUES FROM (0) TO (10)`)
      yield* sql.unsafe(`INSERT INTO probe_refs_parted SELECT id, profile_id, 1 FROM probe_outcomes`)
      const prepared: KeyTable = { ...base, referencing: ["probe_refs", "probe_refs_parted"] }
      yield* prepareOutcomeKeys(prepared)
      assert.strictEqual(yield* keysOf(prepared), 3)
      const references = () =>
        sql<{ table: string; name: string; validated: boolean; parent: boolean }>`
          SELECT conrelid::regclass::text AS table, conname AS name, convalidated AS validated, conparentid <> 0 AS parent
          FROM pg_constraint WHERE contype = 'f' AND confrelid = 'probe_outcomes_keys'::regclass ORDER BY 1`
      // Built beforehand and validated: the plain table's, and the partition's (its parent cannot take one unvalidated).
      assert.deepStrictEqual(yield* references(), [
        { table: "probe_refs", name: "probe_refs_outcome_key_fkey", validated: true, parent: false },
        { table: "probe_refs_parted_a", name: "probe_refs_parted_a_outcome_key_fkey", validated: true, parent: false }
      ])
      // A run stopped after the copy but before a key: running it again builds the key, copying nothing again.
      yield* sql.unsafe(`ALTER TABLE probe_refs DROP CONSTRAINT probe_refs_outcome_key_fkey`)
      yield* prepareOutcomeKeys(prepared)
      assert.strictEqual((yield* references()).length, 2)
      assert.strictEqual(yield* keysOf(prepared), 3)
      assert.deepStrictEqual(yield* triggers(prepared), ["probe_outcomes_keys_filled"])
      // The old release goes on writing: each event's key is copied as it is inserted.
      yield* sql.unsafe(`INSERT INTO probe_outcomes VALUES (gen_random_uuid(), '${profileId}', 'k-new', now())`)
      assert.strictEqual(yield* keysOf(prepared), 4)
      // Prepared: the migration copies nothing (an event hidden from the trigger stays without a key
      // row), and drops the trigger.
      yield* sql.unsafe(`ALTER TABLE probe_outcomes DISABLE TRIGGER probe_outcomes_keys_filled`)
      yield* sql.unsafe(`INSERT INTO probe_outcomes VALUES (gen_random_uuid(), '${profileId}', 'k-hidden', now())`)
      yield* sql.unsafe(`ALTER TABLE probe_outcomes ENABLE TRIGGER probe_outcomes_keys_filled`)
      yield* completeOutcomeKeys(prepared)
      assert.strictEqual(yield* keysOf(prepared), 4)
      assert.deepStrictEqual(yield* triggers(prepared), [])
      // The migration's keys adopt them: the partitioned table's key takes the partition's over.
      yield* referenceKeys(prepared)
      assert.deepStrictEqual((yield* references()).map((key) => [key.table, key.validated, key.parent]), [
        ["probe_refs", true, false],
        ["probe_refs_parted", true, false],
        ["probe_refs_parted_a", true, true]
      ])
      // A row naming an event without a key row is refused from then on.
      const orphan = yield* sql.withTransaction(sql.unsafe(`INSERT INTO probe_refs_parted VALUES (gen_random_uuid(), '${profileId}', 2)`))
        .pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(orphan))

      // Not prepared: the migration copies every event's key itself.
      const plain = yield* events("probe_outcomes_plain", 5)
      yield* completeOutcomeKeys(plain)
      assert.strictEqual(yield* keysOf(plain), 5)
    })))

  it.effect("the maintenance validates a foreign key a migration added unvalidated, and reports one a stored row breaks", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const validated = (table: string) =>
        Effect.map(sql<{ ok: boolean }>`SELECT convalidated AS ok FROM pg_constraint
                                   WHERE conrelid = to_regclass(${table}) AND contype = 'f' AND conparentid = 0 ORDER BY conname`,
          (rows) => rows.map((row) => row.ok))
      yield* sql.unsafe(`CREATE TABLE probe_parent (id int PRIMARY KEY)`)
      yield* sql.unsafe(`INSERT INTO probe_parent VALUES (1)`)
      yield* sql.unsafe(`CREATE TABLE probe_kept (parent int)`)
      yield* sql.unsafe(`CREATE TABLE probe_broken (parent int)`)
      yield* sql.unsafe(`INSERT INTO probe_kept VALUES (1)`)
      yield* sql.unsafe(`INSERT INTO probe_broken VALUES (2)`)
      for (const table of ["probe_kept", "probe_broken"]) {
        yield* sql.unsafe(`ALTER TABLE ${table} ADD FOREIGN KEY (parent) REFERENCES probe_parent (id) NOT VALID`)
      }
      yield* PartitionMaintenance.use((maintenance) => maintenance.run({ tables: [] }))
      assert.deepStrictEqual(yield* validated("probe_kept"), [true])
      assert.deepStrictEqual(yield* validated("probe_broken"), [false])
      // The migration's own: the key rows' key to their events (a key to a partitioned table keeps a
      // row per partition beside it, which PostgreSQL 15 leaves marked as it was made).
      assert.deepStrictEqual(yield* validated("outcome_keys"), [true, true])
    })))

  it.effect("every partitioned table: a probe by its whole key, planned generic on an empty month, names every key column in its index condition", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      // A new month has no statistics: its indexes cost the same, and a cached generic plan keeps the
      // pick (the foreign keys' checks are such plans). An index condition without a key column reads
      // every row sharing the others per probe: a profile's month, or all its rows at one instant.
      yield* sql.unsafe(`SET LOCAL plan_cache_mode = force_generic_plan`)
      const failures: Array<string> = []
      for (const entry of PARTITIONED_TABLES) {
        const copy = `probe_month_${entry.table}`
        yield* sql.unsafe(`CREATE TABLE ${copy} (LIKE ${entry.table} INCLUDING ALL)`)
        const key = yield* sql<{ name: string; type: string }>`
          SELECT a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS type
          FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY u(n, k)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.n
          WHERE i.indrelid = to_regclass(${entry.table}) AND i.indisprimary ORDER BY u.k`
        const statement = `probe_key_${entry.table}`
        yield* sql.unsafe(`PREPARE ${statement}(${key.map((column) => column.type).join(", ")}) AS
          SELECT 1 FROM ${copy} WHERE ${key.map((column, index) => `${column.name} = $${index + 1}`).join(" AND ")}`)
        const plan = (yield* sql.unsafe<{ "QUERY PLAN": string }>(
          `EXPLAIN (COSTS OFF) EXECUTE ${statement}(${key.map((column) => `NULL::${column.type}`).join(", ")})`
        )).map((row) => row["QUERY PLAN"]).join("\n")
        yield* sql.unsafe(`DEALLOCATE ${statement}`)
        // Every key column in the condition: the probe finds its one row through whichever index it
        // picked, even where many rows share the month column's value (one instant, one profile).
        const condition = plan.match(/Index Cond: \((.*)\)/)?.[1] ?? ""
        if (!key.every((column) => condition.includes(column.name))) failures.push(`${entry.table}: ${plan}`)
      }
      assert.deepStrictEqual(failures, [])
    })))

  it.effect("an event's time cannot change; a key row names a stored event; an export names an event with a key row", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const repo = yield* EventsRepo
      const { profileId } = yield* seedProfile({ name: "outcome guards" })
      const event = outcome(profileId, "g-1", new Date().toISOString())
      yield* repo.claimEvents([event])
      // Each refusal tried in a savepoint: the failure must not end the transaction.
      const refused = (statement: Effect.Effect<unknown, unknown>) =>
        Effect.map(sql.withTransaction(statement).pipe(Effect.exit), Exit.isFailure)
      assert.isTrue(yield* refused(sql`UPDATE outcome_events SET occurred_at = occurred_at - interval '40 days' WHERE id = ${event.id}`))
      assert.isTrue(yield* refused(sql`
        INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
        VALUES (${profileId}, 'g-2', ${crypto.randomUUID()}, now())`))
      // An event written without its key row cannot be exported: the export's key names the key row.
      const unkeyed = crypto.randomUUID()
      yield* sql`INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
                 VALUES (${unkeyed}, ${profileId}, 'g-3', 'h', 'purchase', now())`
      const exportOf = (eventId: string) =>
        sql`INSERT INTO conversion_exports (id, profile_id, outcome_event_id, destination, status)
            VALUES (${crypto.randomUUID()}, ${profileId}, ${eventId}, 'adplatform', 'pending')`
      assert.isTrue(yield* refused(exportOf(unkeyed)))
      assert.isFalse(yield* refused(exportOf(event.id)))
    })))
})

/**
 * A profile with one conversion and its credit row in each of next month and the one after (each
 * its own partition), 12 hours into the month; each row's touch a day earlier, in the month before.
 */
const creditedMonths = (now: Date) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const { profileId } = yield* seedProfile({ name: "credit months" })
    const made: Array<{ id: string; at: string }> = []
    for (const offset of [1, 2]) {
      const at = new Date(monthStart(now, offset).getTime() + 12 * 3_600_000).toISOString()
      const eventId = crypto.randomUUID()
      const id = crypto.randomUUID()
      yield* sql`WITH e AS (
                   INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
                   VALUES (${eventId}, ${profileId}, ${`o-${offset}`}, 'h', 'purchase', ${at})
                   RETURNING profile_id, idempotency_key, id, occurred_at)
                 INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
      yield* sql`INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, counts_as_cash, attribution_eligible)
                 VALUES (${id}, ${profileId}, ${eventId}, 'purchase', ${at}, true, true)`
      const touchId = crypto.randomUUID()
      yield* sql`INSERT INTO touches (id, profile_id, kind, occurred_at, channel)
                 VALUES (${touchId}, ${profileId}, 'web_touch', ${at}::timestamptz - interval '1 day', 'paid_social')`
      yield* sql`INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited,
                                                  in_window)
                 VALUES (${profileId}, ${id}, ${at}, 'last_touch', ${touchId}, ${at}::timestamptz - interval '1 day', 0, 1, true, true)`
      made.push({ id, at })
    }
    return { profileId, made }
  })

/**
 * Runs `statement` under `EXPLAIN ANALYZE`: its plan's lines, and `ran(table)`, the partitions of
 * `table` whose scans executed (pruned ones show "never executed").
 */
const partitionsRun = (statement: Statement.Statement<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [text, params] = statement.compile()
    const plan = (yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${text}`, params))
      .map((line) => line["QUERY PLAN"])
    const ran = (table: string) =>
      plan.filter((line) => new RegExp(` on ${table}_\\w+`).test(line) && !line.includes("never executed"))
        .map((line) => new RegExp(` on (${table}_\\w+)`).exec(line)?.[1])
    return { plan, ran }
  })

/** A parent table with a time and a child without one: the shape of conversions and their credit rows. */
const monthProbe = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql.unsafe(`CREATE TABLE month_probe_parent (id uuid, profile_id uuid, occurred_at timestamptz NOT NULL, PRIMARY KEY (id, profile_id))`)
  yield* sql.unsafe(`CREATE TABLE month_probe_child (parent_id uuid NOT NULL, profile_id uuid NOT NULL, n int, PRIMARY KEY (parent_id, profile_id, n))`)
  const entry: CopiedColumn = {
    table: "month_probe_child",
    column: "parent_at",
    parent: "month_probe_parent",
    parentColumn: "occurred_at",
    on: [["parent_id", "id"], ["profile_id", "profile_id"]]
  }
  return entry
})

layer(services, { timeout: "120 seconds" })("partitioned credits (migration 0073, decision 0145)", (it) => {
  it.effect("credit rows sit in their conversion's month, and go with it when it is deleted", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* caughtUp
      const now = new Date()
      const { made, profileId } = yield* creditedMonths(now)
      const where = () =>
        sql<{ conversion: string; part: string }>`
          SELECT conversion_id::text AS conversion, tableoid::regclass::text AS part FROM attribution_credits
          WHERE profile_id = ${profileId} ORDER BY converted_at`
      assert.deepStrictEqual(yield* where(), made.map((row, i) => ({
        conversion: row.id,
        part: partitionName("attribution_credits", monthStart(now, i + 1))
      })))
      // The cascade (by the whole key) takes the deleted conversion's rows only.
      yield* sql`DELETE FROM conversions WHERE id = ${made[0]!.id}`
      assert.deepStrictEqual((yield* where()).map((row) => row.conversion), [made[1]!.id])
    })))

  it.effect("a rollup recompute of a day reads that day's months of conversions and credits only", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const now = new Date()
      const { profileId } = yield* creditedMonths(now)
      const day = monthStart(now, 1).toISOString().slice(0, 10)
      const { plan, ran } = yield* partitionsRun(creditFactsStatement(sql, [profileId], [day]))
      const month = monthStart(now, 1)
      assert.deepStrictEqual(ran("conversions"), [partitionName("conversions", month)], plan.join("\n"))
      assert.deepStrictEqual(ran("attribution_credits"), [partitionName("attribution_credits", month)], plan.join("\n"))
      const rows = yield* creditFactsStatement(sql, [profileId], [day]).values
      assert.strictEqual(rows.length, 1)
    })))

  it.effect("the recompute's credited touches are read by their whole key: only the month each touch lies in (migration 0075)", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const now = new Date()
      const { profileId } = yield* creditedMonths(now)
      const day = monthStart(now, 1).toISOString().slice(0, 10)
      const { plan, ran } = yield* partitionsRun(creditedTouchesStatement(sql, [profileId], [day]))
      // The conversion is in next month; its touch a day before, in this month: that month alone.
      assert.deepStrictEqual(ran("touches"), [partitionName("touches", monthStart(now, 0))], plan.join("\n"))
      const rows = yield* creditedTouchesStatement(sql, [profileId], [day]).values
      assert.strictEqual(rows.length, 1)
    })))

  it.effect("a month column filled beforehand: the trigger fills rows written without it, the migration then sets NOT NULL without filling", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const entry = yield* monthProbe
      const parents = [crypto.randomUUID(), crypto.randomUUID()]
      const profile = crypto.randomUUID()
      yield* sql`INSERT INTO month_probe_parent VALUES (${parents[0]!}, ${profile}, '2026-01-02T03:04:05.123456Z'), (${parents[1]!}, ${profile}, '2026-05-06T00:00:00Z')`
      yield* sql`INSERT INTO month_probe_child VALUES (${parents[0]!}, ${profile}, 1), (${parents[1]!}, ${profile}, 2)`
      yield* prepareCopiedColumn(entry)
      // The running release writes without the column: the trigger fills it, on insert and on update.
      yield* sql`INSERT INTO month_probe_child (parent_id, profile_id, n) VALUES (${parents[1]!}, ${profile}, 3)`
      yield* sql`UPDATE month_probe_child SET n = n + 10 WHERE n = 1`
      const rows = yield* sql<{ n: number; at: string }>`
        SELECT n, to_char(parent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at FROM month_probe_child ORDER BY n`
      assert.deepStrictEqual(rows, [{ n: 2, at: "2026-05-06T00:00:00.000000" }, { n: 3, at: "2026-05-06T00:00:00.000000" }, {
        n: 11,
        at: "2026-01-02T03:04:05.123456"
      }])
      const [check] = yield* sql<{ validated: boolean }>`
        SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = 'month_probe_child'::regclass AND conname = 'month_probe_child_parent_at_present'`
      assert.isTrue(check?.validated)

      yield* completeCopiedColumn(entry)
      const [column] = yield* sql<{ not_null: boolean }>`
        SELECT attnotnull AS not_null FROM pg_attribute WHERE attrelid = 'month_probe_child'::regclass AND attname = 'parent_at'`
      assert.isTrue(column?.not_null)
      const left = yield* sql<{ name: string }>`
        SELECT tgname AS name FROM pg_trigger WHERE tgrelid = 'month_probe_child'::regclass AND NOT tgisinternal
        UNION ALL SELECT conname FROM pg_constraint WHERE conrelid = 'month_probe_child'::regclass AND contype = 'c'`
      assert.deepStrictEqual(left, [])
      // From now on the release writes the column itself: a row without it is refused.
      const refused = yield* sql.withTransaction(sql`INSERT INTO month_probe_child (parent_id, profile_id, n) VALUES (${parents[0]!}, ${profile}, 4)`)
        .pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(refused))
    })))

  it.effect("not prepared, the migration fills every row itself, and refuses a row whose parent is gone", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const entry = yield* monthProbe
      const parent = crypto.randomUUID()
      const profile = crypto.randomUUID()
      yield* sql`INSERT INTO month_probe_parent VALUES (${parent}, ${profile}, '2026-03-04T00:00:00Z')`
      yield* sql`INSERT INTO month_probe_child VALUES (${parent}, ${profile}, 1)`
      yield* sql.withTransaction(completeCopiedColumn(entry))
      const [row] = yield* sql<{ ok: boolean }>`SELECT parent_at = '2026-03-04T00:00:00Z'::timestamptz AS ok FROM month_probe_child`
      assert.isTrue(row?.ok)

      yield* sql.unsafe(`CREATE TABLE month_probe_orphan (parent_id uuid NOT NULL, profile_id uuid NOT NULL, n int)`)
      yield* sql`INSERT INTO month_probe_orphan VALUES (${crypto.randomUUID()}, ${profile}, 1)`
      const orphan = yield* sql.withTransaction(completeCopiedColumn({ ...entry, table: "month_probe_orphan" })).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(orphan))
    })))

  it.effect("a column copied into a partitioned table (touch_at, decision 0148): filled in every partition, within the parent's span", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql.unsafe(`CREATE TABLE copy_probe_parent (id uuid, profile_id uuid, occurred_at timestamptz NOT NULL, PRIMARY KEY (id, profile_id))`)
      yield* sql.unsafe(`CREATE TABLE copy_probe_child (parent_id uuid NOT NULL, profile_id uuid NOT NULL, at timestamptz NOT NULL, n int,
                           PRIMARY KEY (parent_id, profile_id, at, n)) PARTITION BY RANGE (at)`)
      yield* sql.unsafe(`CREATE TABLE copy_probe_child_a PARTITION OF copy_probe_child FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')`)
      yield* sql.unsafe(`CREATE TABLE copy_probe_child_b PARTITION OF copy_probe_child FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')`)
      const entry: CopiedColumn = {
        table: "copy_probe_child",
        column: "parent_at",
        parent: "copy_probe_parent",
        parentColumn: "occurred_at",
        on: [["parent_id", "id"], ["profile_id", "profile_id"]],
        near: { column: "at", before: "40 days", after: "1 millisecond" }
      }
      const profile = crypto.randomUUID()
      const [early, late, far] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
      yield* sql`INSERT INTO copy_probe_parent VALUES (${early}, ${profile}, '2026-01-02T03:04:05.123456Z'), (${late}, ${profile}, '2026-02-03T00:00:00Z'),
                   (${far}, ${profile}, '2025-06-01T00:00:00Z')`
      yield* sql`INSERT INTO copy_probe_child VALUES (${early}, ${profile}, '2026-01-05T00:00:00Z', 1), (${early}, ${profile}, '2026-02-05T00:00:00Z', 2),
                   (${late}, ${profile}, '2026-02-06T00:00:00Z', 3)`
      assert.isTrue(yield* prepareCopiedColumn(entry))
      // Written without the column by the running release, into either partition: filled on insert.
      yield* sql`INSERT INTO copy_probe_child (parent_id, profile_id, at, n) VALUES (${late}, ${profile}, '2026-02-07T00:00:00Z', 4)`
      const rows = yield* sql<{ n: number; at: string; part: string }>`
        SELECT n, to_char(parent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at, tableoid::regclass::text AS part
        FROM copy_probe_child ORDER BY n`
      assert.deepStrictEqual(rows, [
        { n: 1, at: "2026-01-02T03:04:05.123456", part: "copy_probe_child_a" },
        { n: 2, at: "2026-01-02T03:04:05.123456", part: "copy_probe_child_b" },
        { n: 3, at: "2026-02-03T00:00:00.000000", part: "copy_probe_child_b" },
        { n: 4, at: "2026-02-03T00:00:00.000000", part: "copy_probe_child_b" }
      ])
      // A parent outside the stated span is not found: the row stays without a time, and the check refuses it.
      const outside = yield* sql.withTransaction(sql`INSERT INTO copy_probe_child (parent_id, profile_id, at, n) VALUES (${far}, ${profile}, '2026-01-20', 5)`)
        .pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(outside))

      yield* completeCopiedColumn(entry)
      const columns = yield* sql<{ part: string; not_null: boolean }>`
        SELECT attrelid::regclass::text AS part, attnotnull AS not_null FROM pg_attribute
        WHERE attrelid IN ('copy_probe_child'::regclass, 'copy_probe_child_a'::regclass, 'copy_probe_child_b'::regclass) AND attname = 'parent_at'
        ORDER BY 1`
      assert.deepStrictEqual(columns.map((row) => row.not_null), [true, true, true])
      const left = yield* sql<{ name: string }>`
        SELECT tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname LIKE 'copy_probe_child%' AND NOT tgisinternal
        UNION ALL SELECT conname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid WHERE c.relname LIKE 'copy_probe_child%' AND contype = 'c'`
      assert.deepStrictEqual(left, [])
      // Completed: preparing again has nothing to do.
      assert.isFalse(yield* prepareCopiedColumn(entry))
    })))

  it.effect("prepared on the plain table, then converted to months, then completed: nothing of the preparation is left", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      const entry = yield* monthProbe
      const parent = crypto.randomUUID()
      const profile = crypto.randomUUID()
      yield* sql`INSERT INTO month_probe_parent VALUES (${parent}, ${profile}, '2026-01-02T03:04:05Z')`
      yield* sql.unsafe(`ALTER TABLE month_probe_child ADD COLUMN at timestamptz NOT NULL DEFAULT '2026-01-03T00:00:00Z'`)
      yield* sql`INSERT INTO month_probe_child (parent_id, profile_id, n) VALUES (${parent}, ${profile}, 1)`
      assert.isTrue(yield* prepareCopiedColumn(entry))
      // The conversion moves the preparation's trigger and check to the parent with the rest.
      yield* toMonthlyPartitions({ table: "month_probe_child", column: "at" })
      yield* sql`INSERT INTO month_probe_child (parent_id, profile_id, n) VALUES (${parent}, ${profile}, 2)`
      yield* completeCopiedColumn(entry)
      const rows = yield* sql<{ n: number; ok: boolean }>`
        SELECT n, parent_at = '2026-01-02T03:04:05Z'::timestamptz AS ok FROM month_probe_child ORDER BY n`
      assert.deepStrictEqual(rows, [{ n: 1, ok: true }, { n: 2, ok: true }])
      const left = yield* sql<{ name: string; rel: string }>`
        SELECT tgname AS name, c.relname AS rel FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE c.relname LIKE 'month_probe_child%' AND NOT tgisinternal
        UNION ALL SELECT conname, c.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relname LIKE 'month_probe_child%' AND contype = 'c'`
      assert.deepStrictEqual(left, [])
    })))
})

layer(services, { timeout: "120 seconds" })("a conversion prepared beforehand (decision 0143)", (it) => {
  it.effect.skipIf(process.env["DATABASE_URL"] === undefined)(
    "prepare builds the key and validates the bound while writes go on; the conversion adopts both and reads nothing",
    () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const table = `partition_prepared_${crypto.randomUUID().slice(0, 8)}`
        // Outside a transaction: CREATE INDEX CONCURRENTLY refuses one. Dropped at the end whatever happens.
        yield* Effect.addFinalizer(() => Effect.ignore(sql.unsafe(`DROP TABLE IF EXISTS ${table} CASCADE`)))
        yield* probe(table, [-3, -1, 0])
        const bound = yield* prepareMonthlyPartitions({ table, column: "created_at" })
        assert.isTrue(Option.isSome(bound))
        // At least two months ahead: writes of this month and the next go on.
        assert.isAtLeast(Date.parse(Option.getOrThrow(bound)), monthStart(new Date(), 3).getTime())
        yield* sql.unsafe(`INSERT INTO ${table} (profile_id, created_at, note) VALUES (gen_random_uuid(), now() + interval '20 days', 'during')`)
        // Run again: the same index is kept, the bound checked anew.
        const [before] = yield* sql<{ oid: number }>`SELECT to_regclass(${preparedIndexName(table)})::oid::int AS oid`
        yield* prepareMonthlyPartitions({ table, column: "created_at" })
        const [again] = yield* sql<{ oid: number }>`SELECT to_regclass(${preparedIndexName(table)})::oid::int AS oid`
        assert.strictEqual(again?.oid, before?.oid)

        yield* sql.withTransaction(toMonthlyPartitions({ table, column: "created_at" }))
        // The old rows' key is the prepared index itself (renamed), not one built at the attach.
        const [key] = yield* sql<{ oid: number; def: string }>`
          SELECT k.conindid::int AS oid, pg_get_constraintdef(k.oid) AS def FROM pg_constraint k
          WHERE k.conrelid = ${`${table}_legacy`}::regclass AND k.contype = 'p'`
        assert.strictEqual(key?.oid, before?.oid)
        assert.strictEqual(key?.def, "PRIMARY KEY (id, profile_id, created_at)")
        // The legacy partition ends at the prepared bound, and no table keeps the bound as a check.
        const [range] = yield* sql<{ bound: string }>`
          SELECT pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_class c WHERE c.oid = ${`${table}_legacy`}::regclass`
        assert.include(range?.bound ?? "", "MINVALUE")
        const checks = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_constraint WHERE conname = ${preparedBoundName(table)}`
        assert.strictEqual(checks[0]?.n, 0)
        const [rows] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)}`
        assert.strictEqual(rows?.n, 4)
        // A row past the old bound lands in the month the conversion made there.
        const first = new Date(Option.getOrThrow(bound))
        const [later] = yield* sql.unsafe<{ part: string }>(
          `INSERT INTO ${table} (profile_id, created_at, note) VALUES (gen_random_uuid(), '${first.toISOString()}'::timestamptz + interval '1 day', 'later')
           RETURNING tableoid::regclass::text AS part`
        )
        assert.strictEqual(later?.part, partitionName(table, first))
      }).pipe(Effect.scoped)
  )

  it.effect("a bound never validated is not trusted: the conversion drops it and reads the rows itself", () =>
    rolledBack(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* probe("partition_probe_half", [-1, 0])
      yield* sql.unsafe(`CREATE UNIQUE INDEX ${preparedIndexName("partition_probe_half")} ON partition_probe_half (id, profile_id, created_at)`)
      yield* sql.unsafe(`ALTER TABLE partition_probe_half ADD CONSTRAINT ${preparedBoundName("partition_probe_half")} CHECK (created_at < '2999-01-01') NOT VALID`)
      yield* toMonthlyPartitions({ table: "partition_probe_half", column: "created_at" })
      const names = yield* sql<{ name: string }>`
        SELECT conname AS name FROM pg_constraint WHERE conrelid IN ('partition_probe_half'::regclass, 'partition_probe_half_legacy'::regclass)
        ORDER BY conname`
      assert.notInclude(names.map((row) => row.name), preparedBoundName("partition_probe_half"))
      const [gone] = yield* sql<{ gone: boolean }>`SELECT to_regclass(${preparedIndexName("partition_probe_half")}) IS NULL AS gone`
      assert.isTrue(gone?.gone)
      // The legacy partition ends where the rows do (the month after now), not at the untrusted bound.
      assert.strictEqual((yield* partitionsOf("partition_probe_half")).length, 1 + MONTHS_AHEAD)
    })))
})
