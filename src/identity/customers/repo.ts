/**
 * SQL of journeys, the customer and visitor lists, and erasure (decision 0038); the owner of
 * `customers`, `customer_identifiers` and `customer_erasures` (DESIGN.md, "Table ownership"),
 * with identity resolution's customer statements (decision 0029) and the identity repair
 * scan and primary-flag backfill (decision 0039).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { CreditModel } from "../../../schema/events.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { REPAIR_SAMPLE_SIZE, RepairIdentifierType, RepairScanSummary } from "../../../schema/identity-repair.ts"
import { conversionOfEvent } from "../../attribution/conversions/probe.ts"
import { TouchColumns } from "../../attribution/touches/columns.ts"
import { compareText, type ProfileScoped, profileScoped } from "../../kernel/profile-scoped.ts"
import type { IdentifierKind } from "./identifiers.ts"
import { byKey } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const ConversionRef = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  customer_id: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String)
})
export type ConversionRef = typeof ConversionRef.Type

export const StoredRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  at: Schema.String,
  ...TouchColumns.fields,
  creative_thumbnail_url: Schema.NullOr(Schema.String),
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.String),
  customer_id: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  path: Schema.NullOr(Schema.String),
  referrer_domain: Schema.NullOr(Schema.String),
  payload: Schema.NullOr(Schema.Unknown),
  device: Schema.NullOr(Schema.String),
  browser: Schema.NullOr(Schema.String),
  os: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  city: Schema.NullOr(Schema.String),
  session_id: Schema.NullOr(Schema.String),
  anonymous_id: Schema.NullOr(Schema.String),
  credit_share: Schema.NullOr(Schema.String),
  is_credited: Schema.Boolean,
  in_window: Schema.Boolean
})
export type StoredRow = typeof StoredRow.Type

export const PersonFacts = Schema.Struct({
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  conversion_count: Schema.Number,
  touch_count: Schema.Number,
  first_touch_at: Schema.NullOr(Schema.String),
  last_touch_at: Schema.NullOr(Schema.String)
})
export type PersonFacts = typeof PersonFacts.Type

export const PersonConversionRow = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  is_first_payment: Schema.NullOr(Schema.Boolean)
})

const Identifier = Schema.Struct({ type: Schema.String, value: Schema.String })

export const CustomerRow = Schema.Struct({
  id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  identifiers: Schema.Array(Identifier),
  conversion_count: Schema.Number,
  touch_count: Schema.Number,
  first_touch_at: Schema.NullOr(Schema.String),
  last_touch_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type CustomerRow = typeof CustomerRow.Type

export const VisitorRow = Schema.Struct({
  anonymous_id: Schema.String,
  first_seen_at: Schema.String,
  last_seen_at: Schema.String,
  touch_count: Schema.Number,
  customer_id: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  channel: Schema.String,
  device: Schema.NullOr(Schema.String),
  browser: Schema.NullOr(Schema.String),
  os: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  last_url: Schema.NullOr(Schema.String)
})
export type VisitorRow = typeof VisitorRow.Type

export const ErasureRow = Schema.Struct({
  id: Schema.String,
  request_ref: Schema.String,
  status: Schema.Literal("completed"),
  customer_key: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  requested_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String),
  selector_digest: Schema.String
})
export type ErasureRow = typeof ErasureRow.Type

export interface Keyset {
  readonly at: string
  readonly id: string
}

export interface JourneyQuery {
  readonly profileId: string
  /** The person's customer and every customer merged into it; rows of the others are `inherited`. */
  readonly person: string
  readonly customerIds: ReadonlyArray<string>
  readonly model: CreditModel
  /** A conversion's journey: its touches up to it, credited by it, and its own outcome row. */
  readonly conversion: Option.Option<{ readonly id: string; readonly outcomeEventId: string; readonly at: string }>
  readonly after: Option.Option<Keyset>
  readonly limit: number
}

export interface ErasureCounts {
  readonly conversions: number
  readonly events: number
  readonly touches: number
  readonly identifiers: number
  readonly declared_sources: number
}

/** A customer as identity resolution compares them: oldest first, then by id. */
export const KnownCustomer = Schema.Struct({
  id: Schema.String,
  /** ISO 8601 UTC with microseconds (fixed width, sorts as text). */
  created_at: Schema.String
})
export type KnownCustomer = typeof KnownCustomer.Type

/**
 * The customer of a visitor's latest bound touch (`customerByAnonymousId`), under `byKeySettings`:
 * the touches read by the anonymous id through `touches_visitor`, the profile a filter, and each
 * customer probed by its whole key (decision 0155, test/api/visitor-reads-plan.test.ts; kept from
 * small tables, the join read every customer). By the id alone, a plan kept on a database holding
 * many customers counted hundreds of rows per probe and went parallel: 100-107 ms of worker start-up
 * in a CI run, for one row.
 */
export const customerByAnonymousIdStatement = (sql: SqlClient, profileId: string, anonymousId: string) =>
  sql<{ id: string }>`
    SELECT c.id FROM touches t JOIN customers c ON c.id = t.customer_id AND c.profile_id = t.profile_id AND c.erased_at IS NULL
    WHERE t.anonymous_id = ${anonymousId} AND t.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
    ORDER BY t.occurred_at DESC, t.id DESC LIMIT 1`

/**
 * The conversion a person's reference names (see `findConversion`), as a statement:
 * test/api/conversion-probe-plans.test.ts checks its kept plan. The reference is tried as the
 * outcome event's id, then the conversion's, then the event's idempotency key; each is one probe of
 * a near-unique key with the profile as a filter (decision 0154). As one join filtered by
 * `e.id = $ OR c.id = $ OR e.id = (key)`, no index could answer the OR, and every outcome event of
 * the profile was read and joined to its conversion for each lookup.
 */
export const findConversionStatement = (sql: SqlClient, profileId: string, ref: string, asUuid: string | null) =>
  sql`
    SELECT e.id AS outcome_event_id, c.id AS conversion_id, c.conversion_key, ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at,
           trim_scale(c.value_amount)::text AS value_amount, c.currency, c.customer_id, cu.customer_key
    FROM (
      SELECT 0 AS rank, c.* FROM conversions c
      WHERE c.outcome_event_id = ${asUuid}::uuid AND c.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
      UNION ALL
      SELECT 1, c.* FROM conversions c WHERE c.id = ${asUuid}::uuid AND c.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
      UNION ALL
      SELECT 2, c.* FROM outcome_keys k
      CROSS JOIN LATERAL (
        SELECT * FROM conversions c
        WHERE ${conversionOfEvent(sql, "c", { id: sql`k.outcome_event_id`, profile: sql`k.profile_id`, at: sql`k.occurred_at` })}
        LIMIT 1) c
      WHERE k.profile_id = ${profileId} AND k.idempotency_key = ${ref}) c
    CROSS JOIN LATERAL (
      SELECT e.id FROM outcome_events e
      WHERE e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at AND e.retracted_at IS NULL
      LIMIT 1) e
    LEFT JOIN LATERAL (SELECT cu.customer_key FROM customers cu WHERE cu.id = c.customer_id AND cu.profile_id = c.profile_id LIMIT 1) cu ON true
    ORDER BY c.rank
    LIMIT 1`

/**
 * The customers' row locks, in id order (see `lockCustomers`). By the whole key (decision 0137):
 * by id alone, a batch's few dozen ids are costed without statistics as a tenth of the table, and
 * the lock read every customer. test/api/queue-claim-plans.test.ts checks its plan at 200,000.
 */
export const lockStatement = (sql: SqlClient, keys: ReadonlyArray<CustomerKey>) =>
  sql`
    SELECT c.id FROM unnest(${keys.map((key) => key.id)}::uuid[], ${keys.map((key) => key.profileId)}::uuid[]) AS k(id, profile_id)
    JOIN customers c ON c.id = k.id AND c.profile_id = k.profile_id
    ORDER BY c.id FOR UPDATE OF c`

/** A customer's whole key. */
export interface CustomerKey {
  readonly id: string
  readonly profileId: string
}

export type { IdentifierKind } from "./identifiers.ts"

export interface NewIdentifier {
  readonly profileId: string
  readonly customerId: string
  readonly kind: IdentifierKind
  readonly value: string
}

/** Advisory-lock class (the first key of the two-key form) of identifier values ("SVC1"). */
const IDENTIFIER_LOCK_CLASS = 0x53564331

export const ScanRow = Schema.Struct({
  type: Schema.Literals(["missing_primary_email", "missing_primary_phone", "duplicate_email", "duplicate_phone"]),
  identifier_type: RepairIdentifierType,
  value: Schema.String,
  customer_ids: Schema.Array(Schema.String),
  identifier_id: Schema.NullOr(Schema.String)
})
export type ScanRow = typeof ScanRow.Type

const ScanAnswer = Schema.Struct({ summary: RepairScanSummary, rows: Schema.Array(ScanRow) })

export const BackfillRow = Schema.Struct({
  customer_id: Schema.String,
  identifier_id: Schema.String,
  identifier_type: RepairIdentifierType
})

export const BackfillOutcome = Schema.Struct({
  email_count: Schema.Int,
  phone_count: Schema.Int,
  duplicate_group_count: Schema.Int,
  sample: Schema.Array(BackfillRow)
})
export type BackfillOutcome = typeof BackfillOutcome.Type

// Their readers outside identity take them from the kernel; these keep older imports working.
export { compareText, type ProfileScoped, profileScoped } from "../../kernel/profile-scoped.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class CustomersRepo extends Context.Service<CustomersRepo, {
  /** A live conversion by its event id, its own id, or the event's idempotency key (in that order). */
  readonly findConversion: (profileId: string, ref: string, asUuid: string | null) => Repo<Option.Option<ConversionRef>>
  /** The live survivor of a customer (itself unless merged); None when it, or its survivor, is erased. */
  readonly survivorOf: (profileId: string, customerId: string) => Repo<Option.Option<string>>
  /** A customer and every customer merged into it, directly or not. */
  readonly mergedSet: (customerId: string) => Repo<ReadonlyArray<string>>
  /**
   * The live customer a `customer_key` names: the key's holder, or the survivor it was merged into
   * (a merge re-points earlier merges at the new survivor, so one hop reaches it). None when the
   * key is unknown or its person was erased. Never creates one.
   */
  readonly customerByKey: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  /** The oldest customer holding an identifier (merged ones too, the caller follows them). */
  readonly customerByIdentifier: (profileId: string, type: string, value: string) => Repo<Option.Option<string>>
  /**
   * The live customer with each `customer_key` (a merged customer's survivor), created where there is none (race-safe), by
   * `profileScoped(profile, customer_key)`.
   */
  readonly customersByKey: (keys: ReadonlyArray<ProfileScoped>) => Repo<ReadonlyMap<string, KnownCustomer>>
  /** The oldest live customer holding this identifier. */
  readonly liveCustomerByIdentifier: (profileId: string, kind: IdentifierKind, value: string) => Repo<Option.Option<string>>
  /** The oldest live customer holding each identifier, by `profileScoped(profile, value)`. */
  readonly oldestHolders: (kind: IdentifierKind, values: ReadonlyArray<ProfileScoped>) => Repo<ReadonlyMap<string, KnownCustomer>>
  /**
   * Holds each `(profile, kind, value)` until the transaction ends (advisory locks, in a fixed
   * order): two resolutions by one email or phone take turns, so the second sees the customer
   * the first created instead of creating another one.
   */
  readonly lockIdentifierValues: (kind: IdentifierKind, values: ReadonlyArray<ProfileScoped>) => Repo<void>
  /** Customers known only by identifiers (no `customer_key`). */
  readonly createKeylessCustomers: (customers: ReadonlyArray<{ readonly id: string; readonly profileId: string }>) => Repo<void>
  /** The `customer_key` of each customer, by id. */
  readonly customerKeys: (customerIds: ReadonlyArray<string>) => Repo<ReadonlyMap<string, string | null>>
  /** Row-locks the customers (in id order) until the transaction ends: their identifiers and payments hold still. */
  readonly lockCustomers: (customers: ReadonlyArray<CustomerKey>) => Repo<void>
  /** Adds each identifier to its customer unless the customer already holds it. */
  readonly addIdentifiers: (identifiers: ReadonlyArray<NewIdentifier>) => Repo<void>
  /** The live customer the newest bound touch of a browser belongs to. */
  readonly customerByAnonymousId: (profileId: string, anonymousId: string) => Repo<Option.Option<string>>
  readonly journeyRows: (query: JourneyQuery) => Repo<ReadonlyArray<StoredRow>>
  readonly personFacts: (customerId: string, customerIds: ReadonlyArray<string>) => Repo<PersonFacts>
  readonly personConversions: (customerIds: ReadonlyArray<string>, limit: number) => Repo<ReadonlyArray<typeof PersonConversionRow.Type>>
  readonly identifiersOf: (customerIds: ReadonlyArray<string>) => Repo<ReadonlyArray<{ readonly type: string; readonly value: string }>>
  /** Live customers, newest first, one more than `limit`. */
  readonly listCustomers: (profileId: string, after: Option.Option<Keyset>, limit: number) => Repo<ReadonlyArray<CustomerRow>>
  /** Visitors (touches grouped by anonymous id), most recently seen first, one more than `limit`. */
  readonly listVisitors: (profileId: string, after: Option.Option<Keyset>, limit: number) => Repo<ReadonlyArray<VisitorRow>>
  readonly findErasure: (profileId: string, requestRef: string) => Repo<Option.Option<ErasureRow>>
  readonly erasureById: (profileId: string, erasureId: string) => Repo<Option.Option<ErasureRow>>
  /** Claims the request_ref with a receipt row (false when another request holds it). */
  readonly claimErasure: (row: {
    readonly id: string
    readonly profileId: string
    readonly requestRef: string
    readonly customerId: string
    readonly reason: string | null
    readonly selectorDigest: string
  }) => Repo<boolean>
  /** Erasure: deletes the customers' identifiers; answers how many. */
  readonly deleteIdentifiers: (customerIds: ReadonlyArray<string>) => Repo<number>
  /** Erasure: the customers keep their rows without key or name, marked erased. */
  readonly markErased: (customerIds: ReadonlyArray<string>) => Repo<void>
  /** Erasure: the receipt row records its completion and counts. */
  readonly completeErasure: (erasureId: string, counts: ErasureCounts) => Repo<void>
  /**
   * A merge: the merged customer's identifiers the survivor holds too are hidden (`removed_at`),
   * the others move to the survivor. Answers the ids of both.
   */
  readonly moveIdentifiers: (
    mergedId: string,
    survivorId: string
  ) => Repo<{ readonly hidden: ReadonlyArray<string>; readonly moved: ReadonlyArray<string> }>
  /**
   * A merge marks `mergedId` merged into `survivorId`; merges stay one level deep, so customers
   * merged into the merged one now point at the survivor too. Answers the ids of those.
   */
  readonly markMerged: (mergedId: string, survivorId: string) => Repo<ReadonlyArray<string>>
  /** A merge's undo: the moved identifiers go back to the merged customer, the hidden ones show again. */
  readonly restoreIdentifiers: (
    mergedId: string,
    moved: ReadonlyArray<string>,
    hidden: ReadonlyArray<string>
  ) => Repo<void>
  /** A merge's undo: the re-pointed customers point at the merged one again, which is live again. */
  readonly unmarkMerged: (mergedId: string, survivorId: string, remerged: ReadonlyArray<string>) => Repo<void>
  /** The repair scan's counts (whole profile) and one page of its rows in their fixed order. */
  readonly repairScan: (profileId: string, offset: number, limit: number) => Repo<typeof ScanAnswer.Type>
  /** Read-only: the backfills an apply would write now, for these identifier types. */
  readonly previewBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => Repo<BackfillOutcome>
  /** Marks the oldest email/phone of each customer lacking a primary one as primary. */
  readonly applyBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => Repo<BackfillOutcome>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/CustomersRepo") {
  static readonly layer = Layer.effect(CustomersRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstConversion = decodeFirstRow(ConversionRef)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const keyRows = decodeRows(Schema.Struct({ id: Schema.String, customer_key: Schema.NullOr(Schema.String) }))
      const storedRows = decodeRows(StoredRow)
      const firstFacts = decodeFirstRow(PersonFacts)
      const personConversionRows = decodeRows(PersonConversionRow)
      const identifierRows = decodeRows(Identifier)
      const customerRows = decodeRows(CustomerRow)
      const visitorRows = decodeRows(VisitorRow)
      const firstErasure = decodeFirstRow(ErasureRow)
      const iso = (column: string) => isoTimestamp(sql, column)

      const findConversion = (profileId: string, ref: string, asUuid: string | null) =>
        firstConversion(findConversionStatement(sql, profileId, ref, asUuid))

      const survivorOf = (profileId: string, customerId: string) =>
        Effect.map(
          firstId(sql`
            WITH RECURSIVE chain(id, merged_into_id, erased_at, depth) AS (
              SELECT id, merged_into_id, erased_at, 0 FROM customers WHERE id = ${customerId} AND profile_id = ${profileId}
              UNION ALL
              SELECT c.id, c.merged_into_id, c.erased_at, chain.depth + 1
              FROM customers c JOIN chain ON c.id = chain.merged_into_id WHERE chain.depth < 32
            )
            SELECT id FROM chain WHERE merged_into_id IS NULL AND erased_at IS NULL`),
          Option.map((row) => row.id)
        )

      const mergedSet = (customerId: string) =>
        Effect.map(
          idRows(sql`
            WITH RECURSIVE merged(id, depth) AS (
              SELECT ${customerId}::uuid, 0
              UNION ALL
              SELECT c.id, merged.depth + 1 FROM customers c JOIN merged ON c.merged_into_id = merged.id WHERE merged.depth < 32
            )
            SELECT DISTINCT id::text AS id FROM merged`),
          (rows) => rows.map((row) => row.id)
        )

      const customerByKey = (profileId: string, customerKey: string) =>
        Effect.map(
          firstId(sql`
            SELECT s.id FROM customers x
            JOIN customers s ON s.id = coalesce(x.merged_into_id, x.id) AND s.merged_into_id IS NULL AND s.erased_at IS NULL
            WHERE x.profile_id = ${profileId} AND x.customer_key = ${customerKey} AND x.erased_at IS NULL
            ORDER BY x.merged_into_id IS NULL DESC, x.created_at, x.id LIMIT 1`),
          Option.map((row) => row.id)
        )

      const customerByIdentifier = (profileId: string, type: string, value: string) =>
        Effect.map(
          firstId(sql`
            SELECT c.id FROM customer_identifiers i
            JOIN customers c ON c.id = i.customer_id AND c.erased_at IS NULL
            WHERE i.profile_id = ${profileId} AND i.kind = ${type} AND i.value = ${value} AND i.removed_at IS NULL
            ORDER BY c.merged_into_id IS NULL DESC, c.created_at, c.id LIMIT 1`),
          Option.map((row) => row.id)
        )

      const customerByAnonymousId = (profileId: string, anonymousId: string) =>
        Effect.map(byKey(sql, firstId(customerByAnonymousIdStatement(sql, profileId, anonymousId))), Option.map((row) => row.id))

      const knownCustomers = decodeRows(Schema.Struct({ ...KnownCustomer.fields, profile_id: Schema.String, name: Schema.String }))
      const byScopedKey = (rows: ReadonlyArray<KnownCustomer & { readonly profile_id: string; readonly name: string }>) =>
        new Map(rows.map((row) => [profileScoped(row.profile_id, row.name), { id: row.id, created_at: row.created_at }] as const))

      const liveByKeys = (keys: ReadonlyArray<ProfileScoped>) =>
        Effect.map(
          knownCustomers(sql`
            SELECT q.profile_id, q.customer_key AS name, c.id, ${iso("c.created_at")} AS created_at
            FROM unnest(${keys.map((k) => k.profileId)}::uuid[], ${keys.map((k) => k.name)}::text[]) AS q(profile_id, customer_key)
            CROSS JOIN LATERAL (
              SELECT s.id, s.created_at FROM customers x
              JOIN customers s ON s.id = coalesce(x.merged_into_id, x.id) AND s.merged_into_id IS NULL AND s.erased_at IS NULL
              WHERE x.profile_id = q.profile_id AND x.customer_key = q.customer_key AND x.erased_at IS NULL
              ORDER BY x.merged_into_id IS NULL DESC LIMIT 1) c`),
          byScopedKey
        )

      // Read; then INSERT ... ON CONFLICT DO NOTHING on the partial unique index (in key order) for
      // the keys nobody holds, then read those: a concurrent creator makes the insert wait for its
      // commit, so the read finds its row. A row merged or erased in between makes the loop insert again.
      const customersByKey = (keys: ReadonlyArray<ProfileScoped>) =>
        keys.length === 0 ? Effect.succeed(new Map<string, KnownCustomer>()) : Effect.gen(function*() {
          const found = new Map<string, KnownCustomer>()
          let missing = [...new Map(keys.map((k) => [profileScoped(k.profileId, k.name), k] as const)).entries()]
            .sort(([a], [b]) => compareText(a, b))
            .map(([, k]) => k)
          // Read first: a key held by a merged customer names its survivor, and must not be created again.
          for (const [key, customer] of yield* liveByKeys(missing)) found.set(key, customer)
          missing = missing.filter((k) => !found.has(profileScoped(k.profileId, k.name)))
          for (let attempt = 0; attempt < 3 && missing.length > 0; attempt++) {
            yield* sql`
              INSERT INTO customers (id, profile_id, customer_key)
              SELECT v.id, v.profile_id, v.customer_key
              FROM unnest(${missing.map(() => crypto.randomUUID())}::uuid[], ${missing.map((k) => k.profileId)}::uuid[],
                                   ${missing.map((k) => k.name)}::text[]) WITH ORDINALITY AS v(id, profile_id, customer_key, n)
              ORDER BY n
              ON CONFLICT (profile_id, customer_key) WHERE customer_key IS NOT NULL AND merged_into_id IS NULL AND erased_at IS NULL
              DO NOTHING`
            for (const [key, customer] of yield* liveByKeys(missing)) found.set(key, customer)
            missing = missing.filter((k) => !found.has(profileScoped(k.profileId, k.name)))
          }
          if (missing.length > 0) return yield* Effect.die("customer upsert did not settle after three attempts")
          return found
        })

      const liveCustomerByIdentifier = (profileId: string, kind: IdentifierKind, value: string) =>
        Effect.map(
          firstId(sql`
            SELECT c.id FROM customer_identifiers i
            JOIN customers c ON c.id = i.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
            WHERE i.profile_id = ${profileId} AND i.kind = ${kind} AND i.value = ${value} AND i.removed_at IS NULL
            ORDER BY c.created_at, c.id LIMIT 1`),
          Option.map((row) => row.id)
        )

      const oldestHolders = (kind: IdentifierKind, values: ReadonlyArray<ProfileScoped>) =>
        values.length === 0 ? Effect.succeed(new Map<string, KnownCustomer>()) : Effect.map(
          knownCustomers(sql`
            SELECT q.profile_id, q.value AS name, c.id, ${iso("c.created_at")} AS created_at
            FROM unnest(${values.map((v) => v.profileId)}::uuid[], ${values.map((v) => v.name)}::text[]) AS q(profile_id, value)
            CROSS JOIN LATERAL (
              SELECT x.id, x.created_at FROM customer_identifiers i
              JOIN customers x ON x.id = i.customer_id AND x.merged_into_id IS NULL AND x.erased_at IS NULL
              WHERE i.profile_id = q.profile_id AND i.kind = ${kind} AND i.value = q.value AND i.removed_at IS NULL
              ORDER BY x.created_at, x.id LIMIT 1) c`),
          byScopedKey
        )

      const lockIdentifierValues = (kind: IdentifierKind, values: ReadonlyArray<ProfileScoped>) =>
        values.length === 0 ? Effect.void : Effect.asVoid(sql`
          SELECT pg_advisory_xact_lock(${IDENTIFIER_LOCK_CLASS}, s.h)
          FROM (SELECT DISTINCT hashtext(q.profile_id || ':' || ${kind} || ':' || q.value) AS h
                FROM unnest(${values.map((v) => v.profileId)}::text[], ${values.map((v) => v.name)}::text[]) AS q(profile_id, value)
                ORDER BY h) s`)

      const createKeylessCustomers = (customers: ReadonlyArray<{ readonly id: string; readonly profileId: string }>) =>
        customers.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO customers (id, profile_id)
          SELECT * FROM unnest(${customers.map((c) => c.id)}::uuid[], ${customers.map((c) => c.profileId)}::uuid[])`)

      const customerKeys = (customerIds: ReadonlyArray<string>) =>
        customerIds.length === 0 ? Effect.succeed(new Map<string, string | null>()) : Effect.map(
          keyRows(sql`
            SELECT id, customer_key FROM customers WHERE id = ANY(${[...new Set(customerIds)]}::uuid[])`),
          (rows) => new Map(rows.map((row) => [row.id, row.customer_key] as const))
        )

      // Unprepared, planned for its ids each time: a prepared statement's generic plan, picked
      // while the table was small, stays a sequential scan as the table grows until the next
      // ANALYZE (decision 0047). Id order: two transactions locking overlapping sets never wait
      // on each other in a cycle.
      const lockCustomers = (customers: ReadonlyArray<CustomerKey>) => {
        const keys = [...new Map(customers.map((key) => [`${key.id}/${key.profileId}`, key] as const)).values()]
          .sort((a, b) => compareText(a.id, b.id))
        return keys.length === 0 ? Effect.void : Effect.asVoid(lockStatement(sql, keys).unprepared)
      }

      const addIdentifiers = (identifiers: ReadonlyArray<NewIdentifier>) => {
        const distinct = [
          ...new Map(identifiers.map((i) => [`${i.customerId}\u0000${i.kind}\u0000${i.value}`, i] as const)).values()
        ]
        return distinct.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
          SELECT v.id, v.profile_id, v.customer_id, v.kind, v.value
          FROM unnest(${distinct.map(() => crypto.randomUUID())}::uuid[], ${distinct.map((i) => i.profileId)}::uuid[],
                      ${distinct.map((i) => i.customerId)}::uuid[], ${distinct.map((i) => i.kind)}::text[],
                      ${distinct.map((i) => i.value)}::text[]) AS v(id, profile_id, customer_id, kind, value)
          -- The profile too: with it the look-up is one probe of customer_identifiers_value; without
          -- it that index was walked whole for each identifier (0.8 ms each at 30,000 identifiers,
          -- a quarter of the database's time in bench/commerce).
          WHERE NOT EXISTS (SELECT 1 FROM customer_identifiers x
                            WHERE x.profile_id = v.profile_id AND x.kind = v.kind AND x.value = v.value
                              AND x.customer_id = v.customer_id AND x.removed_at IS NULL)`)
      }

      const journeyRows = (query: JourneyQuery) => {
        const conversion = Option.getOrNull(query.conversion)
        const credit = conversion === null
          // A person's journey: a touch's credit summed over the conversions that credit it.
          ? sql`
            LEFT JOIN LATERAL (
              SELECT sum(a.credit_share)::text AS credit_share, coalesce(bool_or(a.is_credited), false) AS is_credited,
                     coalesce(bool_or(a.in_window), false) AS in_window
              FROM attribution_credits a WHERE a.touch_id = r.id AND a.profile_id = ${query.profileId} AND a.model = ${query.model}
                -- Credit rows sit in their conversion's month, at most a window (365 days) after the
                -- touch and never before it: the months outside are never read (decision 0148).
                AND a.converted_at >= r.at - interval '1 millisecond' AND a.converted_at <= r.at + interval '366 days'
            ) cr ON r.kind <> 'outcome'`
          : sql`
            LEFT JOIN LATERAL (
              SELECT a.credit_share::text AS credit_share, a.is_credited, a.in_window
              FROM attribution_credits a
              WHERE a.conversion_id = ${conversion.id} AND a.profile_id = ${query.profileId}
                AND a.converted_at = ${conversion.at}::timestamptz AND a.model = ${query.model} AND a.touch_id = r.id
              LIMIT 1
            ) cr ON r.kind <> 'outcome'`
        const touchUpTo = conversion === null ? sql`` : sql`AND t.occurred_at <= ${conversion.at}::timestamptz`
        const outcomes = conversion === null
          ? sql`e.customer_id = ANY(${query.customerIds}::uuid[])`
          : sql`e.id = ${conversion.outcomeEventId}`
        const after = Option.match(query.after, {
          onNone: () => sql``,
          onSome: (keyset) => sql`WHERE (r.at, r.id) > (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })
        return storedRows(sql`
          WITH r AS (
            SELECT t.id, CASE WHEN t.customer_id = ${query.person} THEN t.kind ELSE 'inherited' END AS kind, t.occurred_at AS at,
                   t.channel, t.source, t.medium, t.campaign_external_id, t.campaign_name, t.ad_set_external_id, t.ad_set_name,
                   t.ad_external_id, t.ad_name, ad.creative_thumbnail_url, t.click_id_kind, t.join_method, t.customer_id,
                   t.url, t.path, t.referrer_domain, t.payload, t.device, t.browser, t.os, t.country, t.city, t.session_id,
                   t.anonymous_id
            FROM touches t
            LEFT JOIN ads ad ON ad.profile_id = t.profile_id AND ad.platform_id = t.ad_external_id
            WHERE t.profile_id = ${query.profileId} AND t.customer_id = ANY(${query.customerIds}::uuid[]) ${touchUpTo}
            UNION ALL
            SELECT e.id, 'outcome', e.occurred_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                   e.customer_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
            FROM outcome_events e
            WHERE e.profile_id = ${query.profileId} AND e.retracted_at IS NULL AND ${outcomes}
          )
          SELECT r.id, r.kind, ${iso("r.at")} AS at, r.channel, r.source, r.medium, r.campaign_external_id, r.campaign_name,
                 r.ad_set_external_id, r.ad_set_name, r.ad_external_id, r.ad_name, r.creative_thumbnail_url, r.click_id_kind,
                 r.join_method, r.customer_id, r.url, r.path, r.referrer_domain, r.payload, r.device, r.browser, r.os,
                 r.country, r.city, r.session_id, r.anonymous_id,
                 cr.credit_share, coalesce(cr.is_credited, false) AS is_credited, coalesce(cr.in_window, false) AS in_window
          -- The page first, then the credit of its rows only (a journey may hold thousands of touches).
          FROM (SELECT * FROM r ${after} ORDER BY r.at, r.id LIMIT ${query.limit + 1}) r ${credit}
          ORDER BY r.at, r.id`)
      }

      const personFacts = (customerId: string, customerIds: ReadonlyArray<string>) =>
        Effect.flatMap(
          firstFacts(sql`
            SELECT c.customer_key, c.first_name, c.last_name,
                   (SELECT count(*)::int FROM conversions x WHERE x.customer_id = ANY(${customerIds}::uuid[])) AS conversion_count,
                   t.touch_count, t.first_touch_at, t.last_touch_at
            FROM customers c
            CROSS JOIN (
              SELECT count(*)::int AS touch_count, ${iso("min(occurred_at)")} AS first_touch_at,
                     ${iso("max(occurred_at)")} AS last_touch_at
              FROM touches WHERE customer_id = ANY(${customerIds}::uuid[])
            ) t
            WHERE c.id = ${customerId}`),
          Option.match({ onNone: () => Effect.die("a resolved customer has no row"), onSome: Effect.succeed })
        )

      const personConversions = (customerIds: ReadonlyArray<string>, limit: number) =>
        personConversionRows(sql`
          SELECT outcome_event_id, id AS conversion_id, conversion_key, ${iso("occurred_at")} AS occurred_at,
                 trim_scale(value_amount)::text AS value_amount, currency, is_first_payment
          FROM conversions WHERE customer_id = ANY(${customerIds}::uuid[])
          ORDER BY occurred_at DESC, id DESC LIMIT ${limit}`)

      const identifiersOf = (customerIds: ReadonlyArray<string>) =>
        identifierRows(sql`
          SELECT DISTINCT kind AS type, value FROM customer_identifiers
          WHERE customer_id = ANY(${customerIds}::uuid[]) AND removed_at IS NULL AND kind <> 'national_id'
          ORDER BY kind, value`)

      const listCustomers = (profileId: string, after: Option.Option<Keyset>, limit: number) => {
        const page = Option.match(after, {
          onNone: () => sql``,
          onSome: (keyset) => sql`AND (c.created_at, c.id) < (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })
        return customerRows(sql`
          SELECT c.id, c.customer_key, c.first_name, c.last_name,
                 coalesce((SELECT json_agg(json_build_object('type', i.kind, 'value', i.value) ORDER BY i.kind, i.value)
                           FROM customer_identifiers i
                           WHERE i.customer_id = c.id AND i.removed_at IS NULL AND i.kind <> 'national_id'), '[]'::json) AS identifiers,
                 (SELECT count(*)::int FROM conversions x WHERE x.customer_id = c.id) AS conversion_count,
                 t.touch_count, t.first_touch_at, t.last_touch_at, ${iso("c.created_at")} AS created_at
          FROM customers c
          CROSS JOIN LATERAL (
            SELECT count(*)::int AS touch_count, ${iso("min(occurred_at)")} AS first_touch_at, ${iso("max(occurred_at)")} AS last_touch_at
            FROM touches WHERE customer_id = c.id
          ) t
          WHERE c.profile_id = ${profileId} AND c.merged_into_id IS NULL AND c.erased_at IS NULL ${page}
          ORDER BY c.created_at DESC, c.id DESC
          LIMIT ${limit + 1}`)
      }

      const listVisitors = (profileId: string, after: Option.Option<Keyset>, limit: number) => {
        const page = Option.match(after, {
          onNone: () => sql``,
          onSome: (keyset) => sql`WHERE (v.last_seen, v.anonymous_id) < (${keyset.at}::timestamptz, ${keyset.id})`
        })
        return visitorRows(sql`
          WITH v AS (
            SELECT anonymous_id, min(occurred_at) AS first_seen, max(occurred_at) AS last_seen, count(*)::int AS touch_count
            FROM touches WHERE profile_id = ${profileId} AND anonymous_id IS NOT NULL
            GROUP BY anonymous_id
          )
          SELECT v.anonymous_id, ${iso("v.first_seen")} AS first_seen_at, ${iso("v.last_seen")} AS last_seen_at, v.touch_count,
                 bound.id AS customer_id, bound.customer_key, last.channel, last.device, last.browser, last.os, last.country,
                 last.url AS last_url
          FROM v
          CROSS JOIN LATERAL (
            SELECT channel, device, browser, os, country, url FROM touches t
            WHERE t.anonymous_id = v.anonymous_id AND t.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
            ORDER BY t.occurred_at DESC, t.id DESC LIMIT 1
          ) last
          LEFT JOIN LATERAL (
            SELECT c.id, c.customer_key FROM touches t JOIN customers c ON c.id = t.customer_id AND c.erased_at IS NULL
            WHERE t.anonymous_id = v.anonymous_id AND t.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
            ORDER BY t.occurred_at DESC, t.id DESC LIMIT 1
          ) bound ON true
          ${page}
          ORDER BY v.last_seen DESC, v.anonymous_id DESC
          LIMIT ${limit + 1}`)
      }

      const erasureColumns = sql`id, request_ref, status, customer_key, reason, ${iso("requested_at")} AS requested_at,
        ${iso("completed_at")} AS completed_at, selector_digest`

      const findErasure = (profileId: string, requestRef: string) =>
        firstErasure(sql`SELECT ${erasureColumns} FROM customer_erasures WHERE profile_id = ${profileId} AND request_ref = ${requestRef}`)

      const erasureById = (profileId: string, erasureId: string) =>
        firstErasure(sql`SELECT ${erasureColumns} FROM customer_erasures WHERE profile_id = ${profileId} AND id = ${erasureId}`)

      const claimErasure = (row: {
        readonly id: string
        readonly profileId: string
        readonly requestRef: string
        readonly customerId: string
        readonly reason: string | null
        readonly selectorDigest: string
      }) =>
        Effect.map(
          idRows(sql`
            INSERT INTO customer_erasures (id, profile_id, request_ref, customer_id, customer_key, reason, selector_digest)
            SELECT ${row.id}, ${row.profileId}, ${row.requestRef}, c.id, c.customer_key, ${row.reason}, ${row.selectorDigest}
            FROM customers c WHERE c.id = ${row.customerId}
            ON CONFLICT (profile_id, request_ref) DO NOTHING
            RETURNING id`),
          (rows) => rows.length === 1
        )

      const count = (rows: ReadonlyArray<unknown>) => rows.length

      const deleteIdentifiers = (ids: ReadonlyArray<string>) =>
        Effect.map(sql`DELETE FROM customer_identifiers WHERE customer_id = ANY(${ids}::uuid[]) RETURNING id`, count)

      const markErased = (ids: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE customers SET customer_key = NULL, first_name = NULL, last_name = NULL, erased_at = now()
          WHERE id = ANY(${ids}::uuid[])`)

      const completeErasure = (erasureId: string, counts: ErasureCounts) =>
        Effect.asVoid(sql`
          UPDATE customer_erasures SET completed_at = now(), counts = ${JSON.stringify(counts)}::jsonb WHERE id = ${erasureId}`)

      const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

      const moveIdentifiers = (m: string, s: string) =>
        Effect.gen(function*() {
          const hidden = ids(yield* idRows(sql`
            UPDATE customer_identifiers x SET removed_at = now()
            WHERE x.customer_id = ${m} AND x.removed_at IS NULL
              AND EXISTS (SELECT 1 FROM customer_identifiers y WHERE y.profile_id = x.profile_id AND y.customer_id = ${s}
                          AND y.kind = x.kind AND y.value = x.value AND y.removed_at IS NULL)
            RETURNING x.id::text AS id`))
          const moved = ids(yield* idRows(sql`
            UPDATE customer_identifiers SET customer_id = ${s} WHERE customer_id = ${m} AND removed_at IS NULL
            RETURNING id::text AS id`))
          return { hidden, moved }
        })

      const markMerged = (m: string, s: string) =>
        Effect.gen(function*() {
          const remerged = ids(yield* idRows(sql`
            UPDATE customers SET merged_into_id = ${s} WHERE merged_into_id = ${m} RETURNING id::text AS id`))
          yield* sql`UPDATE customers SET merged_into_id = ${s} WHERE id = ${m}`
          return remerged
        })

      const restoreIdentifiers = (m: string, moved: ReadonlyArray<string>, hidden: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* sql`UPDATE customer_identifiers SET customer_id = ${m} WHERE id = ANY(${moved}::uuid[])`
          yield* sql`UPDATE customer_identifiers SET removed_at = NULL WHERE id = ANY(${hidden}::uuid[])`
        })

      const unmarkMerged = (m: string, s: string, remerged: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* sql`UPDATE customers SET merged_into_id = ${m} WHERE id = ANY(${remerged}::uuid[]) AND merged_into_id = ${s}`
          yield* sql`UPDATE customers SET merged_into_id = NULL WHERE id = ${m}`
        })

      const scanAnswer = decodeFirstRow(ScanAnswer)
      const backfillAnswer = decodeFirstRow(BackfillOutcome)

      /**
       * The repair findings as CTEs: `live` customers, their live email/phone identifiers `ids`, `dups`
       * (a value held by two or more live customers, holders oldest first) and `missing` (per
       * customer and type without a primary: the oldest identifier whose value is in no duplicate
       * group as `identifier_id`, null when every one is, and the value a row shows).
       */
      const findings = (profileId: string, types: ReadonlyArray<RepairIdentifierType>) =>
        sql`
          live AS (
            SELECT id, created_at FROM customers
            WHERE profile_id = ${profileId} AND merged_into_id IS NULL AND erased_at IS NULL
          ),
          ids AS (
            SELECT i.id, i.customer_id, i.kind, i.value, i.is_primary, i.created_at, c.created_at AS customer_created_at
            FROM customer_identifiers i JOIN live c ON c.id = i.customer_id
            WHERE i.profile_id = ${profileId} AND i.removed_at IS NULL AND i.kind = ANY(${[...types]}::text[])
          ),
          holders AS (
            SELECT DISTINCT kind, value, customer_id, customer_created_at FROM ids
          ),
          dups AS (
            SELECT kind, value, array_agg(customer_id::text ORDER BY customer_created_at, customer_id) AS customer_ids
            FROM holders GROUP BY kind, value HAVING count(*) > 1
          ),
          flagged AS (
            SELECT x.*, d.value IS NOT NULL AS duplicated
            FROM ids x LEFT JOIN dups d ON d.kind = x.kind AND d.value = x.value
          ),
          missing AS (
            SELECT customer_id, kind, customer_created_at,
                   (array_agg(id ORDER BY created_at, id) FILTER (WHERE NOT duplicated))[1] AS identifier_id,
                   COALESCE((array_agg(value ORDER BY created_at, id) FILTER (WHERE NOT duplicated))[1],
                            (array_agg(value ORDER BY created_at, id))[1]) AS value
            FROM flagged
            GROUP BY customer_id, kind, customer_created_at
            HAVING NOT bool_or(is_primary)
          )`

      const repairScan = (profileId: string, offset: number, limit: number) =>
        Effect.flatMap(
          scanAnswer(sql`
            WITH ${findings(profileId, ["email", "phone"])},
            found AS (
              SELECT CASE m.kind WHEN 'email' THEN 1 ELSE 2 END AS sort_type, m.customer_created_at AS sort_at,
                     m.customer_id::text AS sort_key, 'missing_primary_' || m.kind AS type, m.kind AS identifier_type,
                     m.value, ARRAY[m.customer_id::text] AS customer_ids, m.identifier_id::text AS identifier_id
              FROM missing m
              UNION ALL
              SELECT CASE d.kind WHEN 'email' THEN 3 ELSE 4 END, NULL, d.value, 'duplicate_' || d.kind, d.kind,
                     d.value, d.customer_ids, NULL
              FROM dups d
            )
            SELECT json_build_object(
                     'missing_primary_email_count', (SELECT count(*) FROM found WHERE sort_type = 1),
                     'missing_primary_phone_count', (SELECT count(*) FROM found WHERE sort_type = 2),
                     'duplicate_email_group_count', (SELECT count(*) FROM found WHERE sort_type = 3),
                     'duplicate_phone_group_count', (SELECT count(*) FROM found WHERE sort_type = 4),
                     'auto_repairable_count', (SELECT count(*) FROM found WHERE sort_type <= 2 AND identifier_id IS NOT NULL),
                     'auto_merge_count', (SELECT count(*) FROM found WHERE sort_type >= 3)
                   ) AS summary,
                   COALESCE((
                     SELECT json_agg(json_build_object('type', p.type, 'identifier_type', p.identifier_type, 'value', p.value,
                                                       'customer_ids', p.customer_ids, 'identifier_id', p.identifier_id)
                                     ORDER BY p.sort_type, p.sort_at, p.sort_key)
                     FROM (SELECT * FROM found ORDER BY sort_type, sort_at, sort_key LIMIT ${limit} OFFSET ${offset}) p
                   ), '[]'::json) AS rows`),
          (found) => Option.match(found, { onNone: () => Effect.die("repair scan answered no row"), onSome: Effect.succeed })
        )

      /** Counts and the first rows of `written` (a CTE of customer_id, identifier_id, kind, customer_created_at). */
      const backfillSummary = sql`
        SELECT (SELECT count(*)::int FROM written WHERE kind = 'email') AS email_count,
               (SELECT count(*)::int FROM written WHERE kind = 'phone') AS phone_count,
               (SELECT count(*)::int FROM dups) AS duplicate_group_count,
               COALESCE((
                 SELECT json_agg(json_build_object('customer_id', s.customer_id, 'identifier_id', s.identifier_id,
                                                   'identifier_type', s.kind)
                                 ORDER BY s.customer_created_at, s.customer_id, s.kind)
                 FROM (SELECT * FROM written ORDER BY customer_created_at, customer_id, kind LIMIT ${REPAIR_SAMPLE_SIZE}) s
               ), '[]'::json) AS sample`

      const backfill = (profileId: string, types: ReadonlyArray<RepairIdentifierType>, apply: boolean) =>
        Effect.flatMap(
          backfillAnswer(
            apply
              ? sql`
                WITH ${findings(profileId, types)},
                written AS (
                  UPDATE customer_identifiers u SET is_primary = true
                  FROM missing m
                  WHERE u.id = m.identifier_id AND NOT u.is_primary
                  RETURNING u.customer_id::text AS customer_id, u.id::text AS identifier_id, u.kind, m.customer_created_at
                )
                ${backfillSummary}`
              : sql`
                WITH ${findings(profileId, types)},
                written AS (
                  SELECT customer_id::text AS customer_id, identifier_id::text AS identifier_id, kind, customer_created_at
                  FROM missing WHERE identifier_id IS NOT NULL
                )
                ${backfillSummary}`
          ),
          (found) => Option.match(found, { onNone: () => Effect.die("backfill answered no row"), onSome: Effect.succeed })
        )

      return {
        ...atDatabaseBoundary({
          findConversion,
          survivorOf,
          mergedSet,
          customerByKey,
          customerByIdentifier,
          customersByKey,
          liveCustomerByIdentifier,
          oldestHolders,
          lockIdentifierValues,
          createKeylessCustomers,
          customerKeys,
          lockCustomers,
          addIdentifiers,
          customerByAnonymousId,
          journeyRows,
          personFacts,
          personConversions,
          identifiersOf,
          listCustomers,
          listVisitors,
          findErasure,
          erasureById,
          claimErasure,
          deleteIdentifiers,
          markErased,
          completeErasure,
          moveIdentifiers,
          markMerged,
          restoreIdentifiers,
          unmarkMerged,
          repairScan,
          previewBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => backfill(profileId, types, false),
          applyBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => backfill(profileId, types, true)
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
