/**
 * Checks an analysis runs before trusting its estimate: sample ratio mismatch (the groups'
 * sizes do not match the planned split, a sign of broken assignment or logging) and too few
 * outcomes per group.
 */
import { chiSquareSurvival } from "./distributions.ts"

export interface SampleRatioCheck {
  readonly statistic: number
  readonly degreesOfFreedom: number
  readonly pValue: number
  readonly expected: ReadonlyArray<number>
  /** pValue below the threshold (default 0.001). */
  readonly mismatch: boolean
}

/**
 * Chi-square goodness of fit of the observed group sizes against the planned split (shares in
 * any scale, e.g. [0.9, 0.1] or [9, 1]), k − 1 degrees of freedom. The conventional threshold is
 * p < 0.001: with many experiments a looser one would flag healthy ones. No customers at all is
 * not a mismatch (p = 1).
 */
export const sampleRatioMismatch = (
  observed: ReadonlyArray<number>,
  planned: ReadonlyArray<number>,
  threshold: number = 0.001
): SampleRatioCheck => {
  if (observed.length !== planned.length) throw new RangeError(`${observed.length} groups observed, ${planned.length} planned`)
  if (observed.length < 2) throw new RangeError("a split needs at least two groups")
  for (const count of observed) {
    if (!Number.isInteger(count) || count < 0) throw new RangeError(`group sizes must be non-negative integers, got ${count}`)
  }
  let plannedTotal = 0
  for (const share of planned) {
    if (!(share > 0) || !Number.isFinite(share)) throw new RangeError(`planned shares must be positive, got ${share}`)
    plannedTotal += share
  }
  let total = 0
  for (const count of observed) total += count
  const expected = planned.map((share) => total * share / plannedTotal)
  let statistic = 0
  if (total > 0) {
    observed.forEach((count, i) => {
      const e = expected[i] ?? 0
      statistic += (count - e) ** 2 / e
    })
  }
  const degreesOfFreedom = observed.length - 1
  const pValue = total > 0 ? chiSquareSurvival(statistic, degreesOfFreedom) : 1
  return { statistic, degreesOfFreedom, pValue, expected, mismatch: pValue < threshold }
}

export interface OutcomeCountCheck {
  readonly sufficient: boolean
  /** Names of the groups below the minimum, in the order given. */
  readonly short: ReadonlyArray<string>
}

/** Groups with fewer than `minimum` outcomes (conversions, or days for a switchback arm). */
export const tooFewOutcomes = (
  groups: ReadonlyArray<{ readonly name: string; readonly outcomes: number }>,
  minimum: number
): OutcomeCountCheck => {
  const short = groups.filter((group) => group.outcomes < minimum).map((group) => group.name)
  return { sufficient: short.length === 0, short }
}
