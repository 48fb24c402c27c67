/**
 * From an experiment and the outcome series it reads to its results and designs (decision 0122):
 * pure functions over the statistics core, no I/O, so the numbers an API answer gives are the
 * statistics functions' numbers.
 */
import { createHash } from "node:crypto"
import type {
  Check,
  Design,
  ExperimentConfig,
  ExperimentKind,
  ExperimentResults,
  IntervalWire,
  Metric,
  RoasUnavailableReason,
  ScheduleDay
} from "../../schema/experiments.ts"
import {
  analyseSwitchback,
  bootstrapMeanDifference,
  compareProportions,
  createRandom,
  dateOf,
  dayNumber,
  type Estimate,
  prePostDesign,
  type Estimated,
  sampleRatioMismatch,
  sampleSizeTwoMeans,
  sampleSizeTwoProportions,
  switchbackDays,
  syntheticControl,
  tooFewOutcomes
} from "./statistics/index.ts"

/** Fewer outcomes than this in a group (conversions, or days of an arm) fails `too_few_outcomes`. */
export const MINIMUM_OUTCOMES = 10
/** Resamples of the value bootstrap. */
export const BOOTSTRAP_RESAMPLES = 2000
/** The credit model whose campaign series a pre/post reads. */
export const PRE_POST_MODEL = "last_touch"

/** A uniform number in [0, 1) from the salt and a key: stable for a customer within an experiment. */
export const unitHash = (salt: string, key: string): number =>
  createHash("sha256").update(`${salt}:${key}`).digest().readUInt32BE(0) / 2 ** 32

/** Whether a customer is held out (the control group) of an audience holdout. */
export const heldOut = (salt: string, customerId: string, fraction: number): boolean => unitHash(salt, customerId) < fraction

/** The integer seed a salt gives the schedule and the bootstrap. */
export const seedOf = (salt: string, purpose: string): number =>
  createHash("sha256").update(`${purpose}:${salt}`).digest().readInt32BE(0)

/** Every day of `[start, end]`. */
export const daysOf = (start: string, end: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (let d = dayNumber(start); d <= dayNumber(end); d++) out.push(dateOf(d))
  return out
}

/**
 * Whole days on and off, balanced within each consecutive pair (one on, one off, in a seeded
 * random order), so every week holds both arms and a later executor can pause on off days and
 * resume on on days through the ad-action entities.
 */
export const switchbackSchedule = (salt: string, start: string, end: string): ReadonlyArray<ScheduleDay> => {
  const random = createRandom(seedOf(salt, "schedule"))
  const out: Array<ScheduleDay> = []
  let first = true
  for (const [i, date] of daysOf(start, end).entries()) {
    // The first day of a pair is drawn; the second takes the other arm (a last unpaired day keeps its draw).
    if (i % 2 === 0) first = random.uniform() < 0.5
    out.push({ date, on: i % 2 === 0 ? first : !first })
  }
  return out
}

const wire = (e: Estimate): IntervalWire => ({ estimate: e.estimate, lower: e.lower, upper: e.upper, level: e.level })
const wireOrNull = (e: Estimated): IntervalWire | null => e._tag === "Estimate" ? wire(e) : null
const scaled = (e: Estimate, by: number): IntervalWire => ({ estimate: e.estimate * by, lower: e.lower * by, upper: e.upper * by, level: e.level })

export interface Analysed {
  readonly start: string
  readonly end: string
}

type ResultCore = Omit<
  ExperimentResults,
  "experiment_id" | "kind" | "status" | "metric" | "window" | "analysed" | "spend" | "incremental_roas" | "incremental_roas_unavailable"
>

const failed = (checks: ReadonlyArray<Check>) => checks.filter((c) => !c.passed).map((c) => c.name)

const noData = (reason: string, method: string, checks: ReadonlyArray<Check>, figures: Pick<ResultCore, "treatment" | "control">, fit: ResultCore["fit"] = null): ResultCore => ({
  method,
  ...figures,
  absolute_lift: null,
  relative_lift: null,
  incremental_conversions: null,
  incremental_value: null,
  insufficient_data: { reason },
  checks,
  failed_checks: failed(checks),
  fit
})

export interface CustomerFigures {
  readonly conversions: number
  readonly value: number
}

/**
 * An audience holdout: exposed (treatment) against held-out (control) customers of the list.
 * Count: the share of customers converting, Newcombe's hybrid score interval; value: value per
 * customer, a seeded percentile bootstrap. Sample-ratio and outcome-count checks either way.
 */
export const holdoutResults = (
  metric: Metric,
  fraction: number,
  salt: string,
  members: ReadonlyArray<string>,
  outcomes: ReadonlyMap<string, CustomerFigures>
): ResultCore => {
  const treatment: Array<CustomerFigures> = []
  const control: Array<CustomerFigures> = []
  for (const id of members) {
    const figures = outcomes.get(id) ?? { conversions: 0, value: 0 }
    ;(heldOut(salt, id, fraction) ? control : treatment).push(figures)
  }
  const sum = (g: ReadonlyArray<CustomerFigures>, f: (x: CustomerFigures) => number) => g.reduce((s, x) => s + f(x), 0)
  const group = (g: ReadonlyArray<CustomerFigures>) => ({ size: g.length, conversions: sum(g, (x) => x.conversions), value: sum(g, (x) => x.value) })
  const figures = { treatment: group(treatment), control: group(control) }
  const converting = (g: ReadonlyArray<CustomerFigures>) => g.filter((x) => x.conversions > 0).length
  const srm = sampleRatioMismatch([treatment.length, control.length], [1 - fraction, fraction])
  const few = tooFewOutcomes([
    { name: "treatment", outcomes: converting(treatment) },
    { name: "control", outcomes: converting(control) }
  ], MINIMUM_OUTCOMES)
  const checks: ReadonlyArray<Check> = [
    {
      name: "sample_ratio_mismatch",
      passed: !srm.mismatch,
      detail: `chi-square ${srm.statistic.toFixed(3)}, p ${srm.pValue.toPrecision(3)} against a ${1 - fraction}/${fraction} split`
    },
    {
      name: "too_few_outcomes",
      passed: few.sufficient,
      detail: few.sufficient ? `at least ${MINIMUM_OUTCOMES} converting customers per group` : `fewer than ${MINIMUM_OUTCOMES} converting customers: ${few.short.join(", ")}`
    }
  ]
  if (metric.measure === "count") {
    const method = "difference of proportions of converting customers, Newcombe hybrid score interval"
    const compared = compareProportions(
      { conversions: converting(treatment), size: treatment.length },
      { conversions: converting(control), size: control.length },
      { minimumConversions: MINIMUM_OUTCOMES }
    )
    if (compared._tag === "InsufficientData") return noData(compared.reason, method, checks, figures)
    return {
      method,
      ...figures,
      absolute_lift: wire(compared),
      relative_lift: wireOrNull(compared.relativeLift),
      incremental_conversions: wire(compared.incrementalConversions),
      incremental_value: null,
      insufficient_data: null,
      checks,
      failed_checks: failed(checks),
      fit: null
    }
  }
  const method = `difference of mean value per customer, percentile bootstrap (${BOOTSTRAP_RESAMPLES} resamples)`
  const boot = bootstrapMeanDifference(treatment.map((x) => x.value), control.map((x) => x.value), {
    seed: seedOf(salt, "bootstrap"),
    resamples: BOOTSTRAP_RESAMPLES
  })
  if (boot._tag === "InsufficientData") return noData(boot.reason, method, checks, figures)
  return {
    method,
    ...figures,
    absolute_lift: wire(boot),
    relative_lift: wireOrNull(boot.relativeLift),
    incremental_conversions: null,
    // The lift per customer over the exposed customers.
    incremental_value: scaled(boot, figures.treatment.size),
    insufficient_data: null,
    checks,
    failed_checks: failed(checks),
    fit: null
  }
}

export interface DayFigures {
  readonly conversions: number
  readonly value: number
}

const measureOf = (metric: Metric, figures: DayFigures | undefined) =>
  figures === undefined ? 0 : metric.measure === "count" ? figures.conversions : figures.value

/** A switchback: daily outcomes on on/off with day-of-week controls, OLS with HC1 errors. */
export const switchbackResults = (
  metric: Metric,
  schedule: ReadonlyArray<ScheduleDay>,
  analysed: Analysed,
  perDay: ReadonlyMap<string, DayFigures>
): ResultCore => {
  const from = dayNumber(analysed.start)
  const to = dayNumber(analysed.end)
  const days = schedule.filter((d) => dayNumber(d.date) >= from && dayNumber(d.date) <= to)
  const arm = (on: boolean) => {
    const these = days.filter((d) => d.on === on)
    return {
      size: these.length,
      conversions: these.reduce((s, d) => s + (perDay.get(d.date)?.conversions ?? 0), 0),
      value: these.reduce((s, d) => s + (perDay.get(d.date)?.value ?? 0), 0)
    }
  }
  const figures = { treatment: arm(true), control: arm(false) }
  const few = tooFewOutcomes([{ name: "on", outcomes: figures.treatment.size }, { name: "off", outcomes: figures.control.size }], 3)
  const checks: ReadonlyArray<Check> = [{
    name: "too_few_outcomes",
    passed: few.sufficient,
    detail: few.sufficient ? "at least 3 days in each arm" : `fewer than 3 days: ${few.short.join(", ")}`
  }]
  const method = "regression of daily outcomes on on/off with day-of-week controls, OLS with HC1 standard errors"
  const estimate = analyseSwitchback(
    days.map((d) => ({ date: d.date, on: d.on, outcomes: measureOf(metric, perDay.get(d.date)) })),
    { standardErrors: "hc1" }
  )
  if (estimate._tag === "InsufficientData") return noData(estimate.reason, method, checks, figures)
  const onDays = figures.treatment.size
  return {
    method,
    ...figures,
    absolute_lift: wire(estimate),
    relative_lift: wireOrNull(estimate.relativeLift),
    // Per on day times the on days: what the campaign added over the analysed days.
    incremental_conversions: metric.measure === "count" ? scaled(estimate, onDays) : null,
    incremental_value: metric.measure === "value" ? scaled(estimate, onDays) : null,
    insufficient_data: null,
    checks,
    failed_checks: failed(checks),
    fit: null
  }
}

export interface CampaignSeries {
  readonly campaignId: string
  readonly byDay: ReadonlyMap<string, DayFigures>
}

/** A pre/post: the target's credited daily outcomes against a simplex-weighted synthetic control of the other campaigns. */
export const prePostResults = (
  metric: Metric,
  targetId: string,
  preDays: number,
  analysed: Analysed,
  series: ReadonlyArray<CampaignSeries>
): ResultCore => {
  const preStart = dateOf(dayNumber(analysed.start) - preDays)
  const all = daysOf(preStart, analysed.end)
  const values = (s: CampaignSeries | undefined) => all.map((d) => measureOf(metric, s?.byDay.get(d)))
  const target = values(series.find((s) => s.campaignId === targetId))
  // A donor with no outcome in the pre-period can carry no weight there: left out.
  const donors = series.filter((s) => s.campaignId !== targetId).map(values).filter((v) => v.slice(0, preDays).some((x) => x !== 0))
  const postDays = all.length - preDays
  const post = target.slice(preDays)
  const method = `synthetic control: simplex-weighted other campaigns (credit model ${PRE_POST_MODEL}), t interval with AR(1)-adjusted degrees of freedom`
  const estimate = syntheticControl({ target, donors, preDays })
  const actual = { size: postDays, conversions: metric.measure === "count" ? post.reduce((a, b) => a + b, 0) : 0, value: metric.measure === "value" ? post.reduce((a, b) => a + b, 0) : 0 }
  if (estimate._tag === "InsufficientData") {
    const checks: ReadonlyArray<Check> = [{ name: "pre_period_fit", passed: false, detail: estimate.reason }]
    return noData(estimate.reason, method, checks, { treatment: actual, control: { size: postDays, conversions: 0, value: 0 } })
  }
  const counterfactual = estimate.counterfactualTotal
  const checks: ReadonlyArray<Check> = [{
    name: "pre_period_fit",
    passed: estimate.fit.sufficient,
    detail: `pre-period R² ${estimate.fit.rSquared.toFixed(3)} (at least ${estimate.fit.minimumRSquared}), RMSPE ${estimate.fit.rmspe.toPrecision(4)}`
  }]
  const fit = { r_squared: estimate.fit.rSquared, rmspe: estimate.fit.rmspe, pre_days: preDays, donors: donors.length }
  return {
    method,
    treatment: actual,
    control: {
      size: postDays,
      conversions: metric.measure === "count" ? counterfactual : 0,
      value: metric.measure === "value" ? counterfactual : 0
    },
    // The estimate is the total effect over the post days; per day is the lift in the metric's unit.
    absolute_lift: wire(estimate.perDay),
    relative_lift: wireOrNull(estimate.relativeLift),
    incremental_conversions: metric.measure === "count" ? wire(estimate) : null,
    incremental_value: metric.measure === "value" ? wire(estimate) : null,
    insufficient_data: null,
    checks,
    failed_checks: failed(checks),
    fit
  }
}

export interface DesignInput {
  readonly kind: Design["kind"]
  readonly metric: Metric
  readonly minimumEffect: number
  readonly effectKind: "relative" | "absolute"
  readonly confidence: number
  readonly power: number
  readonly historyDays: number
  readonly holdoutFraction: number
  readonly windowDays: number | null
  /** pre_post: days each fit reads. */
  readonly preDays: number
}

const mean = (xs: ReadonlyArray<number>) => xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length
const sd = (xs: ReadonlyArray<number>) => {
  if (xs.length < 2) return 0
  const m = mean(xs)
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1))
}

/** Over a window's length of history, a list too small for the effect is a window too short to show it. */
const shortOf = (input: DesignInput) => input.windowDays === null ? "list_too_small" : "window_too_short"

/** What every design answers of its input, as asked. */
const askedOf = (input: DesignInput) => ({
  kind: input.kind,
  metric: input.metric,
  minimum_detectable_effect: input.minimumEffect,
  effect_kind: input.effectKind,
  confidence: input.confidence,
  power: input.power,
  history_days: input.historyDays,
  window_days: input.windowDays
})

/**
 * A holdout's design from the list's last `historyDays`: per-customer conversion rate (count) or
 * value mean and SD (value) to the sample per group; the list's size to whether the split reaches it.
 */
export const holdoutDesign = (input: DesignInput, perCustomer: ReadonlyArray<CustomerFigures>, members: number): Design => {
  const warnings: Array<string> = []
  const base = { ...askedOf(input), required_days: null }
  const alpha = 1 - input.confidence
  const share = 1 - input.holdoutFraction
  if (members === 0) {
    return { ...base, method: "none: the customer list is empty", baseline: { customers: 0, conversion_rate: null, mean: null, sd: null }, required_sample: null, warnings: ["no_history"] }
  }
  const padded = [...perCustomer, ...Array.from({ length: Math.max(0, members - perCustomer.length) }, () => ({ conversions: 0, value: 0 }))]
  if (input.metric.measure === "count") {
    const rate = padded.filter((x) => x.conversions > 0).length / members
    if (rate <= 0 || rate >= 1) {
      return { ...base, method: "two proportions, normal approximation", baseline: { customers: members, conversion_rate: rate, mean: null, sd: null }, required_sample: null, warnings: ["no_history"] }
    }
    const size = sampleSizeTwoProportions({ baseline: rate, minimumEffect: input.minimumEffect, effectKind: input.effectKind, alpha, power: input.power, treatmentShare: share })
    if (size.total > members) warnings.push(shortOf(input))
    return { ...base, method: "two proportions, normal approximation", baseline: { customers: members, conversion_rate: rate, mean: null, sd: null }, required_sample: size, warnings }
  }
  const values = padded.map((x) => x.value)
  const m = mean(values)
  const s = sd(values)
  if (!(s > 0) || !(m > 0)) {
    return { ...base, method: "two means, normal approximation", baseline: { customers: members, conversion_rate: null, mean: m, sd: s }, required_sample: null, warnings: ["no_history"] }
  }
  const size = sampleSizeTwoMeans({ mean: m, sd: s, minimumEffect: input.minimumEffect, effectKind: input.effectKind, alpha, power: input.power, treatmentShare: share })
  if (size.total > members) warnings.push(shortOf(input))
  return { ...base, method: "two means, normal approximation", baseline: { customers: members, conversion_rate: null, mean: m, sd: s }, required_sample: size, warnings }
}

/** A switchback's (or pre/post's) design from the daily series of the last `historyDays`: the days needed. */
export const daysDesign = (input: DesignInput, daily: ReadonlyArray<number>): Design => {
  const m = mean(daily)
  const s = sd(daily)
  const base = {
    ...askedOf(input),
    required_sample: null,
    baseline: { customers: null, conversion_rate: null, mean: m, sd: s },
    method: "switchback regression power, shifted t approximation, day-of-week controls"
  }
  if (!(s > 0) || !(m > 0)) return { ...base, required_days: null, warnings: ["no_history"] }
  const { days } = switchbackDays({
    dailyMean: m,
    dailySd: s,
    minimumEffect: input.minimumEffect,
    effectKind: input.effectKind,
    alpha: 1 - input.confidence,
    power: input.power
  })
  const warnings = input.windowDays !== null && input.windowDays < days ? ["window_too_short"] : []
  return { ...base, required_days: days, warnings }
}

/** The days a kind's treatment ran within the analysed days: a switchback's on days, else every analysed day. */
export const treatmentDays = (kind: ExperimentKind, config: ExperimentConfig, analysed: Analysed): ReadonlyArray<string> =>
  kind === "switchback"
    ? (config.schedule ?? []).filter((d) => d.on && d.date >= analysed.start && d.date <= analysed.end).map((d) => d.date)
    : daysOf(analysed.start, analysed.end)

/** The spend of the target on the treatment days as read (null: no target to read it for). */
export interface SpendRead {
  readonly known: boolean
  readonly currency: string | null
  /** Days with spend only; `amount` null when that day's spend could not be converted. */
  readonly days: ReadonlyArray<{ readonly day: string; readonly amount: number | null }>
}

export type RoasFields = Pick<ExperimentResults, "spend" | "incremental_roas" | "incremental_roas_unavailable">

/**
 * Incremental ROAS: incremental value over the target's spend on the treatment days. Spend is
 * taken as exact, so the interval is the value interval's bounds over it.
 */
export const incrementalRoas = (
  incrementalValue: IntervalWire | null,
  treatment: ReadonlyArray<string>,
  spend: SpendRead | null
): RoasFields => {
  const none = (reason: RoasUnavailableReason, known: RoasFields["spend"] = null): RoasFields => ({
    spend: known,
    incremental_roas: null,
    incremental_roas_unavailable: { reason }
  })
  if (spend === null) return none("no_spend_target")
  if (!spend.known) return none("spend_unknown")
  const inTreatment = new Set(treatment)
  const days = spend.days.filter((d) => inTreatment.has(d.day))
  if (days.some((d) => d.amount === null)) return none("fx_rate_missing")
  const amount = days.reduce((s, d) => s + (d.amount ?? 0), 0)
  const figures = { amount, currency: spend.currency, days: treatment.length }
  if (!(amount > 0)) return none("no_spend_in_treatment", figures)
  if (incrementalValue === null) return none("insufficient_data", figures)
  return {
    spend: figures,
    incremental_roas: {
      estimate: incrementalValue.estimate / amount,
      lower: incrementalValue.lower / amount,
      upper: incrementalValue.upper / amount,
      level: incrementalValue.level
    },
    incremental_roas_unavailable: null
  }
}

/**
 * A pre/post's design from the history's in-time placebos (statistics/pre-post-power.ts): the
 * target campaign's credited daily series and the other campaigns' as donors, fitted as the
 * results will fit them.
 */
export const prePostDesignOf = (
  input: DesignInput,
  targetId: string,
  days: ReadonlyArray<string>,
  series: ReadonlyArray<CampaignSeries>
): Design => {
  const all = (s: CampaignSeries | undefined) => days.map((d) => measureOf(input.metric, s?.byDay.get(d)))
  // Days before the target's first outcome (a campaign not yet running) would read as zeros the post never has.
  const first = Math.max(0, all(series.find((s) => s.campaignId === targetId)).findIndex((x) => x !== 0))
  const values = (s: CampaignSeries | undefined) => all(s).slice(first)
  const target = values(series.find((s) => s.campaignId === targetId))
  const donors = series.filter((s) => s.campaignId !== targetId).map(values).filter((v) => v.some((x) => x !== 0))
  const m = mean(target)
  const base = {
    ...askedOf(input),
    method: `in-time placebos: synthetic control (credit model ${PRE_POST_MODEL}) fitted on ${input.preDays} days at each day of the history, RMS error of post-window totals, normal approximation`,
    required_sample: null,
    baseline: { customers: null, conversion_rate: null, mean: m, sd: sd(target) }
  }
  if (!(m > 0) || donors.length === 0) return { ...base, required_days: null, warnings: ["no_history"] }
  const design = prePostDesign({
    target,
    donors,
    preDays: input.preDays,
    minimumEffect: input.minimumEffect,
    effectKind: input.effectKind,
    alpha: 1 - input.confidence,
    power: input.power
  })
  const placebo = (windows: number, error: number | null) => ({
    pre_days: input.preDays,
    donors: donors.length,
    windows,
    longest_measured_days: design.longestMeasured,
    total_error: error
  })
  if (design._tag === "HistoryTooShort") {
    return { ...base, required_days: null, placebo: placebo(0, null), warnings: ["history_too_short"] }
  }
  const warnings = input.windowDays !== null && input.windowDays < design.days ? ["window_too_short"] : []
  return { ...base, required_days: design.days, placebo: placebo(design.placebos, design.totalError), warnings }
}
