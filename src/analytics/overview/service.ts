/**
 * Analytics reads (decision 0041): the common parameters (range, model, filters), then the
 * overview, the daily timeseries and the breakdowns, all from the rollups (repo.ts). A profile
 * on the connect-broker tier gets every read answered empty, after its parameters were checked.
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  type AnalyticsQuery,
  type BreakdownDimension,
  type Breakdown,
  type BreakdownQuery,
  DEFAULT_RANGE_DAYS,
  MAX_RANGE_DAYS,
  type Overview,
  type OverviewPeriod,
  type Timeseries,
  TOUCH_FILTERS,
  type TouchFilter
} from "../../../schema/analytics.ts"
import { type DatabaseUnavailable, InvalidDateRange, type InvalidParameter, NotFound } from "../../../schema/errors.ts"
import type { CreditModel } from "../../../schema/events.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { AnalyticsRepo, type ProfileFacts } from "./repo.ts"
import type { ReadScope } from "../sql/fragments.ts"
import { invalidQuery } from "../../../schema/query-errors.ts"

export { DEFAULT_RANGE_DAYS, MAX_RANGE_DAYS }
export const DEFAULT_BREAKDOWN_LIMIT = 50

/** The common parameters, decoded by the contract (`AnalyticsQuery`). */
export type AnalyticsQueryInput = AnalyticsQuery
export type BreakdownQueryInput = BreakdownQuery

type ReadError = DatabaseUnavailable | InvalidParameter | InvalidDateRange | NotFound

const badRange = (message: string) => new InvalidDateRange({ message, reason: "invalid_date_range" })

const DAY_MS = 86_400_000
const dayNumber = (date: string) => Date.parse(`${date}T00:00:00Z`) / DAY_MS
const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)
export const addDays = (date: string, days: number) => dateOf(dayNumber(date) + days)

interface Parsed {
  readonly start: string
  readonly end: string
  readonly days: number
  readonly model: CreditModel
  readonly conversionKey: string | null
  readonly touchFilter: ReadScope["touchFilter"]
  readonly filters: Overview["data"]["filters"]
}

/**
 * The rules across the common parameters (each one alone was decoded by the contract), in a
 * fixed order; `today` is the profile's.
 */
export const parseQuery = (query: AnalyticsQueryInput, today: string): Effect.Effect<Parsed, InvalidParameter | InvalidDateRange> =>
  Effect.gen(function*() {
    const model: CreditModel = query.model ?? "last_touch"
    const given = TOUCH_FILTERS.filter((name) => query[name] !== undefined)
    const second = given[1]
    if (second !== undefined) {
      return yield* invalidQuery(second, `combine at most one of ${TOUCH_FILTERS.join(", ")} (${given[0]} is already set)`)
    }
    const filterName: TouchFilter | undefined = given[0]
    const touchFilter = filterName === undefined ? null : { dimension: filterName, value: query[filterName] ?? "" }

    let start: string
    let end: string
    if (query.days !== undefined) {
      if (query.start !== undefined || query.end !== undefined) return yield* invalidQuery("days", "not with start or end")
      end = today
      start = addDays(today, 1 - query.days)
    } else if (query.start !== undefined || query.end !== undefined) {
      if (query.start === undefined) return yield* badRange("query.end: needs start")
      start = query.start
      end = query.end ?? today
      if (dayNumber(start) > dayNumber(end)) return yield* badRange(`start (${start}) is after end (${end})`)
      const span = dayNumber(end) - dayNumber(start) + 1
      if (span > MAX_RANGE_DAYS) return yield* badRange(`The range spans ${span} days; at most ${MAX_RANGE_DAYS}`)
    } else {
      end = today
      start = addDays(today, 1 - DEFAULT_RANGE_DAYS)
    }
    return {
      start,
      end,
      days: dayNumber(end) - dayNumber(start) + 1,
      model,
      conversionKey: query.conversion_key ?? null,
      touchFilter,
      filters: {
        channel: query.channel ?? null,
        campaign: query.campaign ?? null,
        ad_set: query.ad_set ?? null,
        ad: query.ad ?? null,
        conversion_key: query.conversion_key ?? null
      }
    } satisfies Parsed
  })

const SCALE = 1_000_000n
const toMicros = (decimal: string): bigint => {
  const negative = decimal.startsWith("-")
  const [whole = "0", fraction = ""] = (negative ? decimal.slice(1) : decimal).split(".")
  const micros = BigInt(whole) * SCALE + BigInt(fraction.padEnd(6, "0").slice(0, 6))
  return negative ? -micros : micros
}

/** revenue / spend rounded half-up to 4 decimals; null without a spend or when it is zero. */
export const roasOf = (revenue: string | null, spend: string | null): string | null => {
  if (revenue === null || spend === null) return null
  const numerator = toMicros(revenue)
  const denominator = toMicros(spend)
  if (denominator <= 0n) return null
  const scaled = (numerator * 10_000n * 2n + denominator) / (2n * denominator)
  const whole = scaled / 10_000n
  const fraction = (scaled % 10_000n).toString().padStart(4, "0").replace(/0+$/, "")
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`
}

const reasonFor = (target: string | null, profileCurrency: string | null) =>
  target === null || profileCurrency === null ? "currency_unset" as const : "fx_rate_missing" as const

export class AnalyticsService extends Context.Service<AnalyticsService, {
  readonly overview: (profile: ProfileContext, query: AnalyticsQueryInput) => Effect.Effect<Overview, ReadError>
  readonly timeseries: (profile: ProfileContext, query: AnalyticsQueryInput) => Effect.Effect<Timeseries, ReadError>
  readonly breakdown: (profile: ProfileContext, dimension: BreakdownDimension, query: BreakdownQueryInput) => Effect.Effect<Breakdown, ReadError>
}>()("svc/AnalyticsService") {
  static readonly layer = Layer.effect(AnalyticsService)(
    Effect.gen(function*() {
      const repo = yield* AnalyticsRepo

      const factsOf = (profile: ProfileContext) =>
        Effect.flatMap(repo.profileFacts(profile.profileId), (facts) =>
          Option.match(facts, {
            onNone: () => Effect.fail(new NotFound({ message: "No such profile." })),
            onSome: Effect.succeed
          }))

      const scopeOf = (profile: ProfileContext, facts: ProfileFacts, parsed: Parsed, start: string, end: string): ReadScope => ({
        profileId: profile.profileId,
        timeZone: facts.time_zone,
        model: parsed.model,
        start,
        end,
        conversionKey: parsed.conversionKey,
        touchFilter: parsed.touchFilter,
        currency: facts.currency,
        reportingCurrency: facts.reporting_currency
      })

      const meta = (facts: ProfileFacts, parsed: Parsed) => ({
        model: parsed.model,
        time_zone: facts.time_zone,
        currency: facts.currency,
        reporting_currency: facts.reporting_currency,
        filters: parsed.filters
      })

      const emptyPeriod = (facts: ProfileFacts, start: string, end: string): OverviewPeriod => ({
        start,
        end,
        outcomes: 0,
        business_conversions: 0,
        cash_payments: 0,
        first_payments: 0,
        credited_conversions: "0",
        revenue: "0",
        spend: null,
        roas: null,
        unavailable_reason: null,
        reporting: {
          currency: facts.reporting_currency,
          revenue: facts.reporting_currency === null ? null : "0",
          spend: null,
          roas: null,
          unavailable_reason: facts.reporting_currency === null ? "currency_unset" : null
        }
      })

      const period = Effect.fnUntraced(function*(scope: ReadScope, facts: ProfileFacts) {
        const [row] = yield* repo.measures(scope, false)
        const spent = yield* repo.spend(scope, false)
        const spendRow = spent.rows[0]
        const spend = !spent.measured ? null : spendRow === undefined ? "0" : spendRow.spend
        const revenue = row === undefined ? "0" : row.revenue
        const missing = revenue === null || (spent.measured && spend === null)
        const reportingCurrency = facts.reporting_currency
        const reportingRevenue = reportingCurrency === null ? null : row === undefined ? "0" : row.reporting_revenue
        const reportingSpend = reportingCurrency === null || !spent.measured ? null : spendRow === undefined ? "0" : spendRow.reporting_spend
        const reportingMissing = reportingCurrency === null || reportingRevenue === null || (spent.measured && reportingSpend === null)
        return {
          start: scope.start,
          end: scope.end,
          outcomes: row?.outcomes ?? 0,
          business_conversions: row?.outcomes ?? 0,
          cash_payments: row?.cash_payments ?? 0,
          first_payments: row?.first_payments ?? 0,
          credited_conversions: row?.credited_conversions ?? "0",
          revenue,
          spend,
          roas: roasOf(revenue, spend),
          unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
          reporting: {
            currency: reportingCurrency,
            revenue: reportingRevenue,
            spend: reportingSpend,
            roas: roasOf(reportingRevenue, reportingSpend),
            unavailable_reason: reportingMissing ? reasonFor(reportingCurrency, facts.currency) : null
          }
        } satisfies OverviewPeriod
      })

      const overview = Effect.fn("Analytics.overview")(function*(profile: ProfileContext, query: AnalyticsQueryInput) {
        const facts = yield* factsOf(profile)
        const parsed = yield* parseQuery(query, facts.today)
        const previousEnd = addDays(parsed.start, -1)
        const previousStart = addDays(parsed.start, -parsed.days)
        if (!profile.attributionEnabled) {
          return {
            data: {
              ...meta(facts, parsed),
              spend_measured: false,
              current: emptyPeriod(facts, parsed.start, parsed.end),
              previous: emptyPeriod(facts, previousStart, previousEnd)
            },
            meta: { as_of: facts.as_of }
          } satisfies Overview
        }
        const current = yield* period(scopeOf(profile, facts, parsed, parsed.start, parsed.end), facts)
        const previous = yield* period(scopeOf(profile, facts, parsed, previousStart, previousEnd), facts)
        return {
          data: { ...meta(facts, parsed), spend_measured: current.spend !== null || previous.spend !== null, current, previous },
          meta: { as_of: facts.as_of }
        } satisfies Overview
      })

      const timeseries = Effect.fn("Analytics.timeseries")(function*(profile: ProfileContext, query: AnalyticsQueryInput) {
        const facts = yield* factsOf(profile)
        const parsed = yield* parseQuery(query, facts.today)
        const range = { start: parsed.start, end: parsed.end, days: parsed.days }
        const head = { ...meta(facts, parsed), granularity: "day" as const, range, as_of: facts.as_of }
        if (!profile.attributionEnabled) {
          return {
            data: [],
            meta: { ...head, spend_measured: false, unavailable_reason: null, reporting_unavailable_reason: null }
          } satisfies Timeseries
        }
        const scope = scopeOf(profile, facts, parsed, parsed.start, parsed.end)
        const measured = new Map((yield* repo.measures(scope, true)).map((row) => [row.day ?? "", row] as const))
        const spent = yield* repo.spend(scope, true)
        const spendByDay = new Map(spent.rows.map((row) => [row.day ?? "", row] as const))
        const reporting = facts.reporting_currency
        let missing = false
        let reportingMissing = reporting === null
        const data = Array.from({ length: parsed.days }, (_, i) => {
          const date = addDays(parsed.start, i)
          const row = measured.get(date)
          const spendRow = spendByDay.get(date)
          const revenue = row === undefined ? "0" : row.revenue
          const spend = !spent.measured ? null : spendRow === undefined ? "0" : spendRow.spend
          const reportingRevenue = reporting === null ? null : row === undefined ? "0" : row.reporting_revenue
          const reportingSpend = reporting === null || !spent.measured ? null : spendRow === undefined ? "0" : spendRow.reporting_spend
          if (revenue === null || (spent.measured && spend === null)) missing = true
          if (reportingRevenue === null || (spent.measured && reportingSpend === null)) reportingMissing = true
          return {
            date,
            outcomes: row?.outcomes ?? 0,
            cash_payments: row?.cash_payments ?? 0,
            first_payments: row?.first_payments ?? 0,
            credited_conversions: row?.credited_conversions ?? "0",
            revenue,
            spend,
            reporting: { revenue: reportingRevenue, spend: reportingSpend }
          }
        })
        return {
          data,
          meta: {
            ...head,
            spend_measured: spent.measured,
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(reporting, facts.currency) : null
          }
        } satisfies Timeseries
      })

      const breakdown = Effect.fn("Analytics.breakdown")(function*(
        profile: ProfileContext,
        dimension: BreakdownDimension,
        query: BreakdownQueryInput
      ) {
        const limit = query.limit ?? DEFAULT_BREAKDOWN_LIMIT
        const facts = yield* factsOf(profile)
        const parsed = yield* parseQuery(query, facts.today)
        const head = { ...meta(facts, parsed), dimension, range: { start: parsed.start, end: parsed.end, days: parsed.days }, as_of: facts.as_of }
        if (!profile.attributionEnabled) {
          return { data: [], meta: { ...head, rows_total: 0, unavailable_reason: null, reporting_unavailable_reason: null } } satisfies Breakdown
        }
        const rows = yield* repo.breakdown(scopeOf(profile, facts, parsed, parsed.start, parsed.end), dimension)
        const reporting = facts.reporting_currency
        const missing = rows.some((row) => row.credited_revenue === null)
        const reportingMissing = reporting === null || rows.some((row) => row.reporting_credited_revenue === null)
        return {
          data: rows.slice(0, limit).map((row) => ({
            value: row.value === "" ? null : row.value,
            touches: row.touches,
            conversions: row.conversions,
            cash_payments: row.cash_payments,
            first_payments: row.first_payments,
            credited_conversions: row.credited_conversions,
            credited_revenue: row.credited_revenue,
            reporting_credited_revenue: reporting === null ? null : row.reporting_credited_revenue
          })),
          meta: {
            ...head,
            rows_total: rows.length,
            unavailable_reason: missing ? reasonFor(facts.currency, facts.currency) : null,
            reporting_unavailable_reason: reportingMissing ? reasonFor(reporting, facts.currency) : null
          }
        } satisfies Breakdown
      })

      return { overview, timeseries, breakdown }
    })
  ).pipe(Layer.provide(AnalyticsRepo.layer))
}
