/**
 * Switchback experiments: whole days randomised on or off for a campaign. The daily outcome is
 * regressed on an intercept, the on/off indicator, day-of-week dummies and optionally a linear
 * trend; the on/off coefficient is the effect per day, with a t interval (classic or HC1
 * standard errors), and the relative lift divides it by the off-level, with Fieller's interval.
 */
import { dayNumber, WEEKDAYS, weekday } from "./dates.ts"
import { coefficientEstimate, ols, ratioOfCombinations, type StandardErrors } from "./regression.ts"
import {
  checkLevel,
  DEFAULT_LEVEL,
  type Estimate,
  estimate,
  type Estimated,
  insufficient
} from "./result.ts"

export interface SwitchbackDay {
  readonly date: string
  readonly on: boolean
  readonly outcomes: number
}

export interface SwitchbackDesign {
  /** Column names: "intercept", "on", "dow:<day>" for each weekday present but the first, then "trend". */
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<number>>
  readonly y: ReadonlyArray<number>
  /** Dates of the rows, in order (the days sorted by date). */
  readonly dates: ReadonlyArray<string>
  /** Index of the "on" column. */
  readonly treatment: number
}

export interface SwitchbackDesignOptions {
  /** Add a linear trend, in weeks from the middle of the period (default false). */
  readonly trend?: boolean
}

/**
 * The regression design of a switchback. The first weekday present (Monday first) is the
 * reference level, and only weekdays present get a dummy, so a short period does not make the
 * design singular by construction. Throws a RangeError on a malformed or repeated date or a
 * non-finite outcome.
 */
export const switchbackDesign = (
  days: ReadonlyArray<SwitchbackDay>,
  options: SwitchbackDesignOptions = {}
): SwitchbackDesign => {
  const numbered = days.map((day) => {
    if (!Number.isFinite(day.outcomes)) throw new RangeError(`outcomes of ${day.date} must be finite, got ${day.outcomes}`)
    return { ...day, day: dayNumber(day.date) }
  }).sort((a, b) => a.day - b.day)
  for (let i = 1; i < numbered.length; i++) {
    if (numbered[i]?.day === numbered[i - 1]?.day) throw new RangeError(`date ${numbered[i]?.date} appears twice`)
  }
  const present = [...new Set(numbered.map((day) => weekday(day.day)))].sort((a, b) => a - b)
  const dummies = present.slice(1)
  const first = numbered[0]?.day ?? 0
  const last = numbered[numbered.length - 1]?.day ?? 0
  const middle = (first + last) / 2
  const columns = [
    "intercept",
    "on",
    ...dummies.map((d) => `dow:${WEEKDAYS[d] ?? d}`),
    ...(options.trend === true ? ["trend"] : [])
  ]
  const rows = numbered.map((day) => {
    const w = weekday(day.day)
    return [
      1,
      day.on ? 1 : 0,
      ...dummies.map((d) => (d === w ? 1 : 0)),
      ...(options.trend === true ? [(day.day - middle) / 7] : [])
    ]
  })
  return {
    columns,
    rows,
    y: numbered.map((day) => day.outcomes),
    dates: numbered.map((day) => day.date),
    treatment: 1
  }
}

export interface SwitchbackOptions extends SwitchbackDesignOptions {
  readonly level?: number
  /** "classic" (default: exact t intervals under homoskedastic errors) or "hc1". */
  readonly standardErrors?: StandardErrors
  /** Fewer days than this is InsufficientData (default 14: each weekday twice). */
  readonly minimumDays?: number
  /** Fewer on days, or fewer off days, than this is InsufficientData (default 3). */
  readonly minimumDaysPerArm?: number
}

export interface SwitchbackEstimate extends Estimate {
  /** The estimate and bounds above are the effect per day of being on (outcomes per day). */
  readonly standardError: number
  readonly pValue: number
  readonly degreesOfFreedom: number
  readonly daysOn: number
  readonly daysOff: number
  /**
   * The model's average daily outcome with the campaign off, over the same days (the design's
   * rows averaged with the on column set to 0).
   */
  readonly offLevel: number
  /** effect / offLevel with Fieller's interval; InsufficientData when the off-level is not distinguishable from 0. */
  readonly relativeLift: Estimated
  readonly rSquared: number
}

/** Effect per day of a switchback with its interval, and the relative lift against the off-level. */
export const analyseSwitchback = (
  days: ReadonlyArray<SwitchbackDay>,
  options: SwitchbackOptions = {}
): Estimated<SwitchbackEstimate> => {
  const level = options.level ?? DEFAULT_LEVEL
  checkLevel(level)
  const standardErrors = options.standardErrors ?? "classic"
  const minimumDays = options.minimumDays ?? 14
  const minimumPerArm = options.minimumDaysPerArm ?? 3
  const design = switchbackDesign(days, options)
  const daysOn = days.filter((day) => day.on).length
  const daysOff = days.length - daysOn
  if (days.length < minimumDays) return insufficient(`${days.length} days, fewer than the ${minimumDays} needed`)
  if (daysOn < minimumPerArm || daysOff < minimumPerArm) {
    return insufficient(`${daysOn} days on and ${daysOff} off: each needs at least ${minimumPerArm}`)
  }
  const fit = ols(design.rows, design.y, design.columns)
  if (fit._tag === "InsufficientData") {
    return insufficient(`${fit.reason}: on/off is confounded with the weekdays or the trend, so its effect is not identified`)
  }
  const effect = coefficientEstimate(fit, design.treatment, { level, standardErrors })
  const k = fit.parameters
  // Off-level combination: the design rows averaged, with the on column at 0.
  const offCombination = new Array<number>(k).fill(0)
  for (const row of design.rows) {
    for (let j = 0; j < k; j++) offCombination[j] = (offCombination[j] ?? 0) + (row[j] ?? 0) / design.rows.length
  }
  offCombination[design.treatment] = 0
  const onCombination = new Array<number>(k).fill(0)
  onCombination[design.treatment] = 1
  const ratio = ratioOfCombinations(fit, onCombination, offCombination, { level, standardErrors })
  let offLevel = 0
  for (let j = 0; j < k; j++) offLevel += (offCombination[j] ?? 0) * (fit.coefficients[j] ?? 0)
  const relativeLift: Estimated = ratio.interval === undefined
    ? insufficient("the off-level is not distinguishable from zero: the relative lift has no bounded interval")
    : estimate(ratio.ratio, ratio.interval.lower, ratio.interval.upper, level)
  return {
    ...effect,
    degreesOfFreedom: fit.degreesOfFreedom,
    daysOn,
    daysOff,
    offLevel,
    relativeLift,
    rSquared: fit.rSquared
  }
}
