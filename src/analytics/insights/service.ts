/**
 * Analytics insights (decision 0043): the credit models side by side, dimension values, tracking
 * quality, the touch list, live visitors, people reached by ads, unknown ad ids and the UTM
 * scan. Parameters are checked as the other analytics reads check them (`parseQuery`); a profile
 * on the connect-broker tier is then answered empty, never a 403.
 */
import { Context, Duration, Effect, Layer, Option } from "effect"
import { RateLimiter } from "effect/persistence/RateLimiter"
import {
  type AdIdsQuality,
  type AdIdsQuery,
  type AdPeople,
  type AdPeopleQuery,
  type AttributionModels,
  type DimensionValues,
  type DimensionValuesQuery,
  type ModelsQuery,
  type Quality,
  type QualityQuery,
  type QualityFigure,
  type RealtimeVisitors,
  type TouchList,
  type TouchListQuery,
  type TouchListRow,
  type UtmRefresh,
  type UtmSummary
} from "../../../schema/analytics-insights.ts"
import type { BreakdownDimension } from "../../../schema/analytics.ts"
import { JoinMethods, JourneyRowKinds } from "../../../schema/customers.ts"
import {
  type DatabaseUnavailable,
  type InvalidDateRange,
  type InvalidParameter,
  NotFound,
  type RateLimitExceeded
} from "../../../schema/errors.ts"
import { CreditModels } from "../../../schema/events.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { keysetCursor, pageOf } from "../../platform/pagination.ts"
import { consumeBucket } from "../../platform/rate-limit.ts"
import { type InsightScope, InsightsRepo, UTM_SCAN_WINDOW_DAYS } from "./repo.ts"
import { AnalyticsRepo } from "../overview/repo.ts"
import { type AnalyticsQueryInput, DEFAULT_BREAKDOWN_LIMIT, parseQuery, roasOf } from "../overview/service.ts"
import { invalidQuery } from "../../../schema/query-errors.ts"


/** UTM scans per hour per credential (the spec's own bucket). */
export const UTM_SCANS_PER_HOUR = 6
const UTM_WINDOW = Duration.hours(1)

type ReadError = DatabaseUnavailable | InvalidParameter | InvalidDateRange | NotFound

const figure = (count: number, touches: number): QualityFigure => ({ count, share: roasOf(String(count), String(touches)) })

const emptySummary: UtmSummary = {
  window_days: UTM_SCAN_WINDOW_DAYS,
  web_touches: 0,
  with_utm: 0,
  complete: 0,
  missing_source: 0,
  missing_medium: 0,
  missing_campaign: 0,
  click_id_without_utm: 0
}

const reasonFor = (target: string | null, profileCurrency: string | null) =>
  target === null || profileCurrency === null ? "currency_unset" as const : "fx_rate_missing" as const

const kindOf = (kind: string) => JourneyRowKinds.find((known) => known === kind) ?? "web_touch"
const joinMethodOf = (method: string | null) => JoinMethods.find((known) => known === method) ?? null
const ref = (externalId: string | null, name: string | null) =>
  externalId === null && name === null ? null : { external_id: externalId, name }

export class InsightsService extends Context.Service<InsightsService, {
  readonly models: (profile: ProfileContext, query: ModelsQuery) => Effect.Effect<AttributionModels, ReadError>
  readonly dimensionValues: (
    profile: ProfileContext,
    dimension: BreakdownDimension,
    query: DimensionValuesQuery
  ) => Effect.Effect<DimensionValues, ReadError>
  readonly quality: (profile: ProfileContext, query: QualityQuery) => Effect.Effect<Quality, ReadError>
  readonly touches: (profile: ProfileContext, query: TouchListQuery) => Effect.Effect<TouchList, ReadError>
  readonly realtime: (profile: ProfileContext) => Effect.Effect<RealtimeVisitors, DatabaseUnavailable>
  readonly adPeople: (profile: ProfileContext, query: AdPeopleQuery) => Effect.Effect<AdPeople, ReadError>
  readonly adIds: (profile: ProfileContext, query: AdIdsQuery) => Effect.Effect<AdIdsQuality, ReadError>
  /** `caller` names the credential whose bucket a scan takes from. */
  readonly refreshUtm: (profile: ProfileContext, caller: string) => Effect.Effect<UtmRefresh, DatabaseUnavailable | RateLimitExceeded>
}>()("svc/InsightsService") {
  static readonly layer = Layer.effect(InsightsService)(
    Effect.gen(function*() {
      const analytics = yield* AnalyticsRepo
      const repo = yield* InsightsRepo
      const limiter = yield* RateLimiter

      const factsOf = (profile: ProfileContext) =>
        Effect.flatMap(analytics.profileFacts(profile.profileId), (facts) =>
          Option.match(facts, {
            onNone: () => Effect.fail(new NotFound({ message: "No such profile." })),
            onSome: Effect.succeed
          }))

      /** The profile's facts, the parsed common parameters, the scope and the `meta` every read carries. */
      const prepare = Effect.fnUntraced(function*(profile: ProfileContext, query: AnalyticsQueryInput) {
        const facts = yield* factsOf(profile)
        const parsed = yield* parseQuery(query, facts.today)
        const scope: InsightScope = {
          profileId: profile.profileId,
          timeZone: facts.time_zone,
          start: parsed.start,
          end: parsed.end,
          touchFilter: parsed.touchFilter
        }
        const meta = {
          time_zone: facts.time_zone,
          range: { start: parsed.start, end: parsed.end, days: parsed.days },
          filters: parsed.filters
        }
        return { facts, parsed, scope, meta }
      })

      const models = Effect.fn("Insights.models")(function*(profile: ProfileContext, query: ModelsQuery) {
        const { facts, meta, parsed, scope } = yield* prepare(profile, query)
        const reporting = facts.reporting_currency
        const head = { ...meta, as_of: facts.as_of, currency: facts.currency, reporting_currency: reporting }
        const empty = (model: typeof CreditModels[number]) => ({
          model,
          conversion_count: 0,
          credited_conversions: "0",
          credited_revenue: "0",
          reporting_credited_revenue: reporting === null ? null : "0"
        })
        if (!profile.attributionEnabled) {
          return {
            data: CreditModels.map(empty),
            meta: {
              ...head,
              business_conversions: 0,
              unavailable_reason: null,
              reporting_unavailable_reason: reporting === null ? "currency_unset" : null
            }
          } satisfies AttributionModels
        }
        const { businessConversions, rows } = yield* repo.models({
          ...scope,
          conversionKey: parsed.conversionKey,
          currency: facts.currency,
          reportingCurrency: reporting
        })
        const byModel = new Map(rows.map((row) => [row.model, row] as const))
        const data = CreditModels.map((model) => {
          const row = byModel.get(model)
          if (row === undefined) return empty(model)
          return {
            model,
            conversion_count: row.conversion_count,
            credited_conversions: row.credited_conversions,
            credited_revenue: row.credited_revenue,
            reporting_credited_revenue: reporting === null ? null : row.reporting_credited_revenue
          }
        })
        const missing = data.some((row) => row.credited_revenue === null)
        const reportingMissing = reporting === null || data.some((row) => row.reporting_credited_revenue === null)
        return {
          data,
          meta: {
            ...head,
            business_conversions: businessConversions,
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(reporting, facts.currency) : null
          }
        } satisfies AttributionModels
      })

      const dimensionValues = Effect.fn("Insights.dimensionValues")(function*(
        profile: ProfileContext,
        dimension: BreakdownDimension,
        query: DimensionValuesQuery
      ) {
        const limit = query.limit ?? DEFAULT_BREAKDOWN_LIMIT
        const { facts, meta, scope } = yield* prepare(profile, query)
        if (!profile.attributionEnabled) return { data: [], meta: { ...meta, as_of: facts.as_of, dimension, rows_total: 0 } } satisfies DimensionValues
        const rows = yield* repo.dimensionValues(scope, dimension)
        return {
          data: rows.slice(0, limit).map((row) => ({ value: row.value === "" ? null : row.value, touches: row.touches })),
          meta: { ...meta, as_of: facts.as_of, dimension, rows_total: rows.length }
        } satisfies DimensionValues
      })

      const quality = Effect.fn("Insights.quality")(function*(profile: ProfileContext, query: QualityQuery) {
        const { facts, meta, scope } = yield* prepare(profile, query)
        const rolled = profile.attributionEnabled
          ? yield* repo.qualityRollup(scope)
          : { touches: 0, direct: 0, with_campaign_id: 0, with_ad_id: 0, unknown_country: 0, unknown_device: 0 }
        const raw = profile.attributionEnabled ? yield* repo.qualityRaw(scope) : { with_utm: 0, with_click_id: 0 }
        const touches = rolled.touches
        return {
          data: {
            touches,
            with_utm: figure(raw.with_utm, touches),
            with_click_id: figure(raw.with_click_id, touches),
            direct: figure(rolled.direct, touches),
            classified: figure(touches - rolled.direct, touches),
            with_campaign_id: figure(rolled.with_campaign_id, touches),
            with_ad_id: figure(rolled.with_ad_id, touches),
            unknown_country: figure(rolled.unknown_country, touches),
            unknown_device: figure(rolled.unknown_device, touches)
          },
          meta: { ...meta, as_of: facts.as_of }
        } satisfies Quality
      })

      const touches = Effect.fn("Insights.touches")(function*(profile: ProfileContext, query: TouchListQuery) {
        const limit = query.limit ?? DEFAULT_BREAKDOWN_LIMIT
        let after: { readonly at: string; readonly id: string } | null = null
        if (query.cursor !== undefined) {
          // `keysetCursor` refuses a cursor this list did not issue; an empty one reads as none, refused here.
          const keyset = yield* keysetCursor(query.cursor)
          if (Option.isNone(keyset)) return yield* invalidQuery("cursor", "not a cursor this list answered")
          after = { at: keyset.value.createdAt, id: keyset.value.id }
        }
        const { meta, scope } = yield* prepare(profile, query)
        if (!profile.attributionEnabled) return { data: [], meta, pagination: { has_next: false, cursor: null } } satisfies TouchList
        const rows = yield* repo.touches(scope, { limit, after })
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.cursor_at, id: row.id }))
        return {
          data: page.map((row): TouchListRow => ({
            touch_id: row.id,
            kind: kindOf(row.kind),
            at: row.at,
            channel: row.channel,
            source: row.source,
            medium: row.medium,
            campaign: ref(row.campaign_external_id, row.campaign_name),
            ad_set: ref(row.ad_set_external_id, row.ad_set_name),
            ad: ref(row.ad_external_id, row.ad_name),
            click_id_kind: row.click_id_kind,
            join_method: joinMethodOf(row.join_method)
          })),
          meta,
          pagination
        } satisfies TouchList
      })

      const realtime = Effect.fn("Insights.realtime")(function*(profile: ProfileContext) {
        const rows = yield* repo.realtime(profile.profileId)
        const enabled = profile.attributionEnabled
        return {
          data: {
            visitors: enabled ? rows[0]?.live ?? 0 : 0,
            per_minute: rows.map((row) => ({ minute: row.minute, visitors: enabled ? row.visitors : 0 })),
            as_of: rows[0]?.as_of ?? new Date().toISOString()
          }
        } satisfies RealtimeVisitors
      })

      const adPeople = Effect.fn("Insights.adPeople")(function*(profile: ProfileContext, query: AdPeopleQuery) {
        const group = query.group_by ?? "month"
        const { meta, scope } = yield* prepare(profile, query)
        const head = { ...meta, group_by: group }
        if (!profile.attributionEnabled) return { data: [], meta: head } satisfies AdPeople
        const rows = yield* repo.adPeople(scope, group)
        return {
          data: rows.map((row) => ({
            period: group === "ad" ? null : row.key,
            ad_external_id: group === "ad" ? row.key : null,
            people: row.people,
            by_origin: {
              partner_import: row.partner_import,
              conversation_ad_referral: row.conversation_ad_referral,
              website_visit: row.website_visit,
              other: row.other
            },
            // The ad-platform sync does not bring messaging conversation counts yet.
            reported_messaging_conversations: null
          })),
          meta: head
        } satisfies AdPeople
      })

      const adIds = Effect.fn("Insights.adIds")(function*(profile: ProfileContext, query: AdIdsQuery) {
        const limit = query.limit ?? DEFAULT_BREAKDOWN_LIMIT
        const { meta, scope } = yield* prepare(profile, query)
        if (!profile.attributionEnabled) return { data: [], meta: { ...meta, rows_total: 0 } } satisfies AdIdsQuality
        const rows = yield* repo.unknownAdIds(scope)
        return { data: rows.slice(0, limit), meta: { ...meta, rows_total: rows.length } } satisfies AdIdsQuality
      })

      const refreshUtm = Effect.fn("Insights.refreshUtm")(function*(profile: ProfileContext, caller: string) {
        if (!profile.attributionEnabled) {
          return { data: { refreshed: false, scanned_at: null, summary: emptySummary } } satisfies UtmRefresh
        }
        const stored = yield* repo.lastUtmScan(profile.profileId)
        if (Option.isSome(stored) && stored.value.fresh) {
          return { data: { refreshed: false, scanned_at: stored.value.scanned_at, summary: stored.value.summary } } satisfies UtmRefresh
        }
        // Only a scan takes from the bucket; an answer from the stored summary is free.
        yield* consumeBucket(limiter, {
          key: `utm_refresh:${caller}`,
          limit: UTM_SCANS_PER_HOUR,
          window: UTM_WINDOW,
          exceeded: { message: `At most ${UTM_SCANS_PER_HOUR} UTM scans per hour per key.`, reason: "utm_refresh_rate" }
        })
        const scanned = yield* repo.scanUtm(profile.profileId)
        return { data: { refreshed: true, scanned_at: scanned.scanned_at, summary: scanned.summary } } satisfies UtmRefresh
      })

      return { models, dimensionValues, quality, touches, realtime, adPeople, adIds, refreshUtm }
    })
  ).pipe(Layer.provide([AnalyticsRepo.layer, InsightsRepo.layer]))
}
