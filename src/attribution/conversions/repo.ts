/**
 * SQL of server-side events, retractions and the conversions list (decision 0029); the owner of
 * `conversions` and `outcome_events` (DESIGN.md, "Table ownership"), with the statements merges,
 * erasure, link decisions and partner data run on them.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { DEFAULT_LOOKBACK_WINDOW_DAYS } from "../../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { compareText, type ProfileScoped, profileScoped } from "../../kernel/profile-scoped.ts"
import { conversionOfEvent } from "./probe.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, nullableColumn, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { changedFirstPaymentFlags, FirstPaymentFacts, type FlagChanges, type NewPayments, PaymentAnchor } from "./first-payments.ts"
import type { QueuedConversion } from "../queued-conversion.ts"

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
  profile_id: Schema.String,
  occurred_at: Schema.String,
  retracted: Schema.Boolean,
  customer_id: Schema.NullOr(Schema.String)
})
export type LockedEvent = typeof LockedEvent.Type

/** A fresh event's customer, by the event's whole key (its month included). */
export interface EventCustomer {
  readonly eventId: string
  readonly profileId: string
  readonly occurredAt: string
  readonly customerId: string
}

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

export interface NewConversion {
  readonly id: string
  readonly event: NewEvent
  readonly definition: Definition
  readonly customerId: string | null
  /** Computed before the insert (`firstPaymentsWithAdded`); a lone payment without a customer is a first one. */
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

/** A conversion whose lookback window holds a time, with what crediting needs. */
export const WindowConversion = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  customer_id: Schema.String,
  /** ISO text, exact: with the id and profile, the whole key. */
  occurred_at: Schema.String,
  /** Epoch milliseconds (floored), as the crediting engine reads it. */
  occurred_ms: Schema.Number,
  window_days: Schema.Int,
  eligible: Schema.Boolean
})
export type WindowConversion = typeof WindowConversion.Type

/** A customer and a time: a conversion of that customer whose window holds the time is affected. */
export interface CustomerTime {
  readonly customerId: string
  /** ISO 8601 with offset. */
  readonly at: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/**
 * Puts the conversions `chosen` selects (columns profile_id, id, occurred_at, created_at) in the
 * credit queue (decision 0152); answers how many it selected, queued already or not. A conversion
 * being credited right now has its queue row locked: the conflict waits for that crediting to end
 * (`DO UPDATE` locks the row it meets, even with nothing to set), then queues it again, so a change
 * made meanwhile is credited too. A queued one stays as it is. The rows are met in conversion id
 * order, the order a replay locks them in (`lockReplayTargets`): in the order `chosen` read them
 * (by customer, in time), a requeue could hold one row a replay waits for while it waited for
 * another the replay held, and PostgreSQL failed one of them as a deadlock
 * (test/api/credit-queue.test.ts).
 */
export const enqueueStatement = (sql: SqlClient, chosen: Statement.Fragment) =>
  sql`
    WITH chosen AS (${chosen}),
    queued AS (
      INSERT INTO credit_queue (profile_id, conversion_id, occurred_at, created_at)
      SELECT profile_id, id, occurred_at, created_at FROM chosen ORDER BY id
      ON CONFLICT (profile_id, conversion_id, occurred_at) DO UPDATE SET created_at = credit_queue.created_at WHERE false
    )
    SELECT count(*)::int AS n FROM chosen`

/**
 * A customer's conversions in its profile, through `conversions_customer` only: the profile is a
 * filter (decision 0154), or a plan kept from an empty month could walk the profile's conversions
 * by time instead (test/api/conversion-probe-plans.test.ts).
 */
export const customerConversions = (sql: SqlClient, profileId: string, customerId: string) =>
  sql`
    SELECT profile_id, id, occurred_at, created_at FROM conversions
    WHERE customer_id = ${customerId}::uuid AND profile_id IS NOT DISTINCT FROM ${profileId}::uuid`

/**
 * Conversions of the profile whose customer and window (both ends inclusive, as the models read
 * it) hold a pair, with their definition's window and eligibility. Each pair is one probe of
 * `conversions_customer` from its time on (the `OFFSET 0` keeps it a probe per pair, and the profile
 * is a filter, as in `customerConversions`): as a join, a plan kept from an empty month hashed
 * the profile's every conversion, or walked them by time (test/api/conversion-probe-plans.test.ts).
 */
export const inWindowConversions = (sql: SqlClient, profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
  sql`
    SELECT DISTINCT c.id, c.profile_id, c.occurred_at, c.created_at, c.customer_id,
           COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS window_days,
           COALESCE(d.attribution_eligible, c.attribution_eligible) AS eligible
    FROM unnest(${pairs.map((pair) => pair.customerId)}::uuid[], ${pairs.map((pair) => pair.at)}::timestamptz[])
           AS p(customer_id, at)
    CROSS JOIN LATERAL (
      SELECT x.id, x.profile_id, x.occurred_at, x.created_at, x.customer_id, x.definition_id, x.attribution_eligible FROM conversions x
      WHERE x.customer_id = p.customer_id AND x.occurred_at >= p.at AND x.profile_id IS NOT DISTINCT FROM ${profileId}::uuid
      OFFSET 0) c
    LEFT JOIN conversion_definitions d ON d.id = c.definition_id AND d.profile_id = c.profile_id
    WHERE p.at >= c.occurred_at - make_interval(days => COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}))`

/** What `conversionsInWindow` answers, as a statement: test/api/conversion-probe-plans.test.ts checks its kept plan. */
export const conversionsInWindowStatement = (sql: SqlClient, profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
  sql`
    SELECT w.id::text AS id, w.profile_id::text AS profile_id, w.customer_id::text AS customer_id,
           ${isoTimestamp(sql, "w.occurred_at")} AS occurred_at,
           floor(extract(epoch FROM w.occurred_at) * 1000)::float8 AS occurred_ms, w.window_days, w.eligible
    FROM (${inWindowConversions(sql, profileId, pairs)}) w
    ORDER BY w.occurred_at, w.id`

/**
 * `paymentAnchorsOf`'s statement (first-payments.ts, `paymentAnchors`): per customer, every
 * conversion when a new payment sorts before its last cash payment, else only the first cash
 * payment of each stream (NULLs are one window partition: the untagged stream). The window keeps
 * the per-customer subquery from being flattened into a join, so each customer is an index probe
 * (test/api/conversion-probe-plans.test.ts checks its kept plan). Decision 0159.
 */
export const paymentAnchorsStatement = (sql: SqlClient, customers: ReadonlyArray<NewPayments>) => sql`
  SELECT c.id, c.customer_id, ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at,
         ${isoTimestamp(sql, "c.created_at")} AS created_at, c.subject_ref, c.order_group, c.counts_as_cash, c.installment,
         c.is_first_payment, ${isoTimestamp(sql, "c.latest")} AS latest
  FROM unnest(${customers.map((c) => c.customerId)}::uuid[], ${customers.map((c) => c.earliest)}::timestamptz[]) AS q(id, earliest)
  CROSS JOIN LATERAL (
    SELECT x.*, x.counts_as_cash AND NOT x.installment AS payment,
           max(x.occurred_at) FILTER (WHERE x.counts_as_cash AND NOT x.installment) OVER () AS latest,
           row_number() OVER (
             PARTITION BY x.counts_as_cash AND NOT x.installment, x.subject_ref
             ORDER BY x.occurred_at, x.created_at, x.id) AS nth
    FROM conversions x
    WHERE x.customer_id = q.id) c
  WHERE c.latest IS NOT NULL AND (c.latest > q.earliest OR (c.payment AND c.nth = 1))`

/** The stored events of these keys (see `findEvents`), as a statement: test/api/conversion-probe-plans.test.ts checks its kept plan. */
export const findEventsStatement = (sql: SqlClient, keys: ReadonlyArray<ProfileScoped>) =>
  sql`
    SELECT e.profile_id, e.idempotency_key, e.id, e.request_hash, e.retracted_at IS NOT NULL AS retracted,
           c.id AS conversion_id
    FROM unnest(${keys.map((k) => k.profileId)}::uuid[], ${keys.map((k) => k.name)}::text[]) AS q(profile_id, idempotency_key)
    CROSS JOIN LATERAL (SELECT * FROM outcome_keys k
                        WHERE k.profile_id = q.profile_id AND k.idempotency_key = q.idempotency_key LIMIT 1) k
    -- The whole key names the event's month: the other months are never read.
    CROSS JOIN LATERAL (SELECT * FROM outcome_events x
                        WHERE x.id = k.outcome_event_id AND x.profile_id = k.profile_id AND x.occurred_at = k.occurred_at LIMIT 1) e
    LEFT JOIN LATERAL (SELECT id FROM conversions x
                       WHERE ${conversionOfEvent(sql, "x", { id: sql`e.id`, profile: sql`e.profile_id`, at: sql`e.occurred_at` })}
                       LIMIT 1) c ON true`

/**
 * An event's conversions: their credit rows counted, and the conversions deleted (see
 * `deleteConversions`), as statements: test/api/conversion-probe-plans.test.ts checks their kept plans.
 * By the event's whole key: its conversions are in its month.
 */
export const eventConversionsStatements = (sql: SqlClient, event: { readonly id: string; readonly profile_id: string; readonly occurred_at: string }) => {
  const ofEvent = conversionOfEvent(sql, "c", { id: event.id, profile: event.profile_id, at: sql`${event.occurred_at}::timestamptz` })
  return {
    credits: sql`
      SELECT count(*)::int AS count FROM conversions c
      -- Each conversion's rows by the credit key's leading column and the month, whatever the statistics.
      CROSS JOIN LATERAL (
        SELECT 1 FROM attribution_credits a
        WHERE a.conversion_id = c.id AND a.profile_id = c.profile_id AND a.converted_at = c.occurred_at OFFSET 0) a
      WHERE ${ofEvent}`,
    remove: sql`DELETE FROM conversions c WHERE ${ofEvent} RETURNING customer_id::text AS customer_id`
  }
}

/**
 * Takes a conversion out of the credit queue (see `markCredited`), as a statement:
 * test/api/queue-claim-plans.test.ts checks that it reads through the queue's primary key.
 */
export const markCreditedStatement = (sql: SqlClient, conversion: QueuedConversion) =>
  sql`
    DELETE FROM credit_queue
    WHERE profile_id = ${conversion.profile_id} AND conversion_id = ${conversion.id} AND occurred_at = ${conversion.occurred_at}::timestamptz
    RETURNING conversion_id`

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
   * What recording outcomes of these profiles needs before its transaction, in one statement:
   * each profile's facts (as `profileFacts`), and for each `(profile, event_name)` the definition
   * that makes it a conversion (the default one, else the oldest), by `profileScoped(profile, event_name)`.
   */
  readonly ingestFacts: (
    profileIds: ReadonlyArray<string>,
    names: ReadonlyArray<ProfileScoped>
  ) => Repo<{ readonly profiles: ReadonlyMap<string, ProfileFacts>; readonly definitions: ReadonlyMap<string, Definition> }>
  /**
   * What the first-payment rules need of the customers' stored conversions to flag new payments
   * (`paymentAnchors`): each stream's first payment, or the whole history of a customer whose new
   * payment is back-dated. The caller holds the customers' row locks (taken in an earlier statement
   * of its transaction, so this read sees every payment committed before it got them). For payments
   * in time order the rows grow with the customer's streams, not with their payments (decision 0159).
   */
  readonly paymentAnchorsOf: (customers: ReadonlyArray<NewPayments>) => Repo<ReadonlyArray<PaymentAnchor>>
  /**
   * One statement for what a batch of recorded outcomes writes here after their keys are claimed:
   * the events' customers, the new conversions (each with the first-payment flag it is to carry;
   * `created_at` follows the array's order, so arrival order breaks ties), and the stored
   * conversions whose flags change (`firstPaymentsWithAdded`).
   */
  readonly writeOutcomes: (writes: {
    readonly eventCustomers: ReadonlyArray<EventCustomer>
    readonly conversions: ReadonlyArray<NewConversion>
    readonly flagChanges: FlagChanges
  }) => Repo<void>
  /**
   * Recomputes `is_first_payment` of every conversion of the customers (the rules:
   * first-payments.ts) and writes the flags that changed; answers how many changed. Locks the
   * customer rows first (FOR UPDATE, in id order so concurrent callers never deadlock), so two
   * recomputes of one customer never interleave: run it inside the transaction that changed the
   * customers' payments (ingest, retraction, erasure, merge, a payment action) so it sees that
   * change. One read and at most three writes, however many customers.
   */
  readonly recomputeFirstPayments: (profileId: string, customerIds: ReadonlyArray<string>) => Repo<number>
  /** The customers' conversions are credited again by the attribution worker (put in `credit_queue`). */
  readonly recreditCustomers: (customerIds: ReadonlyArray<string>) => Repo<void>
  /** `recreditCustomers` for one customer of the profile (an accepted identity link); answers how many. */
  readonly recreditCustomer: (profileId: string, customerId: string) => Repo<number>
  /**
   * Queues every conversion of the profile whose customer and lookback window hold one of the
   * pairs (the worker credits them again). Answers how many.
   */
  readonly requeueConversions: (profileId: string, pairs: ReadonlyArray<CustomerTime>) => Repo<number>
  /** Read-only: the conversions `requeueConversions` would mark. */
  readonly conversionsInWindow: (profileId: string, pairs: ReadonlyArray<CustomerTime>) => Repo<ReadonlyArray<WindowConversion>>
  /** A merge: the merged customer's outcome events go to the survivor; answers their ids. */
  readonly moveEvents: (fromCustomerId: string, toCustomerId: string) => Repo<ReadonlyArray<string>>
  /** A merge: the merged customer's conversions, and those it was assigned as payer of, go to the survivor; answers their ids. */
  readonly moveConversions: (
    fromCustomerId: string,
    toCustomerId: string
  ) => Repo<{ readonly conversions: ReadonlyArray<string>; readonly payer: ReadonlyArray<string> }>
  /** A merge's undo: these events go back to the merged customer while the survivor still holds them. */
  readonly returnEvents: (eventIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) => Repo<void>
  /** A merge's undo: these conversions and payer assignments go back while the survivor still holds them. */
  readonly returnConversions: (
    conversionIds: ReadonlyArray<string>,
    payerConversionIds: ReadonlyArray<string>,
    fromCustomerId: string,
    toCustomerId: string
  ) => Repo<void>
  /**
   * Erasure: a payment these customers were assigned as payer of goes back to its event's
   * customer; then every conversion of theirs stays without a person (its credit rows and
   * first-payment flag stand as recorded). Answers how many conversions lost their person.
   */
  readonly forgetConversionsOf: (customerIds: ReadonlyArray<string>) => Repo<number>
  /** Erasure: the customers' outcome events stay without a person; answers how many. */
  readonly forgetEventsOf: (customerIds: ReadonlyArray<string>) => Repo<number>
  /** The event under a key, row-locked until the transaction ends. */
  readonly lockEvent: (profileId: string, idempotencyKey: string) => Repo<Option.Option<LockedEvent>>
  readonly hasExport: (eventId: string) => Repo<boolean>
  readonly hasConversationLead: (eventId: string) => Repo<boolean>
  /**
   * Deletes the event's conversions and their credit rows; answers both counts and the customers
   * the conversions belonged to (a payer assignment may have moved one away from the event's customer).
   */
  readonly deleteConversions: (
    event: LockedEvent
  ) => Repo<{ readonly conversions: number; readonly credits: number; readonly customerIds: ReadonlyArray<string> }>
  /** Marks the event retracted and drops what it carried beyond its name, time and key. */
  readonly tombstone: (event: LockedEvent, reason: string) => Repo<void>
  /** The profile's conversions, newest first, one more than `limit`. */
  readonly listConversions: (
    profileId: string,
    filters: ConversionFilters,
    limit: number,
    after: Option.Option<ConversionKeyset>
  ) => Repo<ReadonlyArray<ConversionRow>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
  /**
   * Marks a conversion credited (with no credit rows: one whose crediting fails; a replay tries it
   * again): its queue row out, by the queue's whole key.
   */
  readonly markCredited: (conversion: QueuedConversion) => Repo<void>
  /**
   * After crediting `ids`: takes out of the credit queue those whose `queued` is true (the queue
   * rows the crediting locked: a row queued since, by a change it may not have seen, stays) and
   * refreshes the cash and eligibility flags from their definitions; rows whose flags are already
   * right are not rewritten. Each id comes with its profile and time, the whole key of the monthly
   * partitions (decision 0137).
   */
  readonly settleCredited: (
    ids: ReadonlyArray<string>,
    profiles: ReadonlyArray<string>,
    times: ReadonlyArray<string>,
    queued: ReadonlyArray<boolean>
  ) => Repo<void>
  /** Marks a payment a later installment (or not); a payment with no customer is first unless it is one. */
  readonly setInstallment: (paymentId: string, installment: boolean) => Repo<void>
  /** Sets a payment's assigned payer only (the customer it belongs to stays). */
  readonly setPayer: (paymentId: string, payerId: string | null) => Repo<void>
  /**
   * Sets a payment's assigned payer and the customer it now belongs to, and queues it so that
   * the worker credits it again (its credit rows are deleted by the caller).
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
      const facts = decodeRows(ProfileFacts)
      const storedEvents = decodeRows(StoredEvent)
      const factsRow = decodeFirstRow(Schema.Struct({ profiles: Schema.Array(ProfileFacts), definitions: Schema.Array(Definition) }))
      const firstLocked = decodeFirstRow(LockedEvent)
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const windowRows = decodeRows(WindowConversion)
      const claimedRows = decodeRows(Schema.Struct({ id: Schema.String, occurred_at: Schema.String }))
      const conversionRows = decodeRows(ConversionRow)
      const firstN = decodeFirstRow(Schema.Struct({ n: Schema.Int }))
      const firstPresent = decodeFirstRow(Schema.Struct({ present: Schema.Boolean }))
      const firstCount = decodeFirstRow(Schema.Struct({ count: Schema.Number }))
      const deletedRows = decodeRows(Schema.Struct({ customer_id: Schema.NullOr(Schema.String) }))

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
            WITH v AS (SELECT * FROM unnest(
              ${column((e) => e.id)}::uuid[], ${column((e) => e.profileId)}::uuid[], ${column((e) => e.idempotencyKey)}::text[],
              ${column((e) => e.requestHash)}::text[], ${column((e) => e.source)}::text[], ${column((e) => e.eventName)}::text[],
              ${column((e) => e.occurredAt)}::timestamptz[], ${nullableColumn(column((e) => e.valueAmount))}::numeric(20, 6)[],
              ${nullableColumn(column((e) => e.currency))}::text[], ${nullableColumn(column((e) => e.subjectRef))}::text[],
              ${nullableColumn(column((e) => e.orderGroup))}::text[], ${nullableColumn(column((e) => e.actionSource))}::text[], ${column((e) => JSON.stringify(e.clickIds))}::jsonb[])
            WITH ORDINALITY AS v(id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at, value_amount,
                                 currency, subject_ref, order_group, action_source, click_ids, n)),
            -- The keys first, in the batch's order: a key stored already, or taken earlier in the
            -- batch, claims nothing, and its event is not inserted (outcome_keys holds keys across months).
            keyed AS (
              INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
              SELECT v.profile_id, v.idempotency_key, v.id, v.occurred_at FROM v ORDER BY v.n
              ON CONFLICT DO NOTHING
              RETURNING outcome_event_id)
            INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at,
                                        value_amount, currency, subject_ref, order_group, action_source, click_ids)
            SELECT v.id, v.profile_id, v.idempotency_key, v.request_hash, v.source, v.event_name, v.occurred_at, v.value_amount,
                   v.currency, v.subject_ref, v.order_group, v.action_source, v.click_ids
            FROM v WHERE v.id IN (SELECT outcome_event_id FROM keyed)
            ORDER BY v.n
            RETURNING id, ${isoTimestamp(sql, "occurred_at")} AS occurred_at`),
          (rows) => new Map(rows.map((row) => [row.id, row.occurred_at] as const))
        )
      }

      // Batch lookups are one LATERAL subquery per key, with LIMIT (the keys are unique): the
      // planner cannot flatten it into a join, so every key is an index probe even while a table's
      // statistics are stale (a fresh table looks empty, and a join plan then scans it per key).
      // No keys (every outcome of a recorder batch claimed its own): no round trip.
      const findEvents = (keys: ReadonlyArray<ProfileScoped>) =>
        keys.length === 0 ? Effect.succeed(new Map<string, StoredEvent>()) : Effect.map(
          storedEvents(findEventsStatement(sql, keys)),
          (rows) => new Map(rows.map((row) => [profileScoped(row.profile_id, row.idempotency_key), row] as const))
        )

      const ingestFacts = (profileIds: ReadonlyArray<string>, names: ReadonlyArray<ProfileScoped>) =>
        Effect.map(
          factsRow(sql`
            SELECT
              (SELECT coalesce(json_agg(json_build_object(
                        'id', p.id, 'currency', p.currency, 'privacy_mode', p.privacy_mode,
                        'is_healthcare_agency', w.is_healthcare_agency, 'provisioned_by_app_id', p.provisioned_by_app_id)), '[]'::json)
               FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
               WHERE p.id = ANY(${[...new Set(profileIds)]}::uuid[])) AS profiles,
              (SELECT coalesce(json_agg(json_build_object(
                        'profile_id', d.profile_id, 'event_name', d.event_name, 'id', d.id, 'conversion_key', d.conversion_key,
                        'counts_as_cash', d.counts_as_cash, 'attribution_eligible', d.attribution_eligible)), '[]'::json)
               FROM (SELECT DISTINCT ON (q.profile_id, q.event_name) q.profile_id, q.event_name,
                            d.id, d.conversion_key, d.counts_as_cash, d.attribution_eligible
                     FROM unnest(${names.map((n) => n.profileId)}::uuid[], ${names.map((n) => n.name)}::text[]) AS q(profile_id, event_name)
                     JOIN conversion_definitions d ON d.profile_id = q.profile_id AND d.kind = 'event' AND q.event_name = ANY (d.event_names)
                     ORDER BY q.profile_id, q.event_name, d.is_default DESC, d.created_at, d.id) d) AS definitions`),
          (row) => ({
            profiles: new Map(Option.match(row, { onNone: () => [], onSome: (r) => r.profiles }).map((p) => [p.id, p] as const)),
            definitions: new Map(
              Option.match(row, { onNone: () => [], onSome: (r) => r.definitions }).map((d) => [profileScoped(d.profile_id, d.event_name), d] as const)
            )
          })
        )

      const paymentAnchorsOf = (customers: ReadonlyArray<NewPayments>) =>
        customers.length === 0 ? Effect.succeed([]) : paymentAnchorRows(paymentAnchorsStatement(sql, customers))

      // One statement, so one round trip: each part is a data-modifying CTE (none touches a row
      // another one does). Unprepared, planned for its ids each time (decision 0047): a generic plan
      // of the updates by id list stayed a sequential scan once picked on a small table.
      const writeOutcomes = (writes: {
        readonly eventCustomers: ReadonlyArray<EventCustomer>
        readonly conversions: ReadonlyArray<NewConversion>
        readonly flagChanges: FlagChanges
      }) => {
        const { conversions, eventCustomers, flagChanges } = writes
        const parts: Array<Statement.Fragment> = []
        if (eventCustomers.length > 0) {
          parts.push(sql`event_customers AS (
            UPDATE outcome_events o SET customer_id = v.customer_id
            FROM unnest(${eventCustomers.map((p) => p.eventId)}::uuid[], ${eventCustomers.map((p) => p.profileId)}::uuid[],
                        ${eventCustomers.map((p) => p.occurredAt)}::timestamptz[], ${eventCustomers.map((p) => p.customerId)}::uuid[])
              AS v(id, profile_id, occurred_at, customer_id)
            -- The whole key (decisions 0137, 0146): by id alone, a plan without statistics scans every
            -- outcome; the month prunes the other partitions.
            WHERE o.id = v.id AND o.profile_id = v.profile_id AND o.occurred_at = v.occurred_at)`)
        }
        if (conversions.length > 0) {
          const column = <A>(pick: (conversion: NewConversion) => A) => conversions.map(pick)
          // clock_timestamp() per row, a microsecond apart: the batch's conversions keep their
          // arrival order in created_at, as the first-payment flags computed before the insert assume.
          parts.push(sql`added AS (
            INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at,
                                     value_amount, currency, customer_id, subject_ref, order_group, counts_as_cash,
                                     attribution_eligible, is_first_payment, created_at)
            SELECT v.id, v.profile_id, v.outcome_event_id, v.definition_id, v.conversion_key, v.occurred_at, v.value_amount,
                   v.currency, v.customer_id, v.subject_ref, v.order_group, v.counts_as_cash, v.attribution_eligible,
                   v.is_first_payment, clock_timestamp() + make_interval(secs => (v.n - 1) / 1000000.0)
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
            ORDER BY v.n)`)
        }
        const flags = [["now_true", "true", flagChanges.nowTrue], ["now_false", "false", flagChanges.nowFalse], ["now_null", "NULL", flagChanges.nowNull]] as const
        // The stored conversions whose flags change are the batch's customers' (so of the batch's
        // profiles): the profile names the whole key (decision 0137).
        const profileIds = [...new Set(conversions.map((conversion) => conversion.event.profileId))]
        for (const [name, value, ids] of flags) {
          if (ids.length > 0) {
            parts.push(sql`${sql.literal(name)} AS (
              UPDATE conversions SET is_first_payment = ${sql.literal(value)}
              WHERE id = ANY(${ids}::uuid[]) AND profile_id = ANY(${profileIds}::uuid[]))`)
          }
        }
        return parts.length === 0 ? Effect.void : Effect.asVoid(sql`WITH ${sql.join(", ", false)(parts)} SELECT 1`.unprepared)
      }

      const lockEvent = (profileId: string, idempotencyKey: string) =>
        firstLocked(sql`
          SELECT e.id, e.profile_id, ${isoTimestamp(sql, "e.occurred_at")} AS occurred_at, e.retracted_at IS NOT NULL AS retracted,
                 e.customer_id
          FROM outcome_keys k
          JOIN outcome_events e ON e.id = k.outcome_event_id AND e.profile_id = k.profile_id AND e.occurred_at = k.occurred_at
          WHERE k.profile_id = ${profileId} AND k.idempotency_key = ${idempotencyKey}
          FOR UPDATE OF e`)

      const hasExport = (eventId: string) =>
        Effect.map(
          firstPresent(sql`SELECT EXISTS (SELECT 1 FROM conversion_exports WHERE outcome_event_id = ${eventId}) AS present`),
          (row) => Option.isSome(row) && row.value.present
        )

      const hasConversationLead = (eventId: string) =>
        Effect.map(
          firstPresent(sql`SELECT EXISTS (SELECT 1 FROM conversation_leads WHERE outcome_event_id = ${eventId}) AS present`),
          (row) => Option.isSome(row) && row.value.present
        )

      const deleteConversions = (event: LockedEvent) =>
        Effect.gen(function*() {
          const statements = eventConversionsStatements(sql, event)
          const credits = yield* firstCount(statements.credits)
          // Credit rows go with their conversion (ON DELETE CASCADE).
          const deleted = yield* deletedRows(statements.remove)
          const customerIds = deleted.flatMap((row) => (row.customer_id === null ? [] : [row.customer_id]))
          return { conversions: deleted.length, credits: Option.match(credits, { onNone: () => 0, onSome: (row) => row.count }), customerIds }
        })

      const tombstone = (event: LockedEvent, reason: string) =>
        Effect.asVoid(sql`
          UPDATE outcome_events
          SET retracted_at = now(), retraction_reason = ${reason}, value_amount = NULL, currency = NULL,
              subject_ref = NULL, order_group = NULL, customer_id = NULL, action_source = NULL, click_ids = '{}'::jsonb
          WHERE id = ${event.id} AND profile_id = ${event.profile_id} AND occurred_at = ${event.occurred_at}::timestamptz`)


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

      const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

      const enqueue = (chosen: Statement.Fragment) =>
        Effect.map(firstN(enqueueStatement(sql, chosen)), Option.match({ onNone: () => 0, onSome: (row) => row.n }))

      const recreditCustomers = (customerIds: ReadonlyArray<string>) =>
        customerIds.length === 0 ? Effect.void : Effect.asVoid(enqueue(sql`
          SELECT profile_id, id, occurred_at, created_at FROM conversions WHERE customer_id = ANY(${customerIds}::uuid[])`))

      const recreditCustomer = (profileId: string, customerId: string) => enqueue(customerConversions(sql, profileId, customerId))

      const requeueConversions = (profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
        pairs.length === 0
          ? Effect.succeed(0)
          : enqueue(inWindowConversions(sql, profileId, pairs))

      const conversionsInWindow = (profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
        pairs.length === 0
          ? Effect.succeed<ReadonlyArray<WindowConversion>>([])
          : windowRows(conversionsInWindowStatement(sql, profileId, pairs))

      const moveEvents = (m: string, s: string) =>
        Effect.map(
          idRows(sql`UPDATE outcome_events SET customer_id = ${s} WHERE customer_id = ${m} RETURNING id::text AS id`),
          ids
        )

      const moveConversions = (m: string, s: string) =>
        Effect.gen(function*() {
          const conversions = ids(yield* idRows(sql`
            UPDATE conversions SET customer_id = ${s} WHERE customer_id = ${m} RETURNING id::text AS id`))
          const payer = ids(yield* idRows(sql`
            UPDATE conversions SET payer_customer_id = ${s} WHERE payer_customer_id = ${m} RETURNING id::text AS id`))
          return { conversions, payer }
        })

      const returnEvents = (eventIds: ReadonlyArray<string>, s: string, m: string) =>
        Effect.asVoid(sql`UPDATE outcome_events SET customer_id = ${m} WHERE id = ANY(${eventIds}::uuid[]) AND customer_id = ${s}`)

      const returnConversions = (conversionIds: ReadonlyArray<string>, payerIds: ReadonlyArray<string>, s: string, m: string) =>
        Effect.gen(function*() {
          yield* sql`UPDATE conversions SET customer_id = ${m} WHERE id = ANY(${conversionIds}::uuid[]) AND customer_id = ${s}`
          yield* sql`
            UPDATE conversions SET payer_customer_id = ${m}
            WHERE id = ANY(${payerIds}::uuid[]) AND payer_customer_id = ${s}`
        })

      const forgetConversionsOf = (customerIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          // A payment this person was assigned as payer of goes back to its event's customer.
          // Credited again for its event's customer.
          yield* enqueue(sql`
            UPDATE conversions c SET payer_customer_id = NULL, customer_id = e.customer_id
            FROM outcome_events e
            WHERE e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at AND c.payer_customer_id = ANY(${customerIds}::uuid[])
              AND (e.customer_id IS NULL OR NOT e.customer_id = ANY(${customerIds}::uuid[]))
            RETURNING c.profile_id, c.id, c.occurred_at, c.created_at`)
          // Conversions stay, without a person; their credit rows and first-payment flags stand as recorded.
          const forgotten = yield* sql`
            UPDATE conversions SET customer_id = NULL, payer_customer_id = NULL, subject_ref = NULL, order_group = NULL
            WHERE customer_id = ANY(${customerIds}::uuid[]) OR payer_customer_id = ANY(${customerIds}::uuid[])
            RETURNING id`
          return forgotten.length
        })

      const forgetEventsOf = (customerIds: ReadonlyArray<string>) =>
        Effect.map(
          sql`
            UPDATE outcome_events SET customer_id = NULL, subject_ref = NULL, order_group = NULL, click_ids = '{}'::jsonb
            WHERE customer_id = ANY(${customerIds}::uuid[])
            RETURNING id`,
          (rows) => rows.length
        )

      const firstPaymentFacts = decodeRows(FirstPaymentFacts)
      const paymentAnchorRows = decodeRows(PaymentAnchor)
      const recomputeFirstPayments = (profileId: string, customerIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          if (customerIds.length === 0) return 0
          const ids = [...new Set(customerIds)]
          // The customers' rows are the lock every writer of their payments takes (identity's
          // `CustomersRepo.lockCustomers`, the same statement): read-only here, and the table
          // stays identity's. Id order, unprepared (decision 0047); the whole key (decision 0137).
          yield* sql`
            SELECT id FROM customers WHERE id = ANY(${[...ids].sort()}::uuid[]) AND profile_id = ${profileId}
            ORDER BY id FOR UPDATE`.unprepared
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
          const flag = (value: string, changed: ReadonlyArray<string>) =>
            changed.length === 0 ? Effect.void : Effect.asVoid(sql`
              UPDATE conversions SET is_first_payment = ${sql.literal(value)}
              WHERE id = ANY(${changed}::uuid[]) AND profile_id = ${profileId}`.unprepared)
          yield* flag("true", nowTrue)
          yield* flag("false", nowFalse)
          yield* flag("NULL", nowNull)
          return nowTrue.length + nowFalse.length + nowNull.length
        }).pipe(Effect.withSpan("Events.recomputeFirstPayments"))

      // By the primary key: by the id alone it read the whole queue.
      const markCredited = (conversion: QueuedConversion) =>
        Effect.asVoid(markCreditedStatement(sql, conversion))

      // By whole key (id, profile, time): an id and profile alone probe every month's partition.
      // Leaving the queue is a delete of narrow rows; the conversion itself is written only when a
      // flag changed (decision 0152).
      const settleCredited = (ids: ReadonlyArray<string>, profiles: ReadonlyArray<string>, times: ReadonlyArray<string>, queued: ReadonlyArray<boolean>) =>
        Effect.asVoid(sql`
          WITH settled AS (
            DELETE FROM credit_queue q
            USING unnest(${ids}::uuid[], ${profiles}::uuid[], ${times}::timestamptz[], ${queued}::boolean[]) AS k(id, profile_id, occurred_at, queued)
            WHERE k.queued AND q.profile_id = k.profile_id AND q.conversion_id = k.id AND q.occurred_at = k.occurred_at
          )
          UPDATE conversions c SET
            counts_as_cash = x.counts_as_cash,
            attribution_eligible = x.attribution_eligible
          FROM (
            SELECT c2.id, c2.profile_id, c2.occurred_at, COALESCE(d.counts_as_cash, c2.counts_as_cash) AS counts_as_cash,
                   COALESCE(d.attribution_eligible, c2.attribution_eligible) AS attribution_eligible
            FROM unnest(${ids}::uuid[], ${profiles}::uuid[], ${times}::timestamptz[]) AS k(id, profile_id, occurred_at)
            JOIN conversions c2 ON c2.id = k.id AND c2.profile_id = k.profile_id AND c2.occurred_at = k.occurred_at
            LEFT JOIN conversion_definitions d ON d.id = c2.definition_id AND d.profile_id = c2.profile_id
          ) x
          WHERE c.id = x.id AND c.profile_id = x.profile_id AND c.occurred_at = x.occurred_at
            AND (c.counts_as_cash <> x.counts_as_cash OR c.attribution_eligible <> x.attribution_eligible)`)

      // A payment with no customer has nothing to repeat: first unless it is a later installment.
      const setInstallment = (paymentId: string, installment: boolean) =>
        Effect.asVoid(sql`
          UPDATE conversions
          SET installment = ${installment},
              is_first_payment = CASE WHEN customer_id IS NULL THEN NOT ${installment}::boolean ELSE is_first_payment END
          WHERE id = ${paymentId}`)

      const setPayer = (paymentId: string, payerId: string | null) =>
        Effect.asVoid(sql`UPDATE conversions SET payer_customer_id = ${payerId} WHERE id = ${paymentId}`)

      // Left without a customer, it has nothing to repeat (the recompute only sees customers' payments).
      const reassignPayment = (paymentId: string, payerId: string | null, customerId: string | null) =>
        Effect.asVoid(enqueue(sql`
          UPDATE conversions
          SET payer_customer_id = ${payerId}, customer_id = ${customerId},
              is_first_payment = CASE WHEN ${customerId}::uuid IS NULL THEN NOT installment ELSE is_first_payment END
          WHERE id = ${paymentId}
          RETURNING profile_id, id, occurred_at, created_at`))

      const setRefund = (paymentId: string, amount: string | null, reason: string | null) =>
        Effect.asVoid(sql`
          UPDATE conversions SET refund_amount = ${amount}::numeric(20, 6), refunded_at = now(), refund_reason = ${reason}
          WHERE id = ${paymentId}`)

      const clearRefund = (paymentId: string) =>
        Effect.asVoid(sql`UPDATE conversions SET refund_amount = NULL, refunded_at = NULL, refund_reason = NULL WHERE id = ${paymentId}`)

      const detachDefinitions = (profileId: string, definitionIds: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE conversions SET definition_id = NULL, counts_as_cash = false, attribution_eligible = false
          WHERE profile_id = ${profileId} AND definition_id = ANY(${definitionIds}::uuid[])`)

      return {
        ...atDatabaseBoundary({
          profileFacts,
          claimEvents,
          findEvent: (profileId: string, key: string) =>
            Effect.map(findEvents([{ profileId, name: key }]), (found) => Option.fromNullishOr(found.get(profileScoped(profileId, key)))),
          findEvents: (keys: ReadonlyArray<ProfileScoped>) => keys.length === 0 ? Effect.succeed(new Map<string, StoredEvent>()) : findEvents(keys),
          ingestFacts,
          paymentAnchorsOf,
          writeOutcomes,
          recreditCustomers,
          recreditCustomer,
          requeueConversions,
          conversionsInWindow,
          moveEvents,
          moveConversions,
          returnEvents,
          returnConversions,
          forgetConversionsOf,
          forgetEventsOf,
          lockEvent,
          hasExport,
          hasConversationLead,
          deleteConversions,
          tombstone,
          listConversions,
          recomputeFirstPayments,
          markCredited,
          settleCredited,
          setInstallment,
          setPayer,
          reassignPayment,
          setRefund,
          clearRefund,
          detachDefinitions
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
