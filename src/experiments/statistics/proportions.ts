/**
 * Conversion counts of two groups (audience holdout: treatment vs holdout): Wilson intervals for
 * each rate, Newcombe's hybrid score interval for their difference, a log-scale (Katz) interval
 * for the relative lift, and the incremental conversions the difference implies.
 */
import { normalQuantile } from "./distributions.ts"
import {
  checkLevel,
  DEFAULT_LEVEL,
  type Estimate,
  estimate,
  type Estimated,
  insufficient
} from "./result.ts"

/** A group's outcome: `conversions` of its `size` customers converted. */
export interface Proportion {
  readonly conversions: number
  readonly size: number
}

const checkProportion = (group: Proportion, name: string): void => {
  const { conversions, size } = group
  if (!Number.isInteger(size) || size < 0) throw new RangeError(`${name}: size must be a non-negative integer, got ${size}`)
  if (!Number.isInteger(conversions) || conversions < 0 || conversions > size) {
    throw new RangeError(`${name}: conversions must be an integer in [0, size], got ${conversions} of ${size}`)
  }
}

/** z with P(|Z| ≤ z) = level. */
export const twoSidedZ = (level: number): number => {
  checkLevel(level)
  return normalQuantile(0.5 + level / 2)
}

/** Wilson score bounds for x of n (n > 0), without the Estimate wrapper. */
const wilsonBounds = (x: number, n: number, z: number): { readonly lower: number; readonly upper: number } => {
  const p = x / n
  const z2 = z * z
  const centre = (2 * n * p + z2) / (2 * (n + z2))
  const half = z * Math.sqrt(z2 + 4 * n * p * (1 - p)) / (2 * (n + z2))
  // At x = 0 and x = n the formula's bound is exactly 0 or 1; rounding must not move it.
  return {
    lower: x === 0 ? 0 : Math.max(0, centre - half),
    upper: x === n ? 1 : Math.min(1, centre + half)
  }
}

/**
 * Wilson score interval for a single proportion (Wilson 1927; Newcombe 1998a method 3, no
 * continuity correction). Always within [0, 1] and always contains x / n.
 */
export const wilsonInterval = (successes: number, trials: number, level: number = DEFAULT_LEVEL): Estimated => {
  checkProportion({ conversions: successes, size: trials }, "wilsonInterval")
  const z = twoSidedZ(level)
  if (trials === 0) return insufficient("no customers in the group")
  const { lower, upper } = wilsonBounds(successes, trials, z)
  return estimate(successes / trials, lower, upper, level)
}

/**
 * Interval for the difference of two independent proportions, treatment − control, by
 * Newcombe's hybrid score method (Newcombe 1998b, method 10: Wilson intervals without continuity
 * correction combined in quadrature). Within [-1, 1]; swapping the groups negates it.
 */
export const newcombeDifference = (
  treatment: Proportion,
  control: Proportion,
  level: number = DEFAULT_LEVEL
): Estimated => {
  checkProportion(treatment, "treatment")
  checkProportion(control, "control")
  const z = twoSidedZ(level)
  if (treatment.size === 0 || control.size === 0) return insufficient("a group has no customers")
  const p1 = treatment.conversions / treatment.size
  const p2 = control.conversions / control.size
  const w1 = wilsonBounds(treatment.conversions, treatment.size, z)
  const w2 = wilsonBounds(control.conversions, control.size, z)
  const d = p1 - p2
  const lower = d - Math.sqrt((p1 - w1.lower) ** 2 + (w2.upper - p2) ** 2)
  const upper = d + Math.sqrt((w1.upper - p1) ** 2 + (p2 - w2.lower) ** 2)
  return estimate(d, Math.max(-1, lower), Math.min(1, upper), level)
}

/**
 * Relative lift p_t / p_c − 1 with the Katz log interval (Katz et al. 1978): log(p_t / p_c) ±
 * z·√(1/x_t − 1/n_t + 1/x_c − 1/n_c), mapped back. Needs a conversion in each group; with none the
 * ratio's log is unbounded, so the answer is InsufficientData rather than an invented correction.
 */
export const relativeLiftInterval = (
  treatment: Proportion,
  control: Proportion,
  level: number = DEFAULT_LEVEL
): Estimated => {
  checkProportion(treatment, "treatment")
  checkProportion(control, "control")
  const z = twoSidedZ(level)
  if (treatment.conversions === 0 || control.conversions === 0) {
    return insufficient("the relative lift needs at least one conversion in each group")
  }
  const logRatio = Math.log((treatment.conversions / treatment.size) / (control.conversions / control.size))
  const se = Math.sqrt(
    Math.max(0, 1 / treatment.conversions - 1 / treatment.size + 1 / control.conversions - 1 / control.size)
  )
  return estimate(Math.exp(logRatio) - 1, Math.exp(logRatio - z * se) - 1, Math.exp(logRatio + z * se) - 1, level)
}

/**
 * Conversions the treatment group got because of the treatment: (p_t − p_c) × n_t, its interval
 * the Newcombe interval scaled by n_t (the group's size is fixed by the design, not estimated).
 */
export const incrementalConversions = (
  treatment: Proportion,
  control: Proportion,
  level: number = DEFAULT_LEVEL
): Estimated => {
  const difference = newcombeDifference(treatment, control, level)
  if (difference._tag === "InsufficientData") return difference
  const n = treatment.size
  return estimate(difference.estimate * n, difference.lower * n, difference.upper * n, level)
}

export interface ProportionComparison extends Estimate {
  /** The estimate and bounds above are the absolute difference of rates, treatment − control. */
  readonly treatmentRate: Estimate
  readonly controlRate: Estimate
  readonly relativeLift: Estimated
  readonly incrementalConversions: Estimate
}

export interface CompareProportionsOptions {
  readonly level?: number
  /** Fewer conversions than this in either group is InsufficientData (default 10). */
  readonly minimumConversions?: number
}

/** The audience-holdout comparison in one answer: rates, difference, lift, incremental conversions. */
export const compareProportions = (
  treatment: Proportion,
  control: Proportion,
  options: CompareProportionsOptions = {}
): Estimated<ProportionComparison> => {
  const level = options.level ?? DEFAULT_LEVEL
  const minimum = options.minimumConversions ?? 10
  const difference = newcombeDifference(treatment, control, level)
  if (difference._tag === "InsufficientData") return difference
  if (treatment.conversions < minimum || control.conversions < minimum) {
    return insufficient(
      `fewer than ${minimum} conversions in a group (treatment ${treatment.conversions}, control ${control.conversions})`
    )
  }
  const treatmentRate = wilsonInterval(treatment.conversions, treatment.size, level)
  const controlRate = wilsonInterval(control.conversions, control.size, level)
  const incremental = incrementalConversions(treatment, control, level)
  // Both sizes are positive here (the difference was estimated), so these are Estimates.
  if (treatmentRate._tag !== "Estimate" || controlRate._tag !== "Estimate" || incremental._tag !== "Estimate") {
    return insufficient("a group has no customers")
  }
  return {
    ...difference,
    treatmentRate,
    controlRate,
    relativeLift: relativeLiftInterval(treatment, control, level),
    incrementalConversions: incremental
  }
}
