/**
 * Campaign, ad set and ad reads (decision 0042): rows per entity with the model's credit,
 * spend, ROAS and CAC; the unattributed remainder (rows plus remainder add up to the overview);
 * the conversions credited to one campaign. Parameters are the common ones of service.ts plus
 * `level` (and `limit` / `cursor` on the list). A connect-broker profile gets every read answered
 * empty after its parameters were checked.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { AnalyticsQueryInput } from "../overview/service.ts"
import { addDays, parseQuery, roasOf } from "../overview/service.ts"
import {
  type CampaignConversions,
  type CampaignConversionsQuery,
  type CampaignLevel,
  type AdDetail,
  type AdsTrend,
  type CampaignRow,
  type Campaigns,
  type CampaignsQuery,
  DEFAULT_CONVERSIONS_LIMIT,
  type FatigueRisk,
  type Unattributed
} from "../../../schema/analytics-campaigns.ts"
import { type DatabaseUnavailable, type InvalidDateRange, type InvalidParameter, NotFound } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { keysetCursor, pageOf } from "../../platform/pagination.ts"
import { AnalyticsRepo, type ProfileFacts } from "../overview/repo.ts"
import type { ReadScope } from "../sql/fragments.ts"
import { CampaignsRepo, type MetricsRow } from "./repo.ts"
import { invalidQuery } from "../../../schema/query-errors.ts"

/** `CampaignsQuery` or `AdDetailQuery` (the same fields; their `level` defaults differ). */
export type CampaignsQueryInput = CampaignsQuery
export type CampaignConversionsQueryInput = CampaignConversionsQuery

type ReadError = DatabaseUnavailable | InvalidParameter | InvalidDateRange | NotFound

const notFound = () => new NotFound({ message: "No such campaign." })

const SCALE = 1_000_000n
const toMicros = (decimal: string): bigint => {
  const [whole = "0", fraction = ""] = decimal.split(".")
  return BigInt(whole) * SCALE + BigInt(fraction.padEnd(6, "0").slice(0, 6))
}
const fromMicros = (micros: bigint): string => {
  const whole = micros / SCALE
  const fraction = (micros % SCALE).toString().padStart(6, "0").replace(/0+$/, "")
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`
}

/** spend / count, half-up to 6 decimals; null without spend or count. Spend is never negative. */
export const costPer = (spend: string | null, count: number): string | null => {
  if (spend === null || count <= 0) return null
  const n = BigInt(count)
  return fromMicros((toMicros(spend) * 2n + n) / (2n * n))
}

const reasonFor = (target: string | null, profileCurrency: string | null) =>
  target === null || profileCurrency === null ? "currency_unset" as const : "fx_rate_missing" as const

/** No learned model serves today (dated change 2026-10-09): every learned value is withheld. */
export const WITHHELD_REASON = "no_model_served"
const withheld = { value: null, status: "withheld" as const, reason: WITHHELD_REASON }

/** A measured entity without spend rows in the range: zero spend, no reported counts. */
const unspent = { spend: "0", reporting_spend: "0", reported_conversions: null, reported_chats: null }

/** `synced` once any row carries the platform's reported counts from synced insights. */
const reportedStatus = (rows: ReadonlyArray<CampaignRow>): "synced" | "not_synced" =>
  rows.some((row) => row.adplatform_reported_conversions !== null || row.adplatform_reported_chats !== null) ? "synced" : "not_synced"

const emptyMetrics = (platformId: string): MetricsRow => ({
  platform_id: platformId,
  conversions: 0,
  cash_payments: 0,
  first_payments: 0,
  credited_conversions: "0",
  by_type: {},
  outcome_value: "0",
  credited_revenue: "0",
  reporting_outcome_value: "0",
  reporting_credited_revenue: "0"
})

export class CampaignsService extends Context.Service<CampaignsService, {
  readonly campaigns: (profile: ProfileContext, query: CampaignsQueryInput) => Effect.Effect<Campaigns, ReadError>
  readonly unattributed: (profile: ProfileContext, query: CampaignsQueryInput) => Effect.Effect<Unattributed, ReadError>
  readonly conversions: (
    profile: ProfileContext,
    platformId: string,
    query: CampaignConversionsQueryInput
  ) => Effect.Effect<CampaignConversions, ReadError>
  readonly ad: (profile: ProfileContext, platformId: string, query: CampaignsQueryInput) => Effect.Effect<AdDetail, ReadError>
  readonly trend: (profile: ProfileContext, query: AnalyticsQueryInput) => Effect.Effect<AdsTrend, ReadError>
  readonly fatigueRisk: (profile: ProfileContext, query: AnalyticsQueryInput) => Effect.Effect<FatigueRisk, ReadError>
}>()("svc/CampaignsService") {
  static readonly layer = Layer.effect(CampaignsService)(
    Effect.gen(function*() {
      const analytics = yield* AnalyticsRepo
      const repo = yield* CampaignsRepo

      const factsOf = (profile: ProfileContext) =>
        Effect.flatMap(analytics.profileFacts(profile.profileId), (facts) =>
          Option.match(facts, {
            onNone: () => Effect.fail(new NotFound({ message: "No such profile." })),
            onSome: Effect.succeed
          }))

      const prepare = Effect.fnUntraced(function*(profile: ProfileContext, query: CampaignsQueryInput, fallback: CampaignLevel = "campaign") {
        const level = query.level ?? fallback
        const facts = yield* factsOf(profile)
        const parsed = yield* parseQuery(query, facts.today)
        const scope: ReadScope = {
          profileId: profile.profileId,
          timeZone: facts.time_zone,
          model: parsed.model,
          start: parsed.start,
          end: parsed.end,
          conversionKey: parsed.conversionKey,
          touchFilter: parsed.touchFilter,
          currency: facts.currency,
          reportingCurrency: facts.reporting_currency
        }
        const meta = {
          model: parsed.model,
          time_zone: facts.time_zone,
          currency: facts.currency,
          reporting_currency: facts.reporting_currency,
          filters: parsed.filters,
          level,
          range: { start: parsed.start, end: parsed.end, days: parsed.days },
          as_of: facts.as_of
        }
        return { level, facts, scope, meta }
      })

      const rowOf = (
        level: CampaignLevel,
        facts: ProfileFacts,
        platformId: string,
        synced: { readonly id: string; readonly name: string; readonly status: string; readonly learning_stage_status: CampaignRow["learning_stage_status"]; readonly campaign_objective: string | null } | undefined,
        m: MetricsRow,
        spend: {
          readonly spend: string | null
          readonly reporting_spend: string | null
          readonly reported_conversions: number | null
          readonly reported_chats: number | null
        } | null
      ): CampaignRow => {
        const reporting = facts.reporting_currency
        const spendP = spend === null ? null : spend.spend
        const spendR = spend === null || reporting === null ? null : spend.reporting_spend
        const valueR = reporting === null ? null : m.reporting_outcome_value
        const revenueR = reporting === null ? null : m.reporting_credited_revenue
        return {
          level,
          platform_id: platformId,
          id: synced?.id ?? null,
          name: synced?.name ?? null,
          status: synced?.status ?? null,
          in_synced_structure: synced !== undefined,
          outcome_count: m.cash_payments,
          outcome_count_first_payment: m.first_payments,
          attributed_outcome_count: m.conversions,
          attributed_outcomes_by_type: m.by_type,
          credited_conversions: m.credited_conversions,
          outcome_value: m.outcome_value,
          credited_revenue: m.credited_revenue,
          spend: spendP,
          roas: roasOf(m.credited_revenue, spendP),
          cac: costPer(spendP, m.cash_payments),
          cac_first_payment: costPer(spendP, m.first_payments),
          adplatform_reported_conversions: spend?.reported_conversions ?? null,
          adplatform_reported_chats: spend?.reported_chats ?? null,
          learning_stage_status: level === "ad_set" ? synced?.learning_stage_status ?? null : null,
          campaign_objective: level === "ad_set" ? synced?.campaign_objective ?? null : null,
          reporting: {
            currency: reporting,
            outcome_value: valueR,
            credited_revenue: revenueR,
            spend: spendR,
            roas: roasOf(revenueR, spendR),
            cac: costPer(spendR, m.cash_payments),
            cac_first_payment: costPer(spendR, m.first_payments)
          }
        }
      }

      const campaigns = Effect.fn("Campaigns.list")(function*(profile: ProfileContext, query: CampaignsQueryInput) {
        const { level, facts, scope, meta } = yield* prepare(profile, query)
        const head = { ...meta, adplatform_reported_status: "not_synced" as "synced" | "not_synced" }
        if (!profile.attributionEnabled) {
          return { data: [], meta: { ...head, unavailable_reason: null, reporting_unavailable_reason: null } } satisfies Campaigns
        }
        // Three independent reads, each on a connection of its own: the answer waits for the
        // slowest, not their sum (at 30M touches the ad-level read's p95 was 107 ms in sequence).
        const [metrics, spent, structure] = yield* Effect.all(
          [repo.metrics(scope, level), repo.spend(scope, level), repo.structure(scope, level)],
          { concurrency: "unbounded" }
        )
        const byId = new Map(metrics.filter((row) => row.platform_id !== "").map((row) => [row.platform_id, row] as const))
        const spendById = new Map(spent.rows.map((row) => [row.platform_id, row] as const))
        const syncedById = new Map(structure.map((row) => [row.platform_id, row] as const))
        // Synced entities, then ids the model credits or spend was recorded for before the sync showed them.
        const ids = [...new Set([...syncedById.keys(), ...byId.keys(), ...spendById.keys()])]
        const data = ids.map((platformId) => {
          const measured = spent.measured.has(platformId)
          const spend = !measured ? null : spendById.get(platformId) ?? unspent
          return rowOf(level, facts, platformId, syncedById.get(platformId), byId.get(platformId) ?? emptyMetrics(platformId), spend)
        }).sort((a, b) =>
          b.attributed_outcome_count - a.attributed_outcome_count ||
          Number(b.credited_conversions) - Number(a.credited_conversions) ||
          (a.platform_id < b.platform_id ? -1 : a.platform_id > b.platform_id ? 1 : 0)
        )
        const missing = data.some((row) => row.credited_revenue === null || row.outcome_value === null ||
          (spent.measured.has(row.platform_id) && row.spend === null))
        const reportingMissing = facts.reporting_currency === null || data.some((row) =>
          row.reporting.credited_revenue === null || row.reporting.outcome_value === null ||
          (spent.measured.has(row.platform_id) && row.reporting.spend === null))
        return {
          data,
          meta: {
            ...head,
            adplatform_reported_status: reportedStatus(data),
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(facts.reporting_currency, facts.currency) : null
          }
        } satisfies Campaigns
      })

      const unattributed = Effect.fn("Campaigns.unattributed")(function*(profile: ProfileContext, query: CampaignsQueryInput) {
        const { level, facts, scope, meta } = yield* prepare(profile, query)
        const remainder = !profile.attributionEnabled
          ? emptyMetrics("")
          : (yield* repo.metrics(scope, level)).find((row) => row.platform_id === "") ?? emptyMetrics("")
        const reporting = facts.reporting_currency
        const valueR = reporting === null ? null : remainder.reporting_outcome_value
        const revenueR = reporting === null ? null : remainder.reporting_credited_revenue
        return {
          data: {
            outcome_count: remainder.cash_payments,
            outcome_count_first_payment: remainder.first_payments,
            attributed_outcome_count: remainder.conversions,
            attributed_outcomes_by_type: remainder.by_type,
            credited_conversions: remainder.credited_conversions,
            outcome_value: remainder.outcome_value,
            credited_revenue: remainder.credited_revenue,
            reporting: { currency: reporting, outcome_value: valueR, credited_revenue: revenueR }
          },
          meta: {
            ...meta,
            unavailable_reason: remainder.outcome_value === null || remainder.credited_revenue === null
              ? reasonFor(facts.currency, facts.currency)
              : null,
            reporting_unavailable_reason: valueR === null || revenueR === null ? reasonFor(reporting, facts.currency) : null
          }
        } satisfies Unattributed
      })

      const conversions = Effect.fn("Campaigns.conversions")(function*(
        profile: ProfileContext,
        platformId: string,
        query: CampaignConversionsQueryInput
      ) {
        const limit = query.limit ?? DEFAULT_CONVERSIONS_LIMIT
        let after: { readonly occurredAt: string; readonly id: string } | null = null
        if (query.cursor !== undefined) {
          // `keysetCursor` refuses a cursor this list did not issue; an empty one reads as none, refused here.
          const keyset = yield* keysetCursor(query.cursor)
          if (Option.isNone(keyset)) return yield* invalidQuery("cursor", "not a cursor this list issued")
          after = { occurredAt: keyset.value.createdAt, id: keyset.value.id }
        }
        const { facts, scope, meta } = yield* prepare(profile, query)
        if (!(yield* repo.known(profile.profileId, "campaign", platformId))) return yield* notFound()
        const head = { model: meta.model, time_zone: facts.time_zone, platform_id: platformId, range: meta.range }
        if (!profile.attributionEnabled) {
          return { data: [], pagination: { has_next: false, cursor: null }, meta: head } satisfies CampaignConversions
        }
        const rows = yield* repo.conversions(scope, { platformId, after, take: limit + 1 })
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.occurred_at, id: row.id }))
        return { data: page, pagination, meta: head } satisfies CampaignConversions
      })

      const ad = Effect.fn("Campaigns.ad")(function*(profile: ProfileContext, platformId: string, query: CampaignsQueryInput) {
        const { level, facts, scope, meta } = yield* prepare(profile, query, "ad")
        if (!(yield* repo.known(profile.profileId, level, platformId))) {
          return yield* new NotFound({ message: "No such ad, ad set or campaign." })
        }
        const [synced] = yield* repo.structure({ ...scope, touchFilter: null }, level, platformId)
        const learned = {
          top_performer_likelihood: withheld,
          hazard_30d_pause: withheld,
          hazard_30d_degradation: withheld,
          fatigue_risk_tier: withheld,
          expected_lifespan_days: withheld
        }
        const head = { ...meta, adplatform_reported_status: "not_synced" as "synced" | "not_synced" }
        if (!profile.attributionEnabled) {
          return {
            data: { ...rowOf(level, facts, platformId, synced, emptyMetrics(platformId), null), learned },
            meta: { ...head, unavailable_reason: null, reporting_unavailable_reason: null }
          } satisfies AdDetail
        }
        const metrics = (yield* repo.metrics(scope, level, platformId)).find((row) => row.platform_id === platformId)
        const spent = yield* repo.spend(scope, level, platformId)
        const spend = !spent.measured.has(platformId) ? null : spent.rows[0] ?? unspent
        const row = rowOf(level, facts, platformId, synced, metrics ?? emptyMetrics(platformId), spend)
        const missing = row.credited_revenue === null || row.outcome_value === null || (spend !== null && row.spend === null)
        const reportingMissing = facts.reporting_currency === null || row.reporting.credited_revenue === null ||
          row.reporting.outcome_value === null || (spend !== null && row.reporting.spend === null)
        return {
          data: { ...row, learned },
          meta: {
            ...head,
            adplatform_reported_status: reportedStatus([row]),
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(facts.reporting_currency, facts.currency) : null
          }
        } satisfies AdDetail
      })

      const trend = Effect.fn("Campaigns.trend")(function*(profile: ProfileContext, query: AnalyticsQueryInput) {
        const { facts, scope, meta } = yield* prepare(profile, query, "ad")
        const head = {
          model: meta.model,
          time_zone: meta.time_zone,
          currency: meta.currency,
          reporting_currency: meta.reporting_currency,
          filters: meta.filters,
          range: meta.range,
          as_of: meta.as_of,
          messaging_status: "not_synced" as const
        }
        if (!profile.attributionEnabled) {
          return { data: [], meta: { ...head, spend_measured: false, unavailable_reason: null, reporting_unavailable_reason: null } } satisfies AdsTrend
        }
        const answer = yield* repo.trend(scope)
        const byDay = new Map(answer.days.map((row) => [row.day, row] as const))
        const spendByDay = new Map(answer.spend.map((row) => [row.day, row] as const))
        const reporting = facts.reporting_currency
        let missing = false
        let reportingMissing = reporting === null
        const data = Array.from({ length: meta.range.days }, (_, i) => {
          const date = addDays(meta.range.start, i)
          const row = byDay.get(date)
          const spendRow = spendByDay.get(date)
          const revenue = row === undefined ? "0" : row.credited_revenue
          const spend = !answer.measured ? null : spendRow === undefined ? "0" : spendRow.spend
          const reportingRevenue = reporting === null ? null : row === undefined ? "0" : row.reporting_credited_revenue
          const reportingSpend = reporting === null || !answer.measured ? null : spendRow === undefined ? "0" : spendRow.reporting_spend
          if (revenue === null || (answer.measured && spend === null)) missing = true
          if (reportingRevenue === null || (answer.measured && reportingSpend === null)) reportingMissing = true
          return {
            date,
            attributed_outcome_count: row?.conversions ?? 0,
            outcome_count: row?.cash_payments ?? 0,
            outcome_count_first_payment: row?.first_payments ?? 0,
            credited_conversions: row?.credited_conversions ?? "0",
            credited_revenue: revenue,
            spend,
            messaging_conversations_started_7d: null,
            reporting: { credited_revenue: reportingRevenue, spend: reportingSpend }
          }
        })
        return {
          data,
          meta: {
            ...head,
            spend_measured: answer.measured,
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(reporting, facts.currency) : null
          }
        } satisfies AdsTrend
      })

      const fatigueRisk = Effect.fn("Campaigns.fatigueRisk")(function*(profile: ProfileContext, query: AnalyticsQueryInput) {
        const { meta } = yield* prepare(profile, query, "ad")
        return {
          data: { model: { status: "withheld" as const, reason: WITHHELD_REASON }, ads: [] },
          meta: { model: meta.model, time_zone: meta.time_zone, filters: meta.filters, range: meta.range }
        } satisfies FatigueRisk
      })

      return { campaigns, unattributed, conversions, ad, trend, fatigueRisk }
    })
  ).pipe(Layer.provide([AnalyticsRepo.layer, CampaignsRepo.layer]))
}
