/**
 * SQL of payments: the list, the merchant's action history, linkage, whether the card-gateway
 * definition is there (decision 0032). What an action changes on the conversion, its credit and
 * its customers goes through attribution's and identity's services (src/ingestion/events/payments/service.ts).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../../../../schema/common.ts"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import type { CreditModel } from "../../../../schema/events.ts"
import type { PaymentStatus } from "../../../../schema/payments.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../../platform/database.ts"
import { isoTimestamp } from "../../../platform/sql-time.ts"
import { TouchColumns } from "../../../attribution/touches/columns.ts"

export const PaymentRow = Schema.Struct({
  payment_id: Schema.String,
  outcome_event_id: Schema.String,
  occurred_at: Schema.String,
  amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  is_first_payment: Schema.NullOr(Schema.Boolean),
  installment: Schema.Boolean,
  payer_customer_key: Schema.NullOr(Schema.String),
  refund_amount: Schema.NullOr(Schema.String),
  refunded_at: Schema.NullOr(Schema.String)
})
export type PaymentRow = typeof PaymentRow.Type

export const LinkageRow = Schema.Struct({
  ...PaymentRow.fields,
  credited: Schema.Boolean,
  has_customer: Schema.Boolean,
  eligible: Schema.Boolean,
  credited_touches: Schema.Int,
  touch_id: Schema.NullOr(Schema.String),
  touch_kind: Schema.NullOr(Schema.String),
  touch_at: Schema.NullOr(Schema.String),
  ...TouchColumns.fields,
  join_method: Schema.NullOr(Schema.Literals(["ctwa_referral", "click_id", "link_token", "anonymous_id"])),
  click_id_kind: Schema.NullOr(Schema.String),
  credit_share: Schema.NullOr(Schema.String)
})
export type LinkageRow = typeof LinkageRow.Type

/** Whose payment it is now, read without a lock (to lock the customers first, then the payment). */
const PaymentOwners = Schema.Struct({
  customer_id: Schema.NullOr(Schema.String),
  event_customer_id: Schema.NullOr(Schema.String)
})
export type PaymentOwners = typeof PaymentOwners.Type

/** A payment row-locked for an action. */
export const LockedPayment = Schema.Struct({
  id: Schema.String,
  outcome_event_id: Schema.String,
  /** Who the payment belongs to now: the payer when one is assigned, else the event's customer. */
  customer_id: Schema.NullOr(Schema.String),
  event_customer_id: Schema.NullOr(Schema.String),
  payer_customer_id: Schema.NullOr(Schema.String),
  payer_customer_key: Schema.NullOr(Schema.String),
  installment: Schema.Boolean,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  refunded: Schema.Boolean,
  refund_amount: Schema.NullOr(Schema.String),
  refund_reason: Schema.NullOr(Schema.String)
})
export type LockedPayment = typeof LockedPayment.Type

export interface PaymentFilters {
  /** The payment's own customer or its assigned payer. */
  readonly customerKey?: string
  /** Inclusive lower bound, ISO 8601 with offset. */
  readonly start?: string
  /** Exclusive for a date (its next midnight), inclusive for a date-time. */
  readonly end?: { readonly at: string; readonly inclusive: boolean }
  readonly status?: PaymentStatus
}

export interface PaymentKeyset {
  readonly occurredAt: string
  readonly id: string
}

export type PaymentAction =
  | "installment_marked"
  | "installment_unmarked"
  | "payer_assigned"
  | "payer_cleared"
  | "refund_recorded"
  | "refund_undone"

export interface NewPaymentAction {
  readonly profileId: string
  readonly paymentId: string
  readonly outcomeEventId: string
  readonly action: PaymentAction
  readonly actorKind: string
  readonly actorId: string | null
  readonly actorUserId: string | null
  readonly details: Record<string, unknown>
  readonly requestId: string | null
}

/** What the profile's definitions say about the event name `payment`. */
export type PaymentDefinitionState = "event_definition" | "other_definition" | "none"

export const CARDGW_EVENT_NAME = "payment"
export const CARDGW_CONVERSION_KEY = "cardgw_payment"
/** The built-in definition a connected store's first paid order creates (decision 0067). */
export const COMMERCE_CONVERSION_KEY = "commerce_payment"

/** A built-in cash definition listing `payment`: the card gateway's or the commerce store's. */
export interface BuiltinPaymentDefinition {
  readonly conversionKey: string
  readonly name: string
}
export const CARDGW_DEFINITION: BuiltinPaymentDefinition = { conversionKey: CARDGW_CONVERSION_KEY, name: "Card-gateway payment" }
export const COMMERCE_DEFINITION: BuiltinPaymentDefinition = { conversionKey: COMMERCE_CONVERSION_KEY, name: "Store payment" }

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class PaymentsRepo extends Context.Service<PaymentsRepo, {
  /** The profile's payments, newest first, one more than `limit`. */
  readonly list: (
    profileId: string,
    filters: PaymentFilters,
    limit: number,
    after: Option.Option<PaymentKeyset>
  ) => Repo<ReadonlyArray<PaymentRow>>
  readonly find: (profileId: string, paymentId: string) => Repo<Option.Option<PaymentRow>>
  readonly owners: (profileId: string, paymentId: string) => Repo<Option.Option<PaymentOwners>>
  readonly lock: (profileId: string, paymentId: string) => Repo<Option.Option<LockedPayment>>
  /** A live (not merged, not erased) customer of the profile by `customer_key`. */
  readonly liveCustomer: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  readonly insertAction: (action: NewPaymentAction) => Repo<string>
  /** Payments with their top credited touch under `model`, newest first, one more than `limit`. */
  readonly linkage: (
    profileId: string,
    filters: PaymentFilters,
    limit: number,
    after: Option.Option<PaymentKeyset>,
    model: CreditModel
  ) => Repo<ReadonlyArray<LinkageRow>>
  readonly paymentDefinition: (profileId: string) => Repo<PaymentDefinitionState>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/PaymentsRepo") {
  static readonly layer = Layer.effect(PaymentsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const paymentRows = decodeRows(PaymentRow)
      const firstPayment = decodeFirstRow(PaymentRow)
      const linkageRows = decodeRows(LinkageRow)
      const firstOwners = decodeFirstRow(PaymentOwners)
      const firstLocked = decodeFirstRow(LockedPayment)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const definitionKinds = decodeRows(Schema.Struct({ kind: Schema.String }))

      const paymentColumns = sql`
        c.id::text AS payment_id, c.outcome_event_id::text AS outcome_event_id,
        ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at,
        trim_scale(c.value_amount)::text AS amount, c.currency, ec.customer_key, c.is_first_payment, c.installment,
        pc.customer_key AS payer_customer_key, trim_scale(c.refund_amount)::text AS refund_amount,
        ${isoTimestamp(sql, "c.refunded_at")} AS refunded_at`

      const paymentJoins = sql`
        FROM conversions c
        JOIN outcome_events e ON e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at
        LEFT JOIN customers ec ON ec.id = e.customer_id
        LEFT JOIN customers pc ON pc.id = c.payer_customer_id`

      const where = (profileId: string, filters: PaymentFilters, after: Option.Option<PaymentKeyset>) => {
        const clauses = [sql`c.profile_id = ${profileId}`, sql`c.counts_as_cash`]
        if (filters.customerKey !== undefined) {
          clauses.push(sql`(ec.customer_key = ${filters.customerKey} OR pc.customer_key = ${filters.customerKey})`)
        }
        if (filters.start !== undefined) clauses.push(sql`c.occurred_at >= ${filters.start}::timestamptz`)
        if (filters.end !== undefined) {
          clauses.push(
            filters.end.inclusive
              ? sql`c.occurred_at <= ${filters.end.at}::timestamptz`
              : sql`c.occurred_at < ${filters.end.at}::timestamptz`
          )
        }
        if (filters.status === "paid") clauses.push(sql`c.refunded_at IS NULL`)
        if (filters.status === "refunded") clauses.push(sql`c.refunded_at IS NOT NULL`)
        if (Option.isSome(after)) {
          clauses.push(sql`(c.occurred_at, c.id) < (${after.value.occurredAt}::timestamptz, ${after.value.id}::uuid)`)
        }
        return sql.and(clauses)
      }

      const list = (profileId: string, filters: PaymentFilters, limit: number, after: Option.Option<PaymentKeyset>) =>
        paymentRows(sql`
          SELECT ${paymentColumns} ${paymentJoins}
          WHERE ${where(profileId, filters, after)}
          ORDER BY c.occurred_at DESC, c.id DESC
          LIMIT ${limit + 1}`)

      const find = (profileId: string, paymentId: string) =>
        isUuid(paymentId)
          ? firstPayment(sql`
              SELECT ${paymentColumns} ${paymentJoins}
              WHERE c.profile_id = ${profileId} AND c.id = ${paymentId.toLowerCase()} AND c.counts_as_cash`)
          : Effect.succeed(Option.none<PaymentRow>())

      const owners = (profileId: string, paymentId: string) =>
        isUuid(paymentId)
          ? firstOwners(sql`
              SELECT c.customer_id::text AS customer_id, e.customer_id::text AS event_customer_id
              FROM conversions c JOIN outcome_events e ON e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at
              WHERE c.profile_id = ${profileId} AND c.id = ${paymentId.toLowerCase()} AND c.counts_as_cash`)
          : Effect.succeed(Option.none<PaymentOwners>())

      const lock = (profileId: string, paymentId: string) =>
        isUuid(paymentId)
          ? firstLocked(sql`
              SELECT c.id::text AS id, c.outcome_event_id::text AS outcome_event_id, c.customer_id::text AS customer_id,
                     e.customer_id::text AS event_customer_id, c.payer_customer_id::text AS payer_customer_id,
                     pc.customer_key AS payer_customer_key, c.installment, trim_scale(c.value_amount)::text AS value_amount, c.currency,
                     c.refunded_at IS NOT NULL AS refunded, trim_scale(c.refund_amount)::text AS refund_amount, c.refund_reason
              FROM conversions c JOIN outcome_events e ON e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at
              LEFT JOIN customers pc ON pc.id = c.payer_customer_id
              WHERE c.profile_id = ${profileId} AND c.id = ${paymentId.toLowerCase()} AND c.counts_as_cash
              FOR UPDATE OF c`)
          : Effect.succeed(Option.none<LockedPayment>())

      const liveCustomer = (profileId: string, customerKey: string) =>
        Effect.map(
          firstId(sql`
            SELECT id::text AS id FROM customers
            WHERE profile_id = ${profileId} AND customer_key = ${customerKey}
              AND merged_into_id IS NULL AND erased_at IS NULL`),
          Option.map((row) => row.id)
        )

      const insertAction = (action: NewPaymentAction) => {
        const id = crypto.randomUUID()
        return Effect.as(
          sql`
            INSERT INTO payment_actions (id, profile_id, payment_id, outcome_event_id, action, actor_kind, actor_id,
                                         actor_user_id, details, request_id)
            VALUES (${id}, ${action.profileId}, ${action.paymentId}, ${action.outcomeEventId}, ${action.action},
                    ${action.actorKind}, ${action.actorId}, ${action.actorUserId}, ${JSON.stringify(action.details)}::jsonb,
                    ${action.requestId})`,
          id
        )
      }

      const linkage = (
        profileId: string,
        filters: PaymentFilters,
        limit: number,
        after: Option.Option<PaymentKeyset>,
        model: CreditModel
      ) =>
        linkageRows(sql`
          SELECT ${paymentColumns},
                 NOT EXISTS (SELECT 1 FROM credit_queue q WHERE q.profile_id = c.profile_id AND q.conversion_id = c.id AND q.occurred_at = c.occurred_at) AS credited,
                 c.customer_id IS NOT NULL AS has_customer,
                 c.attribution_eligible AS eligible, COALESCE(top.n, 0)::int AS credited_touches,
                 t.id::text AS touch_id, t.kind AS touch_kind, ${isoTimestamp(sql, "t.occurred_at")} AS touch_at,
                 t.channel, t.source, t.medium, t.campaign_external_id, t.campaign_name, t.ad_set_external_id, t.ad_set_name,
                 t.ad_external_id, t.ad_name, t.join_method, t.click_id_kind, top.credit_share::text AS credit_share
          ${paymentJoins}
          LEFT JOIN LATERAL (
            SELECT a.touch_id, a.touch_at, a.credit_share, count(*) OVER () AS n FROM attribution_credits a
            WHERE a.conversion_id = c.id AND a.profile_id = c.profile_id AND a.converted_at = c.occurred_at AND a.model = ${model}
              AND a.is_credited
            ORDER BY a.credit_share DESC, a.position DESC
            LIMIT 1
          ) top ON true
          -- By the whole key: the credit row's touch_at names the touch's month (migration 0075).
          LEFT JOIN touches t ON t.id = top.touch_id AND t.profile_id = c.profile_id AND t.occurred_at = top.touch_at
          WHERE ${where(profileId, filters, after)}
          ORDER BY c.occurred_at DESC, c.id DESC
          LIMIT ${limit + 1}`)

      const paymentDefinition = (profileId: string) =>
        Effect.map(
          definitionKinds(sql`
            SELECT kind FROM conversion_definitions
            WHERE profile_id = ${profileId} AND ${CARDGW_EVENT_NAME} = ANY (event_names)`),
          (rows): PaymentDefinitionState =>
            rows.some((row) => row.kind === "event") ? "event_definition" : rows.length > 0 ? "other_definition" : "none"
        )

      return {
        ...atDatabaseBoundary({
          list,
          find,
          owners,
          lock,
          liveCustomer,
          insertAction,
          linkage,
          paymentDefinition
        }),
        // Generic, so outside `atDatabaseBoundary`'s mapped type; the same mapping for BEGIN and COMMIT.
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
