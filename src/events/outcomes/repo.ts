/** SQL of server-side events, retractions and the conversions list (decision 0029). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ReplayQueue } from "../../attribution/jobs/repo.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { decodeFirstRow, decodeRows, nullableColumn, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { proposeMerges } from "../../identity/proposer.ts"
import { changedFirstPaymentFlags, FirstPaymentFacts } from "../payments/first-payments.ts"
import { liveCustomerByKey } from "../../customers/live-by-key.ts"
import { lockCustomers } from "../../customers/lock.ts"

export const ProfileFacts = Schema.Struct({
  id: Schema.String,
  currency: Schema.NullOr(Schema.String),
  privacy_mode: Schema.String,
  is_healthcare_agency: Schema.Boolean,
  provisioned_by_app_id: Schema.NullOr(Schema.String)
})
export type ProfileFacts = typeof ProfileFacts.Type

export const StoredEvent = Schema.Struct({
  profile_id: Schema.String,
  idempotency_key: Schema.String,
  id: Schema.String,
  request_hash: Schema.String,
  retracted: Schema.Boolean,
  conversion_id: Schema.NullOr(Schema.String)
})
export type StoredEvent = typeof StoredEvent.Type

export const Definition = Schema.Struct({
  profile_id: Schema.String,
  event_name: Schema.String,
  id: Schema.String,
  conversion_key: Schema.String,
  counts_as_cash: Schema.Boolean,
  attribution_eligible: Schema.Boolean
})
export type Definition = typeof Definition.Type

const LockedEvent = Schema.Struct({
  id: Schema.String,
  retracted: Schema.Boolean,
  customer_id: Schema.NullOr(Schema.String)
})
export type LockedEvent = typeof LockedEvent.Type

export const ConversionRow = Schema.Struct({
  outcome_event_id: Schema.String,
  conversion_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  is_first_payment: Schema.NullOr(Schema.Boolean)
})
export type ConversionRow = typeof ConversionRow.Type

export interface NewEvent {
  readonly id: string
  readonly profileId: string
  /** `outcome_events.source`: `api` for POST /api/v1/events, `cardgw` for card-gateway payments (decision 0032). */
  readonly source: string
  readonly idempotencyKey: string
  readonly requestHash: string
  readonly eventName: string
  /** ISO 8601 with offset. */
  readonly occurredAt: string
  /** Plain decimal text, or null. */
  readonly valueAmount: string | null
  readonly currency: string | null
  readonly subjectRef: string | null
  readonly orderGroup: string | null
  readonly actionSource: string | null
  readonly clickIds: Readonly<Record<string, string>>
}

/** A customer as identity resolution compares them: oldest first, then by id. */
export const KnownCustomer = Schema.Struct({
  id: Schema.String,
  /** ISO 8601 UTC with microseconds (fixed width, sorts as text). */
  created_at: Schema.String
})
export type KnownCustomer = typeof KnownCustomer.Type

/** One map key for a pair of a profile and a name (an idempotency key, a customer key, an identifier). */
export const profileScoped = (profileId: string, name: string) => `${profileId}\u0000${name}`

export interface ProfileScoped {
  readonly profileId: string
  readonly name: string
}

/** The identifiers a customer is resolved by (besides `external_id`, its `customer_key`). */
export type IdentifierKind = "crm_contact_id" | "national_id" | "email" | "phone" | "anonymous_id"

export interface NewIdentifier {
  readonly profileId: string
  readonly customerId: string
  readonly kind: IdentifierKind
  readonly value: string
}

export interface NewOutboxRow {
  readonly id: string
  readonly profileId: string
  readonly topic: string
  readonly payload: unknown
}

export interface NewConversion {
  readonly id: string
  readonly event: NewEvent
  readonly definition: Definition
  readonly customerId: string | null
  /** Set here only when there is no customer (a lone payment is a first one); else recomputed. */
  readonly isFirstPayment: boolean | null
}

export interface ConversionFilters {
  readonly customerKey?: string
  readonly conversionKey?: string
  /** Inclusive lower bound, ISO 8601 with offset. */
  readonly start?: string
  /** Upper bound, ISO 8601 with offset; exclusive for a date (its next midnight), inclusive for a date-time. */
  readonly end?: { readonly at: string; readonly inclusive: boolean }
}

export interface ConversionKeyset {
  readonly occurredAt: string
  readonly id: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/** Advisory-lock class (the first key of the two-key form) of identifier values ("SVC1"). */
const IDENTIFIER_LOCK_CLASS = 0x53564331

/** Code-unit order: any fixed order does, as long as every batch locks in the same one. */
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

export class EventsRepo extends Context.Service<EventsRepo, {
  /** Currency, healthcare family and provisioning app of each profile, by id. */
  readonly profileFacts: (profileIds: ReadonlyArray<string>) => Repo<ReadonlyMap<string, ProfileFacts>>
  /**
   * Claims `(profile, idempotency_key)` for each new event (keys distinct): the stored
   * `occurred_at` (ISO UTC) of each event this call inserted, by event id. A key already taken
   * is left out (the insert waits for a concurrent claimer to finish first). Claims in key order,
   * so two concurrent batches never wait on each other in a cycle.
   */
  readonly claimEvents: (events: ReadonlyArray<NewEvent>) => Repo<ReadonlyMap<string, string>>
  /** The event stored under a key, with its conversion. */
  readonly findEvent: (profileId: string, idempotencyKey: string) => Repo<Option.Option<StoredEvent>>
  /** The events stored under these keys, by `profileScoped(profile, key)`. */
  readonly findEvents: (keys: ReadonlyArray<ProfileScoped>) => Repo<ReadonlyMap<string, StoredEvent>>
  /**
   * The live customer with each `customer_key` (a merged customer's survivor), created where there is none (race-safe), by
   * `profileScoped(profile, customer_key)`.
   */
  readonly customersByKey: (keys: ReadonlyArray<ProfileScoped>) => Repo<ReadonlyMap<string, KnownCustomer>>
  /** The live customer with this `customer_key` (a merged one's survivor), if there is one (never creates). */
  readonly findCustomerByKey: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  /** The oldest live customer holding this identifier. */
  readonly customerByIdentifier: (profileId: string, kind: IdentifierKind, value: string) => Repo<Option.Option<string>>
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
  readonly lockCustomers: (customerIds: ReadonlyArray<string>) => Repo<void>
  /** Adds each identifier to its customer unless the customer already holds it. */
  readonly addIdentifiers: (identifiers: ReadonlyArray<NewIdentifier>) => Repo<void>
  /** Merge proposals for the pairs of live customers now sharing one of these identifiers (src/identity/proposer.ts). */
  readonly proposeMerges: (identifiers: ReadonlyArray<NewIdentifier>) => Repo<void>
  /**
   * Binds the unbound touches of these browsers (tracker anonymous ids) to their customers
   * (`join_method: anonymous_id`) and queues the customers' conversions for re-credit.
   */
  readonly bindVisitorTouches: (
    visitors: ReadonlyArray<{ readonly profileId: string; readonly anonymousId: string; readonly customerId: string }>
  ) => Repo<void>
  readonly setEventCustomers: (pairs: ReadonlyArray<{ readonly eventId: string; readonly customerId: string }>) => Repo<void>
  /**
   * For each `(profile, event_name)`, the definition that makes it a conversion (the default one,
   * else the oldest), by `profileScoped(profile, event_name)`.
   */
  readonly definitionsFor: (names: ReadonlyArray<ProfileScoped>) => Repo<ReadonlyMap<string, Definition>>
  /** Inserts the conversions; `created_at` follows the array's order (arrival order breaks ties). */
  readonly insertConversions: (conversions: ReadonlyArray<NewConversion>) => Repo<void>
  /**
   * Recomputes `is_first_payment` of every conversion of the customers (the rules:
   * first-payments.ts) and writes the flags that changed; answers how many changed. Locks the
   * customer rows first (FOR UPDATE, in id order so concurrent callers never deadlock), so two
   * recomputes of one customer never interleave: run it inside the transaction that changed the
   * customers' payments (ingest, retraction, erasure, merge, a payment action) so it sees that
   * change. One read and at most three writes, however many customers.
   */
  readonly recomputeFirstPayments: (customerIds: ReadonlyArray<string>) => Repo<number>
  readonly insertOutbox: (rows: ReadonlyArray<NewOutboxRow>) => Repo<void>
  /** The event under a key, row-locked until the transaction ends. */
  readonly lockEvent: (profileId: string, idempotencyKey: string) => Repo<Option.Option<LockedEvent>>
  readonly hasExport: (eventId: string) => Repo<boolean>
  readonly hasConversationLead: (eventId: string) => Repo<boolean>
  /**
   * Deletes the event's conversions and their credit rows; answers both counts and the customers
   * the conversions belonged to (a payer assignment may have moved one away from the event's customer).
   */
  readonly deleteConversions: (
    eventId: string
  ) => Repo<{ readonly conversions: number; readonly credits: number; readonly customerIds: ReadonlyArray<string> }>
  /** Marks the event retracted and drops what it carried beyond its name, time and key. */
  readonly tombstone: (eventId: string, reason: string) => Repo<void>
  /** Queues (or joins the already queued) full-profile attribution replay, in the caller's transaction. */
  readonly queueReplay: (profileId: string, reason: string) => Repo<void>
  /** The profile's conversions, newest first, one more than `limit`. */
  readonly listConversions: (
    profileId: string,
    filters: ConversionFilters,
    limit: number,
    after: Option.Option<ConversionKeyset>
  ) => Repo<ReadonlyArray<ConversionRow>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
  /** Marks a conversion credited (with no credit rows: one whose crediting fails; a replay tries it again). */
  readonly markCredited: (conversionId: string) => Repo<void>
  /**
   * After crediting `ids`: sets `credited_at` (keeping its first value: only whether it is set has
   * a meaning) and refreshes the cash and eligibility flags from their definitions; rows whose
   * flags and mark are already right are not rewritten.
   */
  readonly settleCredited: (ids: ReadonlyArray<string>) => Repo<void>
  /** Marks a payment a later installment (or not); a payment with no customer is first unless it is one. */
  readonly setInstallment: (paymentId: string, installment: boolean) => Repo<void>
  /** Sets a payment's assigned payer only (the customer it belongs to stays). */
  readonly setPayer: (paymentId: string, payerId: string | null) => Repo<void>
  /**
   * Sets a payment's assigned payer and the customer it now belongs to, and clears `credited_at`
   * so that the worker credits it again (its credit rows are deleted by the caller).
   */
  readonly reassignPayment: (paymentId: string, payerId: string | null, customerId: string | null) => Repo<void>
  /** Records a refund of the payment (now). */
  readonly setRefund: (paymentId: string, amount: string | null, reason: string | null) => Repo<void>
  /** Undoes a recorded refund of the payment. */
  readonly clearRefund: (paymentId: string) => Repo<void>
  /**
   * Before deleting definitions: their conversions stay (with their keys) but lose the
   * definition, so they no longer count as cash nor take credit.
   */
  readonly detachDefinitions: (profileId: string, definitionIds: ReadonlyArray<string>) => Repo<void>
}>()("svc/EventsRepo") {
  static readonly layer = Layer.effect(EventsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const replays = yield* ReplayQueue
      const facts = decodeRows(ProfileFacts)
      const storedEvents = decodeRows(StoredEvent)
      const definitions = decodeRows(Definition)
      const knownCustomers = decodeRows(Schema.Struct({ ...KnownCustomer.fields, profile_id: Schema.String, name: Schema.String }))
      const firstLocked = decodeFirstRow(LockedEvent)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const claimedRows = decodeRows(Schema.Struct({ id: Schema.String, occurred_at: Schema.String }))
      const conversionRows = decodeRows(ConversionRow)
      const byScopedKey = (rows: ReadonlyArray<KnownCustomer & { readonly profile_id: string; readonly name: string }>) =>
        new Map(rows.map((row) => [profileScoped(row.profile_id, row.name), { id: row.id, created_at: row.created_at }] as const))

      const profileFacts = (profileIds: ReadonlyArray<string>) =>
        Effect.map(
          facts(sql`
            SELECT p.id, p.currency, p.privacy_mode, w.is_healthcare_agency, p.provisioned_by_app_id
            FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
            WHERE p.id = ANY(${[...new Set(profileIds)]}::uuid[])`),
          (rows) => new Map(rows.map((row) => [row.id, row] as const))
        )

      const claimEvents = (events: ReadonlyArray<NewEvent>) => {
        if (events.length === 0) return Effect.succeed(new Map<string, string>())
        const sorted = [...events].sort((a, b) => compareText(profileScoped(a.profileId, a.idempotencyKey), profileScoped(b.profileId, b.idempotencyKey)))
        const column = <A>(pick: (event: NewEvent) => A) => sorted.map(pick)
        return Effect.map(
          claimedRows(sql`
            INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at,
                                        value_amount, currency, subject_ref, order_group, action_source, click_ids)
            SELECT v.id, v.profile_id, v.idempotency_key, v.request_hash, v.source, v.event_name, v.occurred_at, v.value_amount,
                   v.currency, v.subject_ref, v.order_group, v.action_source, v.click_ids
            FROM unnest(
              ${column((e) => e.id)}::uuid[], ${column((e) => e.profileId)}::uuid[], ${column((e) => e.idempotencyKey)}::text[],
              ${column((e) => e.requestHash)}::text[], ${column((e) => e.source)}::text[], ${column((e) => e.eventName)}::text[],
              ${column((e) => e.occurredAt)}::timestamptz[], ${nullableColumn(column((e) => e.valueAmount))}::numeric(20, 6)[],
              ${nullableColumn(column((e) => e.currency))}::text[], ${nullableColumn(column((e) => e.subjectRef))}::text[],
              ${nullableColumn(column((e) => e.orderGroup))}::text[], ${nullableColumn(column((e) => e.actionSource))}::text[], ${column((e) => JSON.stringify(e.clickIds))}::jsonb[])
            WITH ORDINALITY AS v(id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at, value_amount,
                                 currency, subject_ref, order_group, action_source, click_ids, n)
            ORDER BY n
            ON CONFLICT (profile_id, idempotency_key) DO NOTHING
            RETURNING id, ${isoTimestamp(sql, "occurred_at")} AS occurred_at`),
          (rows) => new Map(rows.map((row) => [row.id, row.occurred_at] as const))
        )
      }

      // Batch lookups are one LATERAL subquery per key, with LIMIT (the keys are unique): the
      // planner cannot flatten it into a join, so every key is an index probe even while a table's
      // statistics are stale (a fresh table looks empty, and a join plan then scans it per key).
      const findEvents = (keys: ReadonlyArray<ProfileScoped>) =>
        Effect.map(
          storedEvents(sql`
            SELECT e.profile_id, e.idempotency_key, e.id, e.request_hash, e.retracted_at IS NOT NULL AS retracted,
                   c.id AS conversion_id
            FROM unnest(${keys.map((k) => k.profileId)}::uuid[], ${keys.map((k) => k.name)}::text[]) AS q(profile_id, idempotency_key)
            CROSS JOIN LATERAL (SELECT * FROM outcome_events x
                                WHERE x.profile_id = q.profile_id AND x.idempotency_key = q.idempotency_key LIMIT 1) e
            LEFT JOIN LATERAL (SELECT id FROM conversions x WHERE x.outcome_event_id = e.id LIMIT 1) c ON true`),
          (rows) => new Map(rows.map((row) => [profileScoped(row.profile_id, row.idempotency_key), row] as const))
        )

      // A key held by a merged customer names its survivor (decision 0040).
      const liveByKey = (profileId: string, customerKey: string) => firstId(liveCustomerByKey(sql, profileId, customerKey))

      const liveByKeys = (keys: ReadonlyArray<ProfileScoped>) =>
        Effect.map(
          knownCustomers(sql`
            SELECT q.profile_id, q.customer_key AS name, c.id, ${isoTimestamp(sql, "c.created_at")} AS created_at
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
        Effect.gen(function*() {
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

      const customerByIdentifier = (profileId: string, kind: IdentifierKind, value: string) =>
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
            SELECT q.profile_id, q.value AS name, c.id, ${isoTimestamp(sql, "c.created_at")} AS created_at
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
          sql<{ id: string; customer_key: string | null }>`
            SELECT id, customer_key FROM customers WHERE id = ANY(${[...new Set(customerIds)]}::uuid[])`,
          (rows) => new Map(rows.map((row) => [row.id, row.customer_key] as const))
        )

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
          WHERE NOT EXISTS (SELECT 1 FROM customer_identifiers x
                            WHERE x.customer_id = v.customer_id AND x.kind = v.kind AND x.value = v.value AND x.removed_at IS NULL)`)
      }

      // Unprepared, planned for its ids each time, like `lockCustomers` (decision 0047).
      const setEventCustomers = (pairs: ReadonlyArray<{ readonly eventId: string; readonly customerId: string }>) =>
        pairs.length === 0 ? Effect.void : Effect.asVoid(sql`
          UPDATE outcome_events o SET customer_id = v.customer_id
          FROM unnest(${pairs.map((p) => p.eventId)}::uuid[], ${pairs.map((p) => p.customerId)}::uuid[]) AS v(id, customer_id)
          WHERE o.id = v.id`.unprepared)

      const definitionsFor = (names: ReadonlyArray<ProfileScoped>) =>
        names.length === 0 ? Effect.succeed(new Map<string, Definition>()) : Effect.map(
          definitions(sql`
            SELECT DISTINCT ON (q.profile_id, q.event_name) q.profile_id, q.event_name,
                   d.id, d.conversion_key, d.counts_as_cash, d.attribution_eligible
            FROM unnest(${names.map((n) => n.profileId)}::uuid[], ${names.map((n) => n.name)}::text[]) AS q(profile_id, event_name)
            JOIN conversion_definitions d ON d.profile_id = q.profile_id AND d.kind = 'event' AND q.event_name = ANY (d.event_names)
            ORDER BY q.profile_id, q.event_name, d.is_default DESC, d.created_at, d.id`),
          (rows) => new Map(rows.map((row) => [profileScoped(row.profile_id, row.event_name), row] as const))
        )

      const insertConversions = (conversions: ReadonlyArray<NewConversion>) => {
        if (conversions.length === 0) return Effect.void
        const column = <A>(pick: (conversion: NewConversion) => A) => conversions.map(pick)
        // clock_timestamp() per row: conversions of one batch keep their arrival order in created_at.
        return Effect.asVoid(sql`
          INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at,
                                   value_amount, currency, customer_id, subject_ref, order_group, counts_as_cash,
                                   attribution_eligible, is_first_payment, created_at)
          SELECT v.id, v.profile_id, v.outcome_event_id, v.definition_id, v.conversion_key, v.occurred_at, v.value_amount,
                 v.currency, v.customer_id, v.subject_ref, v.order_group, v.counts_as_cash, v.attribution_eligible,
                 v.is_first_payment, clock_timestamp()
          FROM unnest(
            ${column((c) => c.id)}::uuid[], ${column((c) => c.event.profileId)}::uuid[], ${column((c) => c.event.id)}::uuid[],
            ${column((c) => c.definition.id)}::uuid[], ${column((c) => c.definition.conversion_key)}::text[],
            ${column((c) => c.event.occurredAt)}::timestamptz[], ${nullableColumn(column((c) => c.event.valueAmount))}::numeric(20, 6)[],
            ${nullableColumn(column((c) => c.event.currency))}::text[], ${nullableColumn(column((c) => c.customerId))}::uuid[],
            ${nullableColumn(column((c) => c.event.subjectRef))}::text[], ${nullableColumn(column((c) => c.event.orderGroup))}::text[],
            ${column((c) => c.definition.counts_as_cash)}::boolean[], ${column((c) => c.definition.attribution_eligible)}::boolean[],
            ${nullableColumn(column((c) => c.isFirstPayment))}::boolean[])
          WITH ORDINALITY AS v(id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, value_amount,
                               currency, customer_id, subject_ref, order_group, counts_as_cash, attribution_eligible,
                               is_first_payment, n)
          ORDER BY v.n`)
      }

      const insertOutbox = (rows: ReadonlyArray<NewOutboxRow>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO outbox (id, profile_id, topic, payload)
          SELECT * FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.profileId)}::uuid[],
                               ${rows.map((r) => r.topic)}::text[], ${rows.map((r) => JSON.stringify(r.payload))}::jsonb[])`)

      const lockEvent = (profileId: string, idempotencyKey: string) =>
        firstLocked(sql`
          SELECT id, retracted_at IS NOT NULL AS retracted, customer_id FROM outcome_events
          WHERE profile_id = ${profileId} AND idempotency_key = ${idempotencyKey}
          FOR UPDATE`)

      const hasExport = (eventId: string) =>
        Effect.map(
          sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM conversion_exports WHERE outcome_event_id = ${eventId}) AS present`,
          (rows) => rows[0]?.present === true
        )

      const hasConversationLead = (eventId: string) =>
        Effect.map(
          sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM conversation_leads WHERE outcome_event_id = ${eventId}) AS present`,
          (rows) => rows[0]?.present === true
        )

      const deleteConversions = (eventId: string) =>
        Effect.gen(function*() {
          const credits = yield* sql<{ count: number }>`
            SELECT count(*)::int AS count FROM attribution_credits a
            JOIN conversions c ON c.id = a.conversion_id WHERE c.outcome_event_id = ${eventId}`
          // Credit rows go with their conversion (ON DELETE CASCADE).
          const deleted = yield* sql<{ customer_id: string | null }>`
            DELETE FROM conversions WHERE outcome_event_id = ${eventId} RETURNING customer_id::text AS customer_id`
          const customerIds = deleted.flatMap((row) => (row.customer_id === null ? [] : [row.customer_id]))
          return { conversions: deleted.length, credits: credits[0]?.count ?? 0, customerIds }
        })

      const tombstone = (eventId: string, reason: string) =>
        Effect.asVoid(sql`
          UPDATE outcome_events
          SET retracted_at = now(), retraction_reason = ${reason}, value_amount = NULL, currency = NULL,
              subject_ref = NULL, order_group = NULL, customer_id = NULL, action_source = NULL, click_ids = '{}'::jsonb
          WHERE id = ${eventId}`)


      const listConversions = (
        profileId: string,
        filters: ConversionFilters,
        limit: number,
        after: Option.Option<ConversionKeyset>
      ) => {
        const clauses = [sql`c.profile_id = ${profileId}`]
        if (filters.customerKey !== undefined) clauses.push(sql`cu.customer_key = ${filters.customerKey}`)
        if (filters.conversionKey !== undefined) clauses.push(sql`c.conversion_key = ${filters.conversionKey}`)
        if (filters.start !== undefined) clauses.push(sql`c.occurred_at >= ${filters.start}::timestamptz`)
        if (filters.end !== undefined) {
          clauses.push(
            filters.end.inclusive
              ? sql`c.occurred_at <= ${filters.end.at}::timestamptz`
              : sql`c.occurred_at < ${filters.end.at}::timestamptz`
          )
        }
        if (Option.isSome(after)) {
          clauses.push(sql`(c.occurred_at, c.id) < (${after.value.occurredAt}::timestamptz, ${after.value.id}::uuid)`)
        }
        return conversionRows(sql`
          SELECT c.outcome_event_id, c.id AS conversion_id, c.conversion_key,
                 ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at,
                 trim_scale(c.value_amount)::text AS value_amount, c.currency, cu.customer_key, c.is_first_payment
          FROM conversions c LEFT JOIN customers cu ON cu.id = c.customer_id
          WHERE ${sql.and(clauses)}
          ORDER BY c.occurred_at DESC, c.id DESC
          LIMIT ${limit + 1}`)
      }

      const firstPaymentFacts = decodeRows(FirstPaymentFacts)
      const recomputeFirstPayments = (customerIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (customerIds.length === 0) return 0
          const ids = [...new Set(customerIds)]
          yield* lockCustomers(sql, ids)
          // One index probe per customer: OFFSET 0 keeps the planner from flattening the LATERAL
          // subquery into a join, which it may plan as a scan per customer while statistics are stale.
          const rows = yield* firstPaymentFacts(sql`
            SELECT c.id, c.customer_id, ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at,
                   ${isoTimestamp(sql, "c.created_at")} AS created_at, c.subject_ref, c.order_group, c.counts_as_cash, c.installment,
                   c.is_first_payment
            FROM unnest(${ids}::uuid[]) AS q(id)
            CROSS JOIN LATERAL (SELECT * FROM conversions x WHERE x.customer_id = q.id OFFSET 0) c`)
          const { nowFalse, nowNull, nowTrue } = changedFirstPaymentFlags(rows)
          // Unprepared, planned for these ids each time, like `lockCustomers` (decision 0047).
          if (nowTrue.length > 0) yield* sql`UPDATE conversions SET is_first_payment = true WHERE id = ANY(${nowTrue}::uuid[])`.unprepared
          if (nowFalse.length > 0) yield* sql`UPDATE conversions SET is_first_payment = false WHERE id = ANY(${nowFalse}::uuid[])`.unprepared
          if (nowNull.length > 0) yield* sql`UPDATE conversions SET is_first_payment = NULL WHERE id = ANY(${nowNull}::uuid[])`.unprepared
          return nowTrue.length + nowFalse.length + nowNull.length
        }).pipe(Effect.withSpan("Events.recomputeFirstPayments"))

      return {
        profileFacts: (profileIds) => orDatabaseUnavailable(profileFacts(profileIds)),
        claimEvents: (events) => orDatabaseUnavailable(claimEvents(events)),
        findEvent: (profileId, key) =>
          orDatabaseUnavailable(
            Effect.map(findEvents([{ profileId, name: key }]), (found) => Option.fromNullishOr(found.get(profileScoped(profileId, key))))
          ),
        findEvents: (keys) => orDatabaseUnavailable(keys.length === 0 ? Effect.succeed(new Map()) : findEvents(keys)),
        customersByKey: (keys) => orDatabaseUnavailable(keys.length === 0 ? Effect.succeed(new Map()) : customersByKey(keys)),
        findCustomerByKey: (profileId, key) =>
          orDatabaseUnavailable(Effect.map(liveByKey(profileId, key), Option.map((row) => row.id))),
        customerByIdentifier: (profileId, kind, value) => orDatabaseUnavailable(customerByIdentifier(profileId, kind, value)),
        oldestHolders: (kind, values) => orDatabaseUnavailable(oldestHolders(kind, values)),
        lockIdentifierValues: (kind, values) => orDatabaseUnavailable(lockIdentifierValues(kind, values)),
        createKeylessCustomers: (customers) => orDatabaseUnavailable(createKeylessCustomers(customers)),
        customerKeys: (customerIds) => orDatabaseUnavailable(customerKeys(customerIds)),
        lockCustomers: (customerIds) => orDatabaseUnavailable(lockCustomers(sql, customerIds)),
        addIdentifiers: (identifiers) => orDatabaseUnavailable(addIdentifiers(identifiers)),
        proposeMerges: (identifiers) =>
          identifiers.length === 0
            ? Effect.void
            : orDatabaseUnavailable(Effect.asVoid(proposeMerges(sql, {
              identifiers: identifiers.map((i) => ({ profileId: i.profileId, kind: i.kind, value: i.value }))
            }))),
        bindVisitorTouches: (visitors) =>
          visitors.length === 0 ? Effect.void : orDatabaseUnavailable(Effect.asVoid(sql`
            WITH bound AS (
              UPDATE touches t SET customer_id = m.customer_id, join_method = 'anonymous_id'
              FROM (
                SELECT x.id, v.customer_id
                FROM unnest(${visitors.map((v) => v.profileId)}::uuid[], ${visitors.map((v) => v.anonymousId)}::text[],
                            ${visitors.map((v) => v.customerId)}::uuid[]) AS v(profile_id, anonymous_id, customer_id)
                CROSS JOIN LATERAL (SELECT id FROM touches
                                    WHERE profile_id = v.profile_id AND anonymous_id = v.anonymous_id AND customer_id IS NULL
                                    OFFSET 0) x
              ) m
              WHERE t.id = m.id AND t.customer_id IS NULL
              RETURNING t.customer_id
            )
            UPDATE conversions SET credited_at = NULL
            WHERE customer_id IN (SELECT DISTINCT customer_id FROM bound) AND credited_at IS NOT NULL`)),
        setEventCustomers: (pairs) => orDatabaseUnavailable(setEventCustomers(pairs)),
        definitionsFor: (names) => orDatabaseUnavailable(definitionsFor(names)),
        insertConversions: (conversions) => orDatabaseUnavailable(insertConversions(conversions)),
        recomputeFirstPayments: (customerIds) => orDatabaseUnavailable(recomputeFirstPayments(customerIds)),
        insertOutbox: (rows) => orDatabaseUnavailable(insertOutbox(rows)),
        lockEvent: (profileId, key) => orDatabaseUnavailable(lockEvent(profileId, key)),
        hasExport: (eventId) => orDatabaseUnavailable(hasExport(eventId)),
        hasConversationLead: (eventId) => orDatabaseUnavailable(hasConversationLead(eventId)),
        deleteConversions: (eventId) => orDatabaseUnavailable(deleteConversions(eventId)),
        tombstone: (eventId, reason) => orDatabaseUnavailable(tombstone(eventId, reason)),
        queueReplay: (profileId, reason) => Effect.asVoid(replays.enqueue(profileId, reason)),
        listConversions: (profileId, filters, limit, after) =>
          orDatabaseUnavailable(listConversions(profileId, filters, limit, after)),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect))),
        markCredited: (conversionId) =>
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions SET credited_at = now() WHERE id = ${conversionId} AND credited_at IS NULL`)),
        settleCredited: (ids) =>
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions c SET
              credited_at = COALESCE(c.credited_at, now()),
              counts_as_cash = x.counts_as_cash,
              attribution_eligible = x.attribution_eligible
            FROM (
              SELECT c2.id, COALESCE(d.counts_as_cash, c2.counts_as_cash) AS counts_as_cash,
                     COALESCE(d.attribution_eligible, c2.attribution_eligible) AS attribution_eligible
              FROM conversions c2 LEFT JOIN conversion_definitions d ON d.id = c2.definition_id
              WHERE c2.id = ANY(${ids}::uuid[])
            ) x
            WHERE c.id = x.id
              AND (c.credited_at IS NULL OR c.counts_as_cash <> x.counts_as_cash OR c.attribution_eligible <> x.attribution_eligible)`)),
        setInstallment: (paymentId, installment) =>
          // A payment with no customer has nothing to repeat: first unless it is a later installment.
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions
            SET installment = ${installment},
                is_first_payment = CASE WHEN customer_id IS NULL THEN NOT ${installment}::boolean ELSE is_first_payment END
            WHERE id = ${paymentId}`)),
        setPayer: (paymentId, payerId) =>
          orDatabaseUnavailable(Effect.asVoid(sql`UPDATE conversions SET payer_customer_id = ${payerId} WHERE id = ${paymentId}`)),
        reassignPayment: (paymentId, payerId, customerId) =>
          // Left without a customer, it has nothing to repeat (the recompute only sees customers' payments).
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions
            SET payer_customer_id = ${payerId}, customer_id = ${customerId}, credited_at = NULL,
                is_first_payment = CASE WHEN ${customerId}::uuid IS NULL THEN NOT installment ELSE is_first_payment END
            WHERE id = ${paymentId}`)),
        setRefund: (paymentId, amount, reason) =>
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions SET refund_amount = ${amount}::numeric(20, 6), refunded_at = now(), refund_reason = ${reason}
            WHERE id = ${paymentId}`)),
        clearRefund: (paymentId) =>
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions SET refund_amount = NULL, refunded_at = NULL, refund_reason = NULL WHERE id = ${paymentId}`)),
        detachDefinitions: (profileId, definitionIds) =>
          orDatabaseUnavailable(Effect.asVoid(sql`
            UPDATE conversions SET definition_id = NULL, counts_as_cash = false, attribution_eligible = false
            WHERE profile_id = ${profileId} AND definition_id = ANY(${definitionIds}::uuid[])`))
      }
    })
  ).pipe(Layer.provide(ReplayQueue.layer))
}
