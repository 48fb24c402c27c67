/** SQL of server-side events, retractions and the conversions list (decision 0029). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { enqueueReplay } from "../attribution/replay-queue.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import { recomputeFirstPayments } from "./first-payments.ts"

export const ProfileFacts = Schema.Struct({
  currency: Schema.NullOr(Schema.String),
  privacy_mode: Schema.String,
  is_healthcare_agency: Schema.Boolean,
  provisioned_by_app_id: Schema.NullOr(Schema.String)
})
export type ProfileFacts = typeof ProfileFacts.Type

export const StoredEvent = Schema.Struct({
  id: Schema.String,
  request_hash: Schema.String,
  retracted: Schema.Boolean,
  conversion_id: Schema.NullOr(Schema.String)
})
export type StoredEvent = typeof StoredEvent.Type

export const Definition = Schema.Struct({
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

export class EventsRepo extends Context.Service<EventsRepo, {
  /** Currency, healthcare family and provisioning app of a profile. */
  readonly profileFacts: (profileId: string) => Repo<Option.Option<ProfileFacts>>
  /**
   * Claims `(profile, idempotency_key)` with the new event: its stored `occurred_at` (ISO UTC)
   * when this call inserted it, None when the key was already taken (the insert waits for a
   * concurrent claimer to finish first).
   */
  readonly claimEvent: (event: NewEvent) => Repo<Option.Option<string>>
  /** The event stored under a key, with its conversion. */
  readonly findEvent: (profileId: string, idempotencyKey: string) => Repo<Option.Option<StoredEvent>>
  /** The live customer with this `customer_key`, created if there is none (race-safe). */
  readonly customerByKey: (profileId: string, customerKey: string) => Repo<string>
  /** The live customer with this `customer_key`, if there is one (never creates). */
  readonly findCustomerByKey: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  /** The oldest live customer holding this identifier. */
  readonly customerByIdentifier: (profileId: string, kind: "email" | "phone", value: string) => Repo<Option.Option<string>>
  /** A customer known only by identifiers (no `customer_key`). */
  readonly createKeylessCustomer: (profileId: string) => Repo<string>
  readonly customerKey: (customerId: string) => Repo<string | null>
  /** Row-locks the customer until the transaction ends (its identifiers and payments hold still). */
  readonly lockCustomer: (customerId: string) => Repo<void>
  /** Adds the identifier to the customer unless it already holds it. */
  readonly addIdentifier: (profileId: string, customerId: string, kind: "email" | "phone", value: string) => Repo<void>
  readonly setEventCustomer: (eventId: string, customerId: string) => Repo<void>
  /** The definition that makes `eventName` a conversion: the default one, else the oldest. */
  readonly definitionFor: (profileId: string, eventName: string) => Repo<Option.Option<Definition>>
  readonly insertConversion: (conversion: NewConversion) => Repo<void>
  readonly recomputeFirstPayments: (customerId: string) => Repo<number>
  readonly insertOutbox: (id: string, profileId: string, topic: string, payload: unknown) => Repo<void>
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
}>()("svc/EventsRepo") {
  static readonly layer = Layer.effect(EventsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstFacts = decodeFirstRow(ProfileFacts)
      const firstEvent = decodeFirstRow(StoredEvent)
      const firstDefinition = decodeFirstRow(Definition)
      const firstLocked = decodeFirstRow(LockedEvent)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const claimed = decodeFirstRow(Schema.Struct({ occurred_at: Schema.String }))
      const conversionRows = decodeRows(ConversionRow)

      const profileFacts = (profileId: string) =>
        firstFacts(sql`
          SELECT p.currency, p.privacy_mode, w.is_healthcare_agency, p.provisioned_by_app_id
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
          WHERE p.id = ${profileId}`)

      const claimEvent = (event: NewEvent) =>
        Effect.map(
          claimed(sql`
            INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at,
                                        value_amount, currency, subject_ref, order_group, action_source, click_ids)
            VALUES (${event.id}, ${event.profileId}, ${event.idempotencyKey}, ${event.requestHash}, ${event.source},
                    ${event.eventName}, ${event.occurredAt}::timestamptz, ${event.valueAmount}::numeric(20, 6),
                    ${event.currency}, ${event.subjectRef}, ${event.orderGroup}, ${event.actionSource},
                    ${JSON.stringify(event.clickIds)}::jsonb)
            ON CONFLICT (profile_id, idempotency_key) DO NOTHING
            RETURNING ${isoTimestamp(sql, "occurred_at")} AS occurred_at`),
          Option.map((row) => row.occurred_at)
        )

      const findEvent = (profileId: string, idempotencyKey: string) =>
        firstEvent(sql`
          SELECT e.id, e.request_hash, e.retracted_at IS NOT NULL AS retracted, c.id AS conversion_id
          FROM outcome_events e LEFT JOIN conversions c ON c.outcome_event_id = e.id
          WHERE e.profile_id = ${profileId} AND e.idempotency_key = ${idempotencyKey}`)

      const liveByKey = (profileId: string, customerKey: string) =>
        firstId(sql`
          SELECT id FROM customers
          WHERE profile_id = ${profileId} AND customer_key = ${customerKey}
            AND merged_into_id IS NULL AND erased_at IS NULL`)

      // INSERT ... ON CONFLICT DO NOTHING on the partial unique index, then read: a concurrent
      // creator makes the insert wait for its commit, so the read finds its row. A row merged or
      // erased between the two statements makes the loop insert again.
      const customerByKey = (profileId: string, customerKey: string) =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 3; attempt++) {
            yield* sql`
              INSERT INTO customers (id, profile_id, customer_key) VALUES (${crypto.randomUUID()}, ${profileId}, ${customerKey})
              ON CONFLICT (profile_id, customer_key) WHERE customer_key IS NOT NULL AND merged_into_id IS NULL AND erased_at IS NULL
              DO NOTHING`
            const found = yield* liveByKey(profileId, customerKey)
            if (Option.isSome(found)) return found.value.id
          }
          return yield* Effect.die("customer upsert did not settle after three attempts")
        })

      const customerByIdentifier = (profileId: string, kind: "email" | "phone", value: string) =>
        Effect.map(
          firstId(sql`
            SELECT c.id FROM customer_identifiers i
            JOIN customers c ON c.id = i.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
            WHERE i.profile_id = ${profileId} AND i.kind = ${kind} AND i.value = ${value} AND i.removed_at IS NULL
            ORDER BY c.created_at, c.id LIMIT 1`),
          Option.map((row) => row.id)
        )

      const createKeylessCustomer = (profileId: string) => {
        const id = crypto.randomUUID()
        return Effect.as(sql`INSERT INTO customers (id, profile_id) VALUES (${id}, ${profileId})`, id)
      }

      const customerKey = (customerId: string) =>
        Effect.map(
          sql<{ customer_key: string | null }>`SELECT customer_key FROM customers WHERE id = ${customerId}`,
          (rows) => rows[0]?.customer_key ?? null
        )

      const lockCustomer = (customerId: string) =>
        Effect.asVoid(sql`SELECT id FROM customers WHERE id = ${customerId} FOR UPDATE`)

      const addIdentifier = (profileId: string, customerId: string, kind: "email" | "phone", value: string) =>
        Effect.asVoid(sql`
          INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
          SELECT ${crypto.randomUUID()}, ${profileId}, ${customerId}, ${kind}, ${value}
          WHERE NOT EXISTS (SELECT 1 FROM customer_identifiers
                            WHERE customer_id = ${customerId} AND kind = ${kind} AND value = ${value} AND removed_at IS NULL)`)

      const setEventCustomer = (eventId: string, customerId: string) =>
        Effect.asVoid(sql`UPDATE outcome_events SET customer_id = ${customerId} WHERE id = ${eventId}`)

      const definitionFor = (profileId: string, eventName: string) =>
        firstDefinition(sql`
          SELECT id, conversion_key, counts_as_cash, attribution_eligible FROM conversion_definitions
          WHERE profile_id = ${profileId} AND kind = 'event' AND ${eventName} = ANY (event_names)
          ORDER BY is_default DESC, created_at, id LIMIT 1`)

      const insertConversion = (conversion: NewConversion) =>
        Effect.asVoid(sql`
          INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at,
                                   value_amount, currency, customer_id, subject_ref, order_group, counts_as_cash,
                                   attribution_eligible, is_first_payment)
          VALUES (${conversion.id}, ${conversion.event.profileId}, ${conversion.event.id}, ${conversion.definition.id},
                  ${conversion.definition.conversion_key}, ${conversion.event.occurredAt}::timestamptz,
                  ${conversion.event.valueAmount}::numeric(20, 6), ${conversion.event.currency}, ${conversion.customerId},
                  ${conversion.event.subjectRef}, ${conversion.event.orderGroup}, ${conversion.definition.counts_as_cash},
                  ${conversion.definition.attribution_eligible}, ${conversion.isFirstPayment})`)

      const insertOutbox = (id: string, profileId: string, topic: string, payload: unknown) =>
        Effect.asVoid(sql`
          INSERT INTO outbox (id, profile_id, topic, payload)
          VALUES (${id}, ${profileId}, ${topic}, ${JSON.stringify(payload)}::jsonb)`)

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

      return {
        profileFacts: (profileId) => orDatabaseUnavailable(profileFacts(profileId)),
        claimEvent: (event) => orDatabaseUnavailable(claimEvent(event)),
        findEvent: (profileId, key) => orDatabaseUnavailable(findEvent(profileId, key)),
        customerByKey: (profileId, key) => orDatabaseUnavailable(customerByKey(profileId, key)),
        findCustomerByKey: (profileId, key) =>
          orDatabaseUnavailable(Effect.map(liveByKey(profileId, key), Option.map((row) => row.id))),
        customerByIdentifier: (profileId, kind, value) => orDatabaseUnavailable(customerByIdentifier(profileId, kind, value)),
        createKeylessCustomer: (profileId) => orDatabaseUnavailable(createKeylessCustomer(profileId)),
        customerKey: (customerId) => orDatabaseUnavailable(customerKey(customerId)),
        lockCustomer: (customerId) => orDatabaseUnavailable(lockCustomer(customerId)),
        addIdentifier: (profileId, customerId, kind, value) =>
          orDatabaseUnavailable(addIdentifier(profileId, customerId, kind, value)),
        setEventCustomer: (eventId, customerId) => orDatabaseUnavailable(setEventCustomer(eventId, customerId)),
        definitionFor: (profileId, eventName) => orDatabaseUnavailable(definitionFor(profileId, eventName)),
        insertConversion: (conversion) => orDatabaseUnavailable(insertConversion(conversion)),
        recomputeFirstPayments: (customerId) => Effect.provideService(recomputeFirstPayments(customerId), SqlClient, sql),
        insertOutbox: (id, profileId, topic, payload) => orDatabaseUnavailable(insertOutbox(id, profileId, topic, payload)),
        lockEvent: (profileId, key) => orDatabaseUnavailable(lockEvent(profileId, key)),
        hasExport: (eventId) => orDatabaseUnavailable(hasExport(eventId)),
        hasConversationLead: (eventId) => orDatabaseUnavailable(hasConversationLead(eventId)),
        deleteConversions: (eventId) => orDatabaseUnavailable(deleteConversions(eventId)),
        tombstone: (eventId, reason) => orDatabaseUnavailable(tombstone(eventId, reason)),
        queueReplay: (profileId, reason) => orDatabaseUnavailable(Effect.asVoid(enqueueReplay(sql, profileId, reason))),
        listConversions: (profileId, filters, limit, after) =>
          orDatabaseUnavailable(listConversions(profileId, filters, limit, after)),
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
