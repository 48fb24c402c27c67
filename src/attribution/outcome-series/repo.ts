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

/**
 * `[from, until)`: whole days (`YYYY-MM-DD`, `until` the day after the last) of the profile's
 * time zone (IANA), each from its local midnight: a DST day is 23 or 25 hours (decision 0135).
 */
export interface Span {
  readonly from: string
  readonly until: string
  readonly timeZone: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class OutcomeSeriesRepo extends Context.Service<OutcomeSeriesRepo, {
  /**
   * Live customers with a cash conversion before the local midnight that starts `beforeDay` in
   * `timeZone`, less the audience exclusions: the customer list at that instant.
   */
  readonly listMembers: (profileId: string, beforeDay: string, timeZone: string) => Repo<ReadonlyArray<string>>
  /** Conversions of `key` in the span per customer (only customers with at least one). */
  readonly perCustomer: (profileId: string, key: string, span: Span) => Repo<ReadonlyArray<CustomerOutcome>>
  /** Conversions of `key` in the span per local day of the span's time zone (only days with at least one). */
  readonly perDay: (profileId: string, key: string, span: Span) => Repo<ReadonlyArray<DayOutcome>>
  /** Credit of `key` under `model` per campaign and local day (the span's time zone) of the conversion (only non-zero cells). */
  readonly creditedPerCampaignDay: (profileId: string, key: string, model: string, span: Span) => Repo<ReadonlyArray<CampaignDayOutcome>>
}>()("svc/OutcomeSeriesRepo") {
  static readonly layer = Layer.effect(OutcomeSeriesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const ids = decodeRows(Schema.Struct({ id: Schema.String }))
      const customers = decodeRows(CustomerOutcome)
      const days = decodeRows(DayOutcome)
      const cells = decodeRows(CampaignDayOutcome)

      // The first instant of a local day: a date at midnight read in the zone (PostgreSQL applies its DST rules).
      const midnight = (day: string, timeZone: string) => sql`((${day}::date)::timestamp AT TIME ZONE ${timeZone})`
      const inSpan = (column: string, span: Span) =>
        sql`${sql.literal(column)} >= ${midnight(span.from, span.timeZone)} AND ${sql.literal(column)} < ${midnight(span.until, span.timeZone)}`

      const listMembers = (profileId: string, beforeDay: string, timeZone: string) =>
        Effect.map(
          ids(sql`
            SELECT c.id::text AS id FROM customers c
            WHERE c.profile_id = ${profileId} AND c.merged_into_id IS NULL AND c.erased_at IS NULL
              AND EXISTS (SELECT 1 FROM conversions v WHERE v.profile_id = c.profile_id AND v.customer_id = c.id
                            AND v.counts_as_cash AND v.occurred_at < ${midnight(beforeDay, timeZone)})
              AND NOT EXISTS (SELECT 1 FROM audience_exclusions x WHERE x.profile_id = c.profile_id AND x.customer_id = c.id)
            ORDER BY c.id`),
          (rows) => rows.map((row) => row.id)
        )

      const perCustomer = (profileId: string, key: string, span: Span) =>
        customers(sql`
          SELECT customer_id::text AS customer_id, count(*)::float8 AS conversions, COALESCE(sum(value_amount), 0)::float8 AS value
          FROM conversions
          WHERE profile_id = ${profileId} AND conversion_key = ${key} AND customer_id IS NOT NULL
            AND ${inSpan("occurred_at", span)}
          GROUP BY customer_id`)

      const perDay = (profileId: string, key: string, span: Span) =>
        days(sql`
          SELECT to_char((occurred_at AT TIME ZONE ${span.timeZone})::date, 'YYYY-MM-DD') AS day,
                 count(*)::float8 AS conversions, COALESCE(sum(value_amount), 0)::float8 AS value
          FROM conversions
          WHERE profile_id = ${profileId} AND conversion_key = ${key}
            AND ${inSpan("occurred_at", span)}
          GROUP BY 1 ORDER BY 1`)

      const creditedPerCampaignDay = (profileId: string, key: string, model: string, span: Span) =>
        cells(sql`
          SELECT t.campaign_external_id AS campaign_id,
                 to_char((c.occurred_at AT TIME ZONE ${span.timeZone})::date, 'YYYY-MM-DD') AS day,
                 sum(a.credit_share)::float8 AS conversions,
                 COALESCE(sum(a.credit_share * c.value_amount), 0)::float8 AS value
          FROM conversions c
          JOIN attribution_credits a ON a.conversion_id = c.id AND a.profile_id = c.profile_id AND a.converted_at = c.occurred_at
                                    AND a.model = ${model} AND a.is_credited
          JOIN touches t ON t.id = a.touch_id AND t.profile_id = a.profile_id AND t.occurred_at = a.touch_at
          WHERE c.profile_id = ${profileId} AND c.conversion_key = ${key} AND t.campaign_external_id IS NOT NULL
            AND ${inSpan("c.occurred_at", span)}
          GROUP BY 1, 2 ORDER BY 1, 2`)

      return atDatabaseBoundary({ listMembers, perCustomer, perDay, creditedPerCampaignDay })
    })
  )
}
