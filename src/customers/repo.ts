/** SQL of journeys, the customer and visitor lists, and erasure (decision 0038). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { CreditModel } from "../../schema/events.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import { liveCustomerByKey } from "./live-by-key.ts"
import { lockCustomers } from "./lock.ts"

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
  channel: Schema.NullOr(Schema.String),
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign_external_id: Schema.NullOr(Schema.String),
  campaign_name: Schema.NullOr(Schema.String),
  ad_set_external_id: Schema.NullOr(Schema.String),
  ad_set_name: Schema.NullOr(Schema.String),
  ad_external_id: Schema.NullOr(Schema.String),
  ad_name: Schema.NullOr(Schema.String),
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

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class CustomersRepo extends Context.Service<CustomersRepo, {
  /** A live conversion by its event id, its own id, or the event's idempotency key (in that order). */
  readonly findConversion: (profileId: string, ref: string, asUuid: string | null) => Repo<Option.Option<ConversionRef>>
  /** The live survivor of a customer (itself unless merged); None when it, or its survivor, is erased. */
  readonly survivorOf: (profileId: string, customerId: string) => Repo<Option.Option<string>>
  /** A customer and every customer merged into it, directly or not. */
  readonly mergedSet: (customerId: string) => Repo<ReadonlyArray<string>>
  /** The live customer a `customer_key` names (its survivor when merged); none when unknown or erased. */
  readonly customerByKey: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  /** The oldest customer holding an identifier (merged ones too, the caller follows them). */
  readonly customerByIdentifier: (profileId: string, type: string, value: string) => Repo<Option.Option<string>>
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
  /**
   * Erases the customers (a survivor and the customers merged into it): deletes their personal
   * data and unlinks their conversions, events and touches, which stay without a person.
   */
  readonly erase: (erasureId: string, customerIds: ReadonlyArray<string>) => Repo<ErasureCounts>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/CustomersRepo") {
  static readonly layer = Layer.effect(CustomersRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstConversion = decodeFirstRow(ConversionRef)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const storedRows = decodeRows(StoredRow)
      const firstFacts = decodeFirstRow(PersonFacts)
      const personConversionRows = decodeRows(PersonConversionRow)
      const identifierRows = decodeRows(Identifier)
      const customerRows = decodeRows(CustomerRow)
      const visitorRows = decodeRows(VisitorRow)
      const firstErasure = decodeFirstRow(ErasureRow)
      const iso = (column: string) => isoTimestamp(sql, column)

      const findConversion = (profileId: string, ref: string, asUuid: string | null) =>
        firstConversion(sql`
          SELECT e.id AS outcome_event_id, c.id AS conversion_id, c.conversion_key, ${iso("c.occurred_at")} AS occurred_at,
                 trim_scale(c.value_amount)::text AS value_amount, c.currency, c.customer_id, cu.customer_key
          FROM outcome_events e
          JOIN conversions c ON c.outcome_event_id = e.id
          LEFT JOIN customers cu ON cu.id = c.customer_id
          WHERE e.profile_id = ${profileId} AND e.retracted_at IS NULL
            AND (e.id = ${asUuid}::uuid OR c.id = ${asUuid}::uuid OR e.idempotency_key = ${ref})
          ORDER BY CASE WHEN e.id = ${asUuid}::uuid THEN 0 WHEN c.id = ${asUuid}::uuid THEN 1 ELSE 2 END
          LIMIT 1`)

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
          sql<{ id: string }>`
            WITH RECURSIVE merged(id, depth) AS (
              SELECT ${customerId}::uuid, 0
              UNION ALL
              SELECT c.id, merged.depth + 1 FROM customers c JOIN merged ON c.merged_into_id = merged.id WHERE merged.depth < 32
            )
            SELECT DISTINCT id::text AS id FROM merged`,
          (rows) => rows.map((row) => row.id)
        )

      const customerByKey = (profileId: string, customerKey: string) =>
        Effect.map(firstId(liveCustomerByKey(sql, profileId, customerKey)), Option.map((row) => row.id))

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
        Effect.map(
          firstId(sql`
            SELECT c.id FROM touches t JOIN customers c ON c.id = t.customer_id AND c.erased_at IS NULL
            WHERE t.profile_id = ${profileId} AND t.anonymous_id = ${anonymousId}
            ORDER BY t.occurred_at DESC, t.id DESC LIMIT 1`),
          Option.map((row) => row.id)
        )

      const journeyRows = (query: JourneyQuery) => {
        const conversion = Option.getOrNull(query.conversion)
        const credit = conversion === null
          // A person's journey: a touch's credit summed over the conversions that credit it.
          ? sql`
            LEFT JOIN LATERAL (
              SELECT sum(a.credit_share)::text AS credit_share, coalesce(bool_or(a.is_credited), false) AS is_credited,
                     coalesce(bool_or(a.in_window), false) AS in_window
              FROM attribution_credits a WHERE a.touch_id = r.id AND a.model = ${query.model}
            ) cr ON r.kind <> 'outcome'`
          : sql`
            LEFT JOIN LATERAL (
              SELECT a.credit_share::text AS credit_share, a.is_credited, a.in_window
              FROM attribution_credits a
              WHERE a.conversion_id = ${conversion.id} AND a.model = ${query.model} AND a.touch_id = r.id
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
            WHERE t.profile_id = ${profileId} AND t.anonymous_id = v.anonymous_id
            ORDER BY t.occurred_at DESC, t.id DESC LIMIT 1
          ) last
          LEFT JOIN LATERAL (
            SELECT c.id, c.customer_key FROM touches t JOIN customers c ON c.id = t.customer_id AND c.erased_at IS NULL
            WHERE t.profile_id = ${profileId} AND t.anonymous_id = v.anonymous_id
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
          sql<{ id: string }>`
            INSERT INTO customer_erasures (id, profile_id, request_ref, customer_id, customer_key, reason, selector_digest)
            SELECT ${row.id}, ${row.profileId}, ${row.requestRef}, c.id, c.customer_key, ${row.reason}, ${row.selectorDigest}
            FROM customers c WHERE c.id = ${row.customerId}
            ON CONFLICT (profile_id, request_ref) DO NOTHING
            RETURNING id`,
          (rows) => rows.length === 1
        )

      const count = (rows: ReadonlyArray<unknown>) => rows.length

      const erase = (erasureId: string, ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* lockCustomers(sql, ids)
          // A payment this person was assigned as payer of goes back to its event's customer.
          yield* sql`
            UPDATE conversions c SET payer_customer_id = NULL, customer_id = e.customer_id, credited_at = NULL
            FROM outcome_events e
            WHERE e.id = c.outcome_event_id AND c.payer_customer_id = ANY(${ids}::uuid[])
              AND (e.customer_id IS NULL OR NOT e.customer_id = ANY(${ids}::uuid[]))`
          // Conversions stay, without a person; their credit rows and first-payment flags stand as recorded.
          const conversions = count(yield* sql`
            UPDATE conversions SET customer_id = NULL, payer_customer_id = NULL, subject_ref = NULL, order_group = NULL
            WHERE customer_id = ANY(${ids}::uuid[]) OR payer_customer_id = ANY(${ids}::uuid[])
            RETURNING id`)
          const events = count(yield* sql`
            UPDATE outcome_events SET customer_id = NULL, subject_ref = NULL, order_group = NULL, click_ids = '{}'::jsonb
            WHERE customer_id = ANY(${ids}::uuid[])
            RETURNING id`)
          // The person's browsers: every touch of theirs, and every other touch from the same anonymous ids.
          const touches = count(yield* sql`
            WITH browsers AS (
              SELECT DISTINCT anonymous_id, profile_id FROM touches
              WHERE customer_id = ANY(${ids}::uuid[]) AND anonymous_id IS NOT NULL
              UNION
              SELECT value, profile_id FROM customer_identifiers WHERE customer_id = ANY(${ids}::uuid[]) AND kind = 'anonymous_id'
            )
            UPDATE touches t
            SET customer_id = NULL, anonymous_id = NULL, session_id = NULL, click_id = NULL, url = NULL, city = NULL,
                payload = '{}'::jsonb
            WHERE t.customer_id = ANY(${ids}::uuid[])
               OR EXISTS (SELECT 1 FROM browsers b WHERE b.profile_id = t.profile_id AND b.anonymous_id = t.anonymous_id)
            RETURNING t.id`)
          const declared = count(yield* sql`DELETE FROM declared_sources WHERE customer_id = ANY(${ids}::uuid[]) RETURNING id`)
          const identifiers = count(yield* sql`DELETE FROM customer_identifiers WHERE customer_id = ANY(${ids}::uuid[]) RETURNING id`)
          // Inferred visitor links to the person go: they name the person's browsers.
          yield* sql`DELETE FROM identity_links WHERE customer_id = ANY(${ids}::uuid[])`
          // Merge proposals naming the person lose their evidence (identifier values) and leave the queue.
          yield* sql`
            UPDATE merge_proposals
            SET evidence = '[]'::jsonb,
                status = CASE WHEN status IN ('open', 'snoozed') THEN 'superseded' ELSE status END,
                decided_at = CASE WHEN status IN ('open', 'snoozed') THEN now() ELSE decided_at END
            WHERE customer_a = ANY(${ids}::uuid[]) OR customer_b = ANY(${ids}::uuid[])`
          // outcome.recorded rows, delivered or not (the replay answers them too): no customer key, no customer to open.
          yield* sql`
            UPDATE outbox
            SET payload = jsonb_set(jsonb_set(payload, '{data,customer_key}', 'null'::jsonb), '{delivery,customer_id}', 'null'::jsonb)
            WHERE payload->'delivery'->>'customer_id' = ANY(${ids}::text[])`
          yield* sql`
            UPDATE customers SET customer_key = NULL, first_name = NULL, last_name = NULL, erased_at = now()
            WHERE id = ANY(${ids}::uuid[])`
          const counts: ErasureCounts = { conversions, events, touches, identifiers, declared_sources: declared }
          yield* sql`
            UPDATE customer_erasures SET completed_at = now(), counts = ${JSON.stringify(counts)}::jsonb WHERE id = ${erasureId}`
          return counts
        })

      return {
        findConversion: (profileId, ref, asUuid) => orDatabaseUnavailable(findConversion(profileId, ref, asUuid)),
        survivorOf: (profileId, customerId) => orDatabaseUnavailable(survivorOf(profileId, customerId)),
        mergedSet: (customerId) => orDatabaseUnavailable(mergedSet(customerId)),
        customerByKey: (profileId, key) => orDatabaseUnavailable(customerByKey(profileId, key)),
        customerByIdentifier: (profileId, type, value) => orDatabaseUnavailable(customerByIdentifier(profileId, type, value)),
        customerByAnonymousId: (profileId, anonymousId) => orDatabaseUnavailable(customerByAnonymousId(profileId, anonymousId)),
        journeyRows: (query) => orDatabaseUnavailable(journeyRows(query)),
        personFacts: (customerId, ids) => orDatabaseUnavailable(personFacts(customerId, ids)),
        personConversions: (ids, limit) => orDatabaseUnavailable(personConversions(ids, limit)),
        identifiersOf: (ids) => orDatabaseUnavailable(identifiersOf(ids)),
        listCustomers: (profileId, after, limit) => orDatabaseUnavailable(listCustomers(profileId, after, limit)),
        listVisitors: (profileId, after, limit) => orDatabaseUnavailable(listVisitors(profileId, after, limit)),
        findErasure: (profileId, ref) => orDatabaseUnavailable(findErasure(profileId, ref)),
        erasureById: (profileId, id) => orDatabaseUnavailable(erasureById(profileId, id)),
        claimErasure: (row) => orDatabaseUnavailable(claimErasure(row)),
        erase: (erasureId, ids) => orDatabaseUnavailable(erase(erasureId, ids)),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
