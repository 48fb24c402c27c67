/** SQL of partner data: the synced ads, referral and declared-source touches, re-credit marks (decision 0033). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionRepo, type CandidateTouch } from "../attribution/repo.ts"
import { DEFAULT_LOOKBACK_WINDOW_DAYS } from "../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { type TouchKind } from "../attribution/models/index.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

/** A synced ad with its ad set and campaign. */
export const AdRow = Schema.Struct({
  platform_id: Schema.String,
  name: Schema.String,
  ad_set_platform_id: Schema.String,
  ad_set_name: Schema.String,
  campaign_platform_id: Schema.String,
  campaign_name: Schema.String
})
export type AdRow = typeof AdRow.Type

/** A conversion whose lookback window holds a time, with what crediting needs. */
export const WindowConversion = Schema.Struct({
  id: Schema.String,
  customer_id: Schema.String,
  /** Epoch milliseconds (floored), as the crediting engine reads it. */
  occurred_ms: Schema.Number,
  window_days: Schema.Int,
  eligible: Schema.Boolean
})
export type WindowConversion = typeof WindowConversion.Type


export const StoredAnswer = Schema.Struct({
  answer_id: Schema.String,
  customer_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  answer_key: Schema.String,
  channel: Schema.String,
  answered_at: Schema.String,
  touch_id: Schema.String,
  request_hash: Schema.String
})
export type StoredAnswer = typeof StoredAnswer.Type

export interface NewTouch {
  readonly id: string
  readonly profileId: string
  readonly kind: TouchKind
  /** ISO 8601 with offset. */
  readonly occurredAt: string
  readonly sourceSystem: string
  readonly idempotencyKey: string
  readonly customerId: string
  readonly joinMethod: "ctwa_referral" | null
  readonly channel: string
  readonly source: string
  readonly medium: string
  readonly campaignExternalId: string | null
  readonly campaignName: string | null
  readonly adSetExternalId: string | null
  readonly adSetName: string | null
  readonly adExternalId: string | null
  readonly adName: string | null
  readonly clickIdKind: string | null
  readonly clickId: string | null
  readonly payload: Readonly<Record<string, unknown>>
}

export interface NewAnswer {
  readonly id: string
  readonly profileId: string
  readonly customerId: string
  readonly answerKey: string
  readonly answerText: string | null
  readonly wamid: string | null
  readonly requestHash: string
  /** ISO 8601 with offset. */
  readonly answeredAt: string
  readonly touchId: string
}

/** A customer and a time: a conversion of that customer whose window holds the time is affected. */
export interface CustomerTime {
  readonly customerId: string
  /** ISO 8601 with offset. */
  readonly at: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class PartnerRepo extends Context.Service<PartnerRepo, {
  /** The profile's synced ads among `platformIds`, with their ad set and campaign. */
  readonly adsByPlatformIds: (profileId: string, platformIds: ReadonlyArray<string>) => Repo<ReadonlyArray<AdRow>>
  /** Which of `keys` already name a touch of `sourceSystem`. */
  readonly existingTouchKeys: (
    profileId: string,
    sourceSystem: string,
    keys: ReadonlyArray<string>
  ) => Repo<ReadonlyArray<string>>
  /** Inserts the touches (one statement); a key already taken is skipped. Answers the keys inserted. */
  readonly insertTouches: (touches: ReadonlyArray<NewTouch>) => Repo<ReadonlyArray<string>>
  /**
   * Sets `credited_at = null` on every conversion of the profile whose customer and lookback
   * window hold one of the pairs (the worker credits them again). Answers how many.
   */
  readonly requeueConversions: (profileId: string, pairs: ReadonlyArray<CustomerTime>) => Repo<number>
  /** Read-only: the conversions `requeueConversions` would mark. */
  readonly conversionsInWindow: (profileId: string, pairs: ReadonlyArray<CustomerTime>) => Repo<ReadonlyArray<WindowConversion>>
  /**
   * Read-only: the creditable touches of each conversion's customer in its window, as the crediting
   * engine gathers them (touches carrying the customer and those of its bound anonymous ids).
   */
  readonly touchesOf: (conversions: ReadonlyArray<WindowConversion>) => Repo<ReadonlyArray<CandidateTouch>>
  /** Serialises declared-source requests of one `wamid` until the transaction ends. */
  readonly lockWamid: (profileId: string, wamid: string) => Repo<void>
  readonly answerByWamid: (profileId: string, wamid: string) => Repo<Option.Option<StoredAnswer>>
  readonly answerByCustomer: (customerId: string) => Repo<Option.Option<StoredAnswer>>
  readonly insertAnswer: (answer: NewAnswer) => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/PartnerRepo") {
  static readonly layer = Layer.effect(PartnerRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const attribution = yield* AttributionRepo
      const adRows = decodeRows(AdRow)
      const keyRows = decodeRows(Schema.Struct({ key: Schema.String }))
      const windowRows = decodeRows(WindowConversion)
      const firstAnswer = decodeFirstRow(StoredAnswer)

      const adsByPlatformIds = (profileId: string, platformIds: ReadonlyArray<string>) =>
        adRows(sql`
          SELECT a.platform_id, a.name, s.platform_id AS ad_set_platform_id, s.name AS ad_set_name,
                 c.platform_id AS campaign_platform_id, c.name AS campaign_name
          FROM ads a
          JOIN ad_sets s ON s.id = a.ad_set_id
          JOIN ad_campaigns c ON c.id = s.campaign_id
          WHERE a.profile_id = ${profileId} AND a.platform_id = ANY(${[...platformIds]}::text[])`)

      const existingTouchKeys = (profileId: string, sourceSystem: string, keys: ReadonlyArray<string>) =>
        Effect.map(
          keyRows(sql`
            SELECT idempotency_key AS key FROM touches
            WHERE profile_id = ${profileId} AND source_system = ${sourceSystem}
              AND idempotency_key = ANY(${[...keys]}::text[])`),
          (rows) => rows.map((row) => row.key)
        )

      // One statement for the batch, its rows as a JSON document (arrays of only nulls carry no type).
      const insertTouches = (touches: ReadonlyArray<NewTouch>) => {
        if (touches.length === 0) return Effect.succeed<ReadonlyArray<string>>([])
        const rows = touches.map((t) => ({
          id: t.id,
          profile_id: t.profileId,
          kind: t.kind,
          occurred_at: t.occurredAt,
          source_system: t.sourceSystem,
          idempotency_key: t.idempotencyKey,
          customer_id: t.customerId,
          join_method: t.joinMethod,
          channel: t.channel,
          source: t.source,
          medium: t.medium,
          campaign_external_id: t.campaignExternalId,
          campaign_name: t.campaignName,
          ad_set_external_id: t.adSetExternalId,
          ad_set_name: t.adSetName,
          ad_external_id: t.adExternalId,
          ad_name: t.adName,
          click_id_kind: t.clickIdKind,
          click_id: t.clickId,
          payload: t.payload
        }))
        return Effect.map(
          keyRows(sql`
            INSERT INTO touches (id, profile_id, kind, occurred_at, source_system, idempotency_key, customer_id, join_method,
                                 channel, source, medium, campaign_external_id, campaign_name, ad_set_external_id,
                                 ad_set_name, ad_external_id, ad_name, click_id_kind, click_id, payload)
            SELECT r.id, r.profile_id, r.kind, r.occurred_at, r.source_system, r.idempotency_key, r.customer_id, r.join_method,
                   r.channel, r.source, r.medium, r.campaign_external_id, r.campaign_name, r.ad_set_external_id,
                   r.ad_set_name, r.ad_external_id, r.ad_name, r.click_id_kind, r.click_id, COALESCE(r.payload, '{}'::jsonb)
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
              id uuid, profile_id uuid, kind text, occurred_at timestamptz, source_system text, idempotency_key text,
              customer_id uuid, join_method text, channel text, source text, medium text, campaign_external_id text,
              campaign_name text, ad_set_external_id text, ad_set_name text, ad_external_id text, ad_name text,
              click_id_kind text, click_id text, payload jsonb)
            ON CONFLICT (profile_id, source_system, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING idempotency_key AS key`),
          (rows) => rows.map((row) => row.key)
        )
      }

      /** Conversions of the profile whose customer and window (both ends inclusive, as the models read it) hold a pair. */
      const inWindow = (profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
        sql`
          SELECT DISTINCT c.id
          FROM unnest(${pairs.map((pair) => pair.customerId)}::uuid[], ${pairs.map((pair) => pair.at)}::timestamptz[])
                 AS p(customer_id, at)
          JOIN conversions c ON c.profile_id = ${profileId} AND c.customer_id = p.customer_id
          LEFT JOIN conversion_definitions d ON d.id = c.definition_id
          WHERE p.at <= c.occurred_at
            AND p.at >= c.occurred_at - make_interval(days => COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}))`

      const requeueConversions = (profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
        pairs.length === 0
          ? Effect.succeed(0)
          : Effect.map(
            sql`UPDATE conversions SET credited_at = NULL WHERE id IN (${inWindow(profileId, pairs)}) RETURNING id`,
            (rows) => rows.length
          )

      const conversionsInWindow = (profileId: string, pairs: ReadonlyArray<CustomerTime>) =>
        pairs.length === 0
          ? Effect.succeed<ReadonlyArray<WindowConversion>>([])
          : windowRows(sql`
            SELECT c.id::text AS id, c.customer_id::text AS customer_id,
                   floor(extract(epoch FROM c.occurred_at) * 1000)::float8 AS occurred_ms,
                   COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS window_days,
                   COALESCE(d.attribution_eligible, c.attribution_eligible) AS eligible
            FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
            WHERE c.id IN (${inWindow(profileId, pairs)})
            ORDER BY c.occurred_at, c.id`)

      const touchesOf = (conversions: ReadonlyArray<WindowConversion>) =>
        conversions.length === 0
          ? Effect.succeed<ReadonlyArray<CandidateTouch>>([])
          : attribution.candidateTouches(conversions)

      const lockWamid = (profileId: string, wamid: string) =>
        Effect.asVoid(
          sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`declared_source:${profileId}:${wamid}`}, 0))`
        )

      const answerColumns = sql`
        a.id::text AS answer_id, a.customer_id::text AS customer_id, cu.customer_key, a.answer_key, t.channel,
        ${isoTimestamp(sql, "a.answered_at")} AS answered_at, a.touch_id::text AS touch_id, a.request_hash`

      const answerByWamid = (profileId: string, wamid: string) =>
        firstAnswer(sql`
          SELECT ${answerColumns}
          FROM declared_sources a JOIN customers cu ON cu.id = a.customer_id JOIN touches t ON t.id = a.touch_id
          WHERE a.profile_id = ${profileId} AND a.wamid = ${wamid}`)

      const answerByCustomer = (customerId: string) =>
        firstAnswer(sql`
          SELECT ${answerColumns}
          FROM declared_sources a JOIN customers cu ON cu.id = a.customer_id JOIN touches t ON t.id = a.touch_id
          WHERE a.customer_id = ${customerId}`)

      const insertAnswer = (answer: NewAnswer) =>
        Effect.asVoid(sql`
          INSERT INTO declared_sources (id, profile_id, customer_id, answer_key, answer_text, wamid, request_hash, answered_at, touch_id)
          VALUES (${answer.id}, ${answer.profileId}, ${answer.customerId}, ${answer.answerKey}, ${answer.answerText},
                  ${answer.wamid}, ${answer.requestHash}, ${answer.answeredAt}::timestamptz, ${answer.touchId})`)

      return {
        adsByPlatformIds: (profileId, ids) => orDatabaseUnavailable(adsByPlatformIds(profileId, ids)),
        existingTouchKeys: (profileId, sourceSystem, keys) =>
          orDatabaseUnavailable(existingTouchKeys(profileId, sourceSystem, keys)),
        insertTouches: (touches) => orDatabaseUnavailable(insertTouches(touches)),
        requeueConversions: (profileId, pairs) => orDatabaseUnavailable(requeueConversions(profileId, pairs)),
        conversionsInWindow: (profileId, pairs) => orDatabaseUnavailable(conversionsInWindow(profileId, pairs)),
        touchesOf: (conversions) => orDatabaseUnavailable(touchesOf(conversions)),
        lockWamid: (profileId, wamid) => orDatabaseUnavailable(lockWamid(profileId, wamid)),
        answerByWamid: (profileId, wamid) => orDatabaseUnavailable(answerByWamid(profileId, wamid)),
        answerByCustomer: (customerId) => orDatabaseUnavailable(answerByCustomer(customerId)),
        insertAnswer: (answer) => orDatabaseUnavailable(insertAnswer(answer)),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  ).pipe(Layer.provide(AttributionRepo.layer))
}
