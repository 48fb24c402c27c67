/**
 * SQL of the tracker's diagnostics (decision 0034): install-verification attempts, the event
 * feed, ops counters and quality shares. Reads of `touches` stay on the `(profile_id,
 * occurred_at)` index: a touch is received at most 7 days after it occurred (the collector's
 * rule), so "received since T" is looked up among touches that occurred since T − 7 days.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../../platform/database.ts"
import { isoTimestamp } from "../../../platform/sql-time.ts"

export const VerificationRow = Schema.Struct({
  id: Schema.String,
  started_at: Schema.String,
  expires_at: Schema.String,
  expired: Schema.Boolean,
  verified_at: Schema.NullOr(Schema.String),
  touch_id: Schema.NullOr(Schema.String),
  origin: Schema.NullOr(Schema.String),
  event_type: Schema.NullOr(Schema.String)
})
export type VerificationRow = typeof VerificationRow.Type

export const FeedRow = Schema.Struct({
  id: Schema.String,
  occurred_at: Schema.String,
  received_at: Schema.String,
  event_type: Schema.NullOr(Schema.String),
  collector_origin: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  path: Schema.NullOr(Schema.String),
  referrer_domain: Schema.NullOr(Schema.String),
  channel: Schema.String,
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign_external_id: Schema.NullOr(Schema.String),
  campaign_name: Schema.NullOr(Schema.String),
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.String),
  utm: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  property_keys: Schema.NullOr(Schema.Array(Schema.String)),
  device: Schema.NullOr(Schema.String),
  browser: Schema.NullOr(Schema.String),
  os: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  city: Schema.NullOr(Schema.String)
})
export type FeedRow = typeof FeedRow.Type

export const OpsRow = Schema.Struct({
  generated_at: Schema.String,
  touches_24h: Schema.Number,
  touches_7d: Schema.Number,
  bot_today: Schema.Number,
  dnt_today: Schema.Number,
  bot_7d: Schema.Number,
  dnt_7d: Schema.Number,
  last_event_at: Schema.NullOr(Schema.String),
  lag_samples: Schema.Number,
  lag_p50: Schema.NullOr(Schema.Number),
  lag_p95: Schema.NullOr(Schema.Number),
  lag_max: Schema.NullOr(Schema.Number),
  active_keys: Schema.Number
})
export type OpsRow = typeof OpsRow.Type

export const QualityRow = Schema.Struct({
  since: Schema.String,
  touches: Schema.Number,
  with_utm: Schema.Number,
  with_click_id: Schema.Number,
  direct: Schema.Number,
  unclassified: Schema.Number,
  identified: Schema.Number,
  bot_drops: Schema.Number,
  dnt_drops: Schema.Number
})
export type QualityRow = typeof QualityRow.Type

export const ChannelCountRow = Schema.Struct({ channel: Schema.String, count: Schema.Number })

export interface FeedKeyset {
  readonly occurredAt: string
  readonly id: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/** The wire's timestamp format (see `isoTimestamp`), for expressions that are not a column. */
const ISO_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'

export class TrackingDiagnosticsRepo extends Context.Service<TrackingDiagnosticsRepo, {
  readonly startVerification: (profileId: string, windowMinutes: number) => Repo<VerificationRow>
  readonly latestVerification: (profileId: string) => Repo<Option.Option<VerificationRow>>
  /**
   * Records the first tracker touch from an allowed browser origin received inside the attempt's
   * window, if one arrived; answers the attempt as stored.
   */
  readonly settleVerification: (profileId: string, verificationId: string) => Repo<Option.Option<VerificationRow>>
  /** The profile's tracker touches, newest first, `limit + 1` rows after `after`. */
  readonly feed: (profileId: string, limit: number, after: Option.Option<FeedKeyset>) => Repo<ReadonlyArray<FeedRow>>
  readonly ops: (profileId: string) => Repo<OpsRow>
  readonly quality: (profileId: string, days: number) => Repo<{
    readonly totals: QualityRow
    readonly channels: ReadonlyArray<typeof ChannelCountRow.Type>
  }>
}>()("svc/TrackingDiagnosticsRepo") {
  static readonly layer = Layer.effect(TrackingDiagnosticsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const verificationColumns = sql`
        v.id, ${isoTimestamp(sql, "v.started_at")} AS started_at, ${isoTimestamp(sql, "v.expires_at")} AS expires_at,
        (v.verified_at IS NULL AND v.expires_at <= now()) AS expired,
        ${isoTimestamp(sql, "v.verified_at")} AS verified_at, v.touch_id::text AS touch_id, v.origin, v.event_type`
      const firstVerification = decodeFirstRow(VerificationRow)

      const startVerification = (profileId: string, windowMinutes: number) =>
        Effect.flatMap(
          firstVerification(sql`
            INSERT INTO tracking_verifications AS v (id, profile_id, started_at, expires_at)
            VALUES (${crypto.randomUUID()}, ${profileId}, now(), now() + make_interval(mins => ${windowMinutes}))
            RETURNING ${verificationColumns}`),
          Option.match({
            onNone: () => Effect.die("tracking verification not returned by its insert"),
            onSome: Effect.succeed
          })
        )

      const latestVerification = (profileId: string) =>
        firstVerification(sql`
          SELECT ${verificationColumns} FROM tracking_verifications v
          WHERE v.profile_id = ${profileId} ORDER BY v.started_at DESC, v.id DESC LIMIT 1`)

      const settleVerification = (profileId: string, verificationId: string) =>
        Effect.flatMap(
          sql`
            UPDATE tracking_verifications v SET
              verified_at = t.received_at, touch_id = t.id, origin = t.collector_origin, event_type = t.event_type
            FROM (
              SELECT tt.id, tt.received_at, tt.collector_origin, tt.event_type
              FROM tracking_verifications w
              JOIN touches tt ON tt.profile_id = w.profile_id
                AND tt.occurred_at >= w.started_at - interval '7 days'
                AND tt.received_at >= w.started_at AND tt.received_at < w.expires_at
                AND tt.source_system = 'tracker' AND tt.kind = 'web_touch' AND tt.collector_origin IS NOT NULL
              WHERE w.id = ${verificationId} AND w.profile_id = ${profileId} AND w.verified_at IS NULL
              ORDER BY tt.received_at, tt.id LIMIT 1) AS t
            WHERE v.id = ${verificationId} AND v.verified_at IS NULL`,
          () => latestById(profileId, verificationId)
        )

      const latestById = (profileId: string, verificationId: string) =>
        firstVerification(sql`
          SELECT ${verificationColumns} FROM tracking_verifications v
          WHERE v.id = ${verificationId} AND v.profile_id = ${profileId}`)

      const feedRows = decodeRows(FeedRow)
      const feed = (profileId: string, limit: number, after: Option.Option<FeedKeyset>) =>
        feedRows(sql`
          SELECT t.id::text AS id, ${isoTimestamp(sql, "t.occurred_at")} AS occurred_at,
                 ${isoTimestamp(sql, "t.received_at")} AS received_at, t.event_type, t.collector_origin, t.url, t.path,
                 t.referrer_domain, t.channel, t.source, t.medium, t.campaign_external_id, t.campaign_name,
                 t.click_id_kind, t.join_method, t.payload -> 'utm' AS utm,
                 CASE WHEN jsonb_typeof(t.payload -> 'properties') = 'object'
                   THEN ARRAY(SELECT jsonb_object_keys(t.payload -> 'properties') ORDER BY 1) END AS property_keys,
                 t.device, t.browser, t.os, t.country, t.city
          FROM touches t
          WHERE t.profile_id = ${profileId} AND t.kind = 'web_touch' AND t.source_system = 'tracker'
            ${
          Option.match(after, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (t.occurred_at, t.id) < (${keyset.occurredAt}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY t.occurred_at DESC, t.id DESC
          LIMIT ${limit + 1}`)

      const firstOps = decodeFirstRow(OpsRow)
      const ops = (profileId: string) =>
        Effect.flatMap(
          firstOps(sql`
            WITH recent AS (
              SELECT occurred_at, received_at FROM touches
              WHERE profile_id = ${profileId} AND kind = 'web_touch' AND source_system = 'tracker'
                AND occurred_at >= now() - interval '8 days'),
            lag AS (
              SELECT extract(epoch FROM (received_at - occurred_at)) * 1000 AS ms
              FROM recent WHERE received_at >= now() - interval '24 hours'),
            drops AS (
              SELECT reason, day, count FROM tracking_drops
              WHERE profile_id = ${profileId} AND day > (now() AT TIME ZONE 'UTC')::date - 7)
            SELECT
              ${isoTimestamp(sql, "now()")} AS generated_at,
              (SELECT count(*) FROM recent WHERE occurred_at >= now() - interval '24 hours')::float8 AS touches_24h,
              (SELECT count(*) FROM recent WHERE occurred_at >= now() - interval '7 days')::float8 AS touches_7d,
              (SELECT COALESCE(sum(count), 0) FROM drops
                WHERE reason = 'bot' AND day = (now() AT TIME ZONE 'UTC')::date)::float8 AS bot_today,
              (SELECT COALESCE(sum(count), 0) FROM drops
                WHERE reason = 'do_not_track' AND day = (now() AT TIME ZONE 'UTC')::date)::float8 AS dnt_today,
              (SELECT COALESCE(sum(count), 0) FROM drops WHERE reason = 'bot')::float8 AS bot_7d,
              (SELECT COALESCE(sum(count), 0) FROM drops WHERE reason = 'do_not_track')::float8 AS dnt_7d,
              to_char(COALESCE(
                (SELECT max(received_at) FROM recent),
                (SELECT received_at FROM touches
                  WHERE profile_id = ${profileId} AND kind = 'web_touch' AND source_system = 'tracker'
                  ORDER BY occurred_at DESC LIMIT 1)) AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS last_event_at,
              (SELECT count(*) FROM lag)::float8 AS lag_samples,
              (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)) FROM lag)::float8 AS lag_p50,
              (SELECT round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)) FROM lag)::float8 AS lag_p95,
              (SELECT round(max(ms)) FROM lag)::float8 AS lag_max,
              (SELECT count(*) FROM tracking_keys WHERE profile_id = ${profileId} AND revoked_at IS NULL)::float8 AS active_keys`),
          Option.match({ onNone: () => Effect.die("ops query answered no row"), onSome: Effect.succeed })
        )

      const firstQuality = decodeFirstRow(QualityRow)
      const channelRows = decodeRows(ChannelCountRow)
      const quality = (profileId: string, days: number) =>
        Effect.gen(function*() {
          const window = sql`
            FROM touches t
            WHERE t.profile_id = ${profileId} AND t.kind = 'web_touch' AND t.source_system = 'tracker'
              AND t.occurred_at >= now() - make_interval(days => ${days})`
          const totals = yield* firstQuality(sql`
            SELECT
              to_char((now() - make_interval(days => ${days})) AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS since,
              count(*)::float8 AS touches,
              count(*) FILTER (WHERE t.payload -> 'utm' IS NOT NULL)::float8 AS with_utm,
              count(*) FILTER (WHERE t.click_id_kind IS NOT NULL)::float8 AS with_click_id,
              count(*) FILTER (WHERE t.channel = 'direct')::float8 AS direct,
              count(*) FILTER (WHERE t.source = '(not set)')::float8 AS unclassified,
              count(*) FILTER (WHERE t.join_method IS NOT NULL)::float8 AS identified,
              (SELECT COALESCE(sum(count), 0) FROM tracking_drops d WHERE d.profile_id = ${profileId} AND d.reason = 'bot'
                AND d.day > (now() AT TIME ZONE 'UTC')::date - ${days}::int)::float8 AS bot_drops,
              (SELECT COALESCE(sum(count), 0) FROM tracking_drops d WHERE d.profile_id = ${profileId}
                AND d.reason = 'do_not_track' AND d.day > (now() AT TIME ZONE 'UTC')::date - ${days}::int)::float8 AS dnt_drops
            ${window}`)
          if (Option.isNone(totals)) return yield* Effect.die("quality query answered no row")
          const channels = yield* channelRows(sql`
            SELECT t.channel, count(*)::float8 AS count ${window} GROUP BY t.channel ORDER BY count(*) DESC, t.channel`)
          return { totals: totals.value, channels }
        })

      return atDatabaseBoundary({ startVerification, latestVerification, settleVerification, feed, ops, quality })
    })
  )
}
