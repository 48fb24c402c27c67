/**
 * The touches a conversion may credit: those of its customer within its lookback window (1 ms
 * of slack each side: the models decide the exact bounds), carrying the customer or one of the
 * anonymous ids bound to it (`customer_identifiers` of kind `anonymous_id`); never `outcome`
 * touches. One statement for a batch of conversions. Used by the crediting engine and by the
 * ad-referral preview, so both see the same candidates.
 */
import { Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { TOUCH_KINDS } from "./models/types.ts"

export const CandidateTouch = Schema.Struct({
  conversion_id: Schema.String,
  id: Schema.String,
  kind: Schema.Literals(TOUCH_KINDS),
  channel: Schema.String,
  occurred_ms: Schema.Number
})
export type CandidateTouch = typeof CandidateTouch.Type

export const candidateTouches = (
  sql: SqlClient,
  conversions: ReadonlyArray<{ readonly id: string; readonly window_days: number }>
) =>
  sql`
    SELECT x.conversion_id::text AS conversion_id, t.id::text AS id, t.kind, t.channel,
           floor(extract(epoch FROM t.occurred_at) * 1000)::float8 AS occurred_ms
    FROM unnest(${conversions.map((c) => c.id)}::uuid[], ${conversions.map((c) => c.window_days)}::int[])
           AS x(conversion_id, window_days)
    JOIN conversions c ON c.id = x.conversion_id
    CROSS JOIN LATERAL (
      SELECT t.id, t.kind, t.channel, t.occurred_at FROM touches t
      WHERE t.profile_id = c.profile_id AND t.customer_id = c.customer_id AND t.kind <> 'outcome'
        AND t.occurred_at >= c.occurred_at - make_interval(days => x.window_days) - interval '1 millisecond'
        AND t.occurred_at <= c.occurred_at + interval '1 millisecond'
      UNION
      SELECT t.id, t.kind, t.channel, t.occurred_at FROM customer_identifiers ci
      JOIN touches t ON t.profile_id = ci.profile_id AND t.anonymous_id = ci.value
      WHERE ci.customer_id = c.customer_id AND ci.profile_id = c.profile_id AND ci.kind = 'anonymous_id'
        AND ci.removed_at IS NULL AND t.kind <> 'outcome'
        AND t.occurred_at >= c.occurred_at - make_interval(days => x.window_days) - interval '1 millisecond'
        AND t.occurred_at <= c.occurred_at + interval '1 millisecond'
    ) t
    WHERE c.customer_id IS NOT NULL`
