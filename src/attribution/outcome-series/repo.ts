/**
 * Read-only series of conversions for experiments (issue 32, decision 0122): per customer and per
 * day of one conversion key, and credited per campaign and day. Reads the tables the attribution
 * context owns (conversions, credits, touches) and the customers a customer list is drawn from.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"

export const CustomerOutcome = Schema.Struct({ customer_id: Schema.String, conversions: Schema.Finite, value: Schema.Finite })
export type CustomerOutcome = typeof CustomerOutcome.Type

export const DayOutcome = Schema.Struct({ day: Schema.String, conversions: Schema.Finite, value: Schema.Finite })
export type DayOutcome = typeof DayOutcome.Type

export const CampaignDayOutcome = Schema.Struct({
  campaign_id: Schema.String,
  day: Schema.String,
  conversions: Schema.Finite,
  value: Schema.Finite
})
export type CampaignDayOutcome = typeof CampaignDayOutcome.Type

/** `[from, until)`: UTC instants as ISO strings. */
export interface Span {
  readonly from: string
  readonly until: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class OutcomeSeriesRepo extends Context.Service<OutcomeSeriesRepo, {
  /** Live customers with a cash conversion before `before`, less the audience exclusions: the customer list at that instant. */
  readonly listMembers: (profileId: string, before: string) => Repo<ReadonlyArray<string>>
  /** Conversions of `key` in the span per customer (only customers with at least one). */
  readonly perCustomer: (profileId: string, key: string, span: Span) => Repo<ReadonlyArray<CustomerOutcome>>
  /** Conversions of `key` in the span per UTC day (only days with at least one). */
  readonly perDay: (profileId: string, key: string, span: Span) => Repo<ReadonlyArray<DayOutcome>>
  /** Credit of `key` under `model` per campaign and UTC day of the conversion (only non-zero cells). */
  readonly creditedPerCampaignDay: (profileId: string, key: string, model: string, span: Span) => Repo<ReadonlyArray<CampaignDayOutcome>>
}>()("svc/OutcomeSeriesRepo") {
  static readonly layer = Layer.effect(OutcomeSeriesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const ids = decodeRows(Schema.Struct({ id: Schema.String }))
      const customers = decodeRows(CustomerOutcome)
      const days = decodeRows(DayOutcome)
      const cells = decodeRows(CampaignDayOutcome)

      const listMembers = (profileId: string, before: string) =>
        Effect.map(
          ids(sql`
            SELECT c.id::text AS id FROM customers c
            WHERE c.profile_id = ${profileId} AND c.merged_into_id IS NULL AND c.erased_at IS NULL
              AND EXISTS (SELECT 1 FROM conversions v WHERE v.profile_id = c.profile_id AND v.customer_id = c.id
                            AND v.counts_as_cash AND v.occurred_at < ${before}::timestamptz)
              AND NOT EXISTS (SELECT 1 FROM audience_exclusions x WHERE x.profile_id = c.profile_id AND x.customer_id = c.id)
            ORDER BY c.id`),
          (rows) => rows.map((row) => row.id)
        )

      const perCustomer = (profileId: string, key: string, span: Span) =>
        customers(sql`
          SELECT customer_id::text AS customer_id, count(*)::float8 AS conversions, COALESCE(sum(value_amount), 0)::float8 AS value
          FROM conversions
          WHERE profile_id = ${profileId} AND conversion_key = ${key} AND customer_id IS NOT NULL
            AND occurred_at >= ${span.from}::timestamptz AND occurred_at < ${span.until}::timestamptz
          GROUP BY customer_id`)

      const perDay = (profileId: string, key: string, span: Span) =>
        days(sql`
          SELECT to_char((occurred_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
                 count(*)::float8 AS conversions, COALESCE(sum(value_amount), 0)::float8 AS value
          FROM conversions
          WHERE profile_id = ${profileId} AND conversion_key = ${key}
            AND occurred_at >= ${span.from}::timestamptz AND occurred_at < ${span.until}::timestamptz
          GROUP BY 1 ORDER BY 1`)

      const creditedPerCampaignDay = (profileId: string, key: string, model: string, span: Span) =>
        cells(sql`
          SELECT t.campaign_external_id AS campaign_id,
                 to_char((c.occurred_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
                 sum(a.credit_share)::float8 AS conversions,
                 COALESCE(sum(a.credit_share * c.value_amount), 0)::float8 AS value
          FROM conversions c
          JOIN attribution_credits a ON a.conversion_id = c.id AND a.model = ${model} AND a.is_credited
          JOIN touches t ON t.id = a.touch_id
          WHERE c.profile_id = ${profileId} AND c.conversion_key = ${key} AND t.campaign_external_id IS NOT NULL
            AND c.occurred_at >= ${span.from}::timestamptz AND c.occurred_at < ${span.until}::timestamptz
          GROUP BY 1, 2 ORDER BY 1, 2`)

      return atDatabaseBoundary({ listMembers, perCustomer, perDay, creditedPerCampaignDay })
    })
  )
}
