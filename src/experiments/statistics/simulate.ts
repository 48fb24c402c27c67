/**
 * Seeded simulators of the three experiment kinds with a known true effect, to measure how often
 * the 95% intervals cover the truth and how often an experiment without effect is declared one.
 * Pure and deterministic given the seed; test/unit/experiment-coverage.test.ts runs a few hundred
 * runs, a benchmark can run thousands with the same functions.
 */
import { dateOf, dayNumber, weekday } from "./dates.ts"
import { type BootstrapMethod, bootstrapMeanDifference } from "./bootstrap.ts"
import { newcombeDifference, relativeLiftInterval } from "./proportions.ts"
import { createRandom, type Random } from "./random.ts"
import type { Estimated } from "./result.ts"
import { analyseSwitchback, type SwitchbackDay, type SwitchbackOptions } from "./switchback.ts"
import { syntheticControl, type SyntheticControlOptions } from "./synthetic-control.ts"

/** One run's verdict on one quantity. */
export interface RunOutcome {
  /** False when the analysis answered InsufficientData. */
  readonly estimated: boolean
  /** The interval contains the true value. */
  readonly covered: boolean
  /** The interval excludes zero (a false positive when the truth is zero, else a detection). */
  readonly rejected: boolean
  readonly estimate: number
  readonly width: number
}

export interface CoverageSummary {
  readonly runs: number
  readonly truth: number
  /** Runs that gave an Estimate. */
  readonly estimated: number
  readonly insufficient: number
  readonly covered: number
  /** covered / estimated. */
  readonly coverage: number
  readonly rejected: number
  /** rejected / estimated: the false-positive rate when truth is 0, the power otherwise. */
  readonly rejectionRate: number
  readonly meanEstimate: number
  readonly meanWidth: number
}

/** The verdict of one answer on a quantity whose true value is `truth`. */
export const judge = (answer: Estimated, truth: number): RunOutcome =>
  answer._tag === "InsufficientData"
    ? { estimated: false, covered: false, rejected: false, estimate: Number.NaN, width: Number.NaN }
    : {
      estimated: true,
      covered: answer.lower <= truth && truth <= answer.upper,
      rejected: answer.lower > 0 || answer.upper < 0,
      estimate: answer.estimate,
      width: answer.upper - answer.lower
    }

/** Totals of many runs' verdicts. */
export const summarise = (outcomes: ReadonlyArray<RunOutcome>, truth: number): CoverageSummary => {
  let estimated = 0
  let covered = 0
  let rejected = 0
  let estimateSum = 0
  let widthSum = 0
  for (const outcome of outcomes) {
    if (!outcome.estimated) continue
    estimated++
    if (outcome.covered) covered++
    if (outcome.rejected) rejected++
    estimateSum += outcome.estimate
    widthSum += outcome.width
  }
  return {
    runs: outcomes.length,
    truth,
    estimated,
    insufficient: outcomes.length - estimated,
    covered,
    coverage: estimated === 0 ? Number.NaN : covered / estimated,
    rejected,
    rejectionRate: estimated === 0 ? Number.NaN : rejected / estimated,
    meanEstimate: estimated === 0 ? Number.NaN : estimateSum / estimated,
    meanWidth: estimated === 0 ? Number.NaN : widthSum / estimated
  }
}

export interface SimulationOptions {
  readonly runs: number
  readonly seed: number
}

const checkRuns = (options: SimulationOptions): void => {
  if (!Number.isInteger(options.runs) || options.runs < 1) throw new RangeError(`runs must be a positive integer, got ${options.runs}`)
}

// ---------------------------------------------------------------------------------------------
// Audience holdout: conversion counts of two groups.

export interface ProportionsScenario {
  readonly treatmentSize: number
  readonly controlSize: number
  /** True conversion rate of the control group. */
  readonly baselineRate: number
  /** True relative lift of the treatment (0 for an A/A run). */
  readonly relativeLift: number
  readonly level?: number
}

export interface ProportionsRun {
  /** Newcombe interval for the rate difference against the true difference. */
  readonly difference: RunOutcome
  /** Katz interval for the relative lift against the true lift. */
  readonly relativeLift: RunOutcome
}

/** One simulated holdout: binomial conversions in each group, then the analyses. */
export const simulateProportionsRun = (random: Random, scenario: ProportionsScenario): ProportionsRun => {
  const treatmentRate = scenario.baselineRate * (1 + scenario.relativeLift)
  const treatment = { conversions: random.binomial(scenario.treatmentSize, treatmentRate), size: scenario.treatmentSize }
  const control = { conversions: random.binomial(scenario.controlSize, scenario.baselineRate), size: scenario.controlSize }
  const level = scenario.level ?? 0.95
  return {
    difference: judge(newcombeDifference(treatment, control, level), treatmentRate - scenario.baselineRate),
    relativeLift: judge(relativeLiftInterval(treatment, control, level), scenario.relativeLift)
  }
}

export interface ProportionsCoverage {
  readonly difference: CoverageSummary
  readonly relativeLift: CoverageSummary
}

export const simulateProportionsCoverage = (
  scenario: ProportionsScenario,
  options: SimulationOptions
): ProportionsCoverage => {
  checkRuns(options)
  const random = createRandom(options.seed)
  const runs = Array.from({ length: options.runs }, () => simulateProportionsRun(random, scenario))
  return {
    difference: summarise(runs.map((run) => run.difference), scenario.baselineRate * scenario.relativeLift),
    relativeLift: summarise(runs.map((run) => run.relativeLift), scenario.relativeLift)
  }
}

// ---------------------------------------------------------------------------------------------
// Audience holdout: value per customer, zero for most, log-normal for converters.

export interface ValueScenario {
  readonly treatmentSize: number
  readonly controlSize: number
  readonly conversionRate: number
  /** Mean value of a converting control customer. */
  readonly meanValue: number
  /** σ of log value (default 1: a long right tail). */
  readonly valueLogSd?: number
  /** True relative lift of the value per converting customer (0 for an A/A run). */
  readonly relativeLift: number
  readonly resamples?: number
  readonly method?: BootstrapMethod
  readonly level?: number
}

/** One simulated group's values: converters draw log-normal values with the given mean. */
const simulateValues = (random: Random, size: number, rate: number, mean: number, logSd: number): Array<number> => {
  const mu = Math.log(mean) - logSd * logSd / 2
  return Array.from({ length: size }, () => (random.uniform() < rate ? Math.exp(mu + logSd * random.normal()) : 0))
}

/** One simulated holdout's values, bootstrapped (its seed drawn from the run's generator). */
export const simulateValueRun = (random: Random, scenario: ValueScenario): RunOutcome => {
  const logSd = scenario.valueLogSd ?? 1
  const treatment = simulateValues(random, scenario.treatmentSize, scenario.conversionRate, scenario.meanValue * (1 + scenario.relativeLift), logSd)
  const control = simulateValues(random, scenario.controlSize, scenario.conversionRate, scenario.meanValue, logSd)
  const answer = bootstrapMeanDifference(treatment, control, {
    seed: random.int(2 ** 31),
    resamples: scenario.resamples ?? 1000,
    method: scenario.method ?? "percentile",
    level: scenario.level ?? 0.95
  })
  return judge(answer, scenario.conversionRate * scenario.meanValue * scenario.relativeLift)
}

export const simulateValueCoverage = (scenario: ValueScenario, options: SimulationOptions): CoverageSummary => {
  checkRuns(options)
  const random = createRandom(options.seed)
  return summarise(
    Array.from({ length: options.runs }, () => simulateValueRun(random, scenario)),
    scenario.conversionRate * scenario.meanValue * scenario.relativeLift
  )
}

// ---------------------------------------------------------------------------------------------
// Switchback: days randomised on/off, a weekly pattern, optional trend.

export interface SwitchbackScenario {
  readonly days: number
  /** First day (default 2025-01-06, a Monday). */
  readonly startDate?: string
  /** Mean daily outcome when off, before the weekday pattern. */
  readonly offLevel: number
  /** Multipliers of offLevel, Monday to Sunday (default a weekend dip: 1, 1, 1, 1, 1.1, 0.7, 0.6). */
  readonly weekdayPattern?: ReadonlyArray<number>
  /** True effect per day on, in outcomes (0 for an A/A run). */
  readonly effect: number
  /** Standard deviation of the daily noise. */
  readonly noiseSd: number
  /** Drift of the off-level per day (default 0). */
  readonly trendPerDay?: number
  /** Share of days on, assigned by complete randomisation (default 0.5). */
  readonly onShare?: number
  /**
   * A given plan (one flag per day, e.g. the service's paired schedule) instead of complete
   * randomisation: the days and their noise are drawn as otherwise, without the shuffle.
   */
  readonly plan?: ReadonlyArray<boolean>
  readonly analysis?: SwitchbackOptions
}

const DEFAULT_PATTERN = [1, 1, 1, 1, 1.1, 0.7, 0.6] as const

/** Days of one simulated switchback (exported so a benchmark can analyse them several ways). */
export const simulateSwitchbackDays = (random: Random, scenario: SwitchbackScenario): ReadonlyArray<SwitchbackDay> => {
  const pattern = scenario.weekdayPattern ?? DEFAULT_PATTERN
  if (pattern.length !== 7) throw new RangeError(`weekdayPattern needs 7 values, got ${pattern.length}`)
  const start = dayNumber(scenario.startDate ?? "2025-01-06")
  const onDays = Math.round((scenario.onShare ?? 0.5) * scenario.days)
  if (scenario.plan !== undefined && scenario.plan.length !== scenario.days) {
    throw new RangeError(`plan needs ${scenario.days} days, got ${scenario.plan.length}`)
  }
  // Complete randomisation: a shuffled list with exactly onDays days on.
  const on = scenario.plan !== undefined ? [...scenario.plan] : Array.from({ length: scenario.days }, (_, i) => i < onDays)
  for (let i = scenario.plan !== undefined ? 0 : on.length - 1; i > 0; i--) {
    const j = random.int(i + 1)
    const tmp = on[i] ?? false
    on[i] = on[j] ?? false
    on[j] = tmp
  }
  return on.map((isOn, i) => {
    const base = scenario.offLevel * (pattern[weekday(start + i)] ?? 1) + (scenario.trendPerDay ?? 0) * i
    return { date: dateOf(start + i), on: isOn, outcomes: base + (isOn ? scenario.effect : 0) + scenario.noiseSd * random.normal() }
  })
}

export const simulateSwitchbackRun = (random: Random, scenario: SwitchbackScenario): RunOutcome =>
  judge(analyseSwitchback(simulateSwitchbackDays(random, scenario), scenario.analysis), scenario.effect)

export const simulateSwitchbackCoverage = (scenario: SwitchbackScenario, options: SimulationOptions): CoverageSummary => {
  checkRuns(options)
  const random = createRandom(options.seed)
  return summarise(Array.from({ length: options.runs }, () => simulateSwitchbackRun(random, scenario)), scenario.effect)
}

// ---------------------------------------------------------------------------------------------
// Pre/post with synthetic control: donors driven by common factors, the target a convex
// combination of some of them plus autocorrelated noise, an effect added after the pre-period.

export interface SyntheticControlScenario {
  readonly preDays: number
  readonly postDays: number
  readonly donors: number
  /** Donors with weight in the true combination (default 3). */
  readonly activeDonors?: number
  /** Typical level of a series (default 100). */
  readonly seriesLevel?: number
  /** Standard deviation of the target's own noise around the combination. */
  readonly noiseSd: number
  /** Lag-1 autocorrelation of that noise (default 0). */
  readonly autocorrelation?: number
  /** True effect per post-period day (0 for an A/A run); the truth judged is the total. */
  readonly effectPerDay: number
  readonly analysis?: SyntheticControlOptions
}

export interface SyntheticControlSeries {
  readonly target: ReadonlyArray<number>
  readonly donors: ReadonlyArray<ReadonlyArray<number>>
  readonly preDays: number
  readonly weights: ReadonlyArray<number>
}

/** The series of one simulated pre/post experiment, with the true weights. */
export const simulateSyntheticControlSeries = (random: Random, scenario: SyntheticControlScenario): SyntheticControlSeries => {
  const T = scenario.preDays + scenario.postDays
  const level = scenario.seriesLevel ?? 100
  const active = Math.min(scenario.activeDonors ?? 3, scenario.donors)
  // Two common AR(1) factors (ρ = 0.8) with stationary sd 10% of the level.
  const factors = [0, 1].map(() => {
    const series = new Array<number>(T)
    let value = random.normal() * 0.1 * level
    for (let t = 0; t < T; t++) {
      value = 0.8 * value + Math.sqrt(1 - 0.64) * 0.1 * level * random.normal()
      series[t] = value
    }
    return series
  })
  const donors = Array.from({ length: scenario.donors }, () => {
    const base = level * (0.5 + random.uniform())
    const loadings = factors.map(() => 0.5 + random.uniform())
    return Array.from({ length: T }, (_, t) =>
      base + loadings.reduce((sum, loading, f) => sum + loading * (factors[f]?.[t] ?? 0), 0) +
      0.05 * level * random.normal())
  })
  const raw = Array.from({ length: scenario.donors }, (_, j) => (j < active ? 0.2 + random.uniform() : 0))
  const total = raw.reduce((sum, value) => sum + value, 0)
  const weights = raw.map((value) => value / total)
  const rho = scenario.autocorrelation ?? 0
  let noise = random.normal() * scenario.noiseSd
  const target = Array.from({ length: T }, (_, t) => {
    noise = rho * noise + Math.sqrt(1 - rho * rho) * scenario.noiseSd * random.normal()
    let value = noise + (t >= scenario.preDays ? scenario.effectPerDay : 0)
    weights.forEach((w, j) => {
      value += w * (donors[j]?.[t] ?? 0)
    })
    return value
  })
  return { target, donors, preDays: scenario.preDays, weights }
}

export const simulateSyntheticControlRun = (random: Random, scenario: SyntheticControlScenario): RunOutcome => {
  const series = simulateSyntheticControlSeries(random, scenario)
  return judge(syntheticControl(series, scenario.analysis), scenario.effectPerDay * scenario.postDays)
}

export const simulateSyntheticControlCoverage = (
  scenario: SyntheticControlScenario,
  options: SimulationOptions
): CoverageSummary => {
  checkRuns(options)
  const random = createRandom(options.seed)
  return summarise(
    Array.from({ length: options.runs }, () => simulateSyntheticControlRun(random, scenario)),
    scenario.effectPerDay * scenario.postDays
  )
}
