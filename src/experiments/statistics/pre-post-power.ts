/**
 * Design of a pre/post with a synthetic control, from in-time placebos on the profile's own
 * history (Abadie, Diamond & Hainmueller 2015, §4: "in-time placebos"). No treatment happened in
 * the history, so every placebo effect is pure error of the method as it will be run: for each
 * placebo start s the synthetic control is fitted on the `preDays` days before s, exactly as the
 * results will fit it, and the placebo effect of a post window of L days is the target's actual
 * sum over [s, s + L) minus the counterfactual's. Its root mean square over the placebo starts,
 * σ_L, measures the error of a post-window total of L days, bias included (not centred: a
 * counterfactual that drifts is an error the real analysis makes too).
 *
 * A post window of L days detects a daily effect δ (the minimum effect: relative to the target's
 * mean daily outcome over the history, or absolute per day) at two-sided level α with power π
 * when L·δ ≥ (z_{1−α/2} + z_π)·σ_L (the normal approximation of the results' t interval). The
 * answer is the smallest such L among the lengths the history can measure with at least
 * `minimumPlacebos` placebo starts; none there is `historyTooShort` (a longer history measures
 * longer windows). Overlapping placebo windows are correlated: σ_L is an average over them, not
 * an independent sample, so its own uncertainty is larger than its count suggests.
 */
import { normalQuantile } from "./distributions.ts"
import type { EffectKind } from "./power.ts"
import { syntheticControl } from "./synthetic-control.ts"

export interface PrePostDesignInput {
  /** The target's daily outcomes over the history, oldest first. */
  readonly target: ReadonlyArray<number>
  /** Each donor's daily outcomes over the same days. */
  readonly donors: ReadonlyArray<ReadonlyArray<number>>
  /** Days of each fit, as the experiment will fit (its `pre_days`). */
  readonly preDays: number
  readonly minimumEffect: number
  readonly effectKind: EffectKind
  /** Two-sided significance level (default 0.05). */
  readonly alpha?: number
  /** Target power (default 0.8). */
  readonly power?: number
  /** Fewest placebo starts a post length needs to be measured (default 10). */
  readonly minimumPlacebos?: number
}

export interface PlaceboErrors {
  /** σ_L for L = 1 … (index L − 1): the root mean square placebo error of an L-day total. */
  readonly rmse: ReadonlyArray<number>
  /** Placebo starts measured for each L (the same index). */
  readonly placebos: ReadonlyArray<number>
}

export type PrePostDesign =
  | {
    readonly _tag: "Design"
    /** Fewest post days reaching the power. */
    readonly days: number
    /** δ: the minimum effect per day in the metric's unit. */
    readonly dailyEffect: number
    /** The target's mean daily outcome over the history. */
    readonly dailyMean: number
    /** σ at `days`. */
    readonly totalError: number
    readonly placebos: number
    /** The longest post window the history measures. */
    readonly longestMeasured: number
  }
  | {
    readonly _tag: "HistoryTooShort"
    readonly reason: string
    readonly dailyMean: number
    readonly dailyEffect: number
    readonly longestMeasured: number
  }

/**
 * In-time placebo errors of the synthetic control: one fit per placebo start (on its `preDays`
 * days before), its daily effects summed over every post length that fits in the history.
 */
export const placeboErrors = (
  target: ReadonlyArray<number>,
  donors: ReadonlyArray<ReadonlyArray<number>>,
  preDays: number
): PlaceboErrors => {
  const T = target.length
  if (!Number.isInteger(preDays) || preDays < 1) throw new RangeError(`preDays must be a positive integer, got ${preDays}`)
  for (const donor of donors) if (donor.length !== T) throw new RangeError(`a donor has ${donor.length} values, the target ${T}`)
  const maxLength = Math.max(0, T - preDays)
  const squares = new Array<number>(maxLength).fill(0)
  const counts = new Array<number>(maxLength).fill(0)
  for (let start = preDays; start < T; start++) {
    const from = start - preDays
    const fitted = syntheticControl(
      { target: target.slice(from), donors: donors.map((d) => d.slice(from)), preDays },
      { minimumPreDays: Math.min(preDays, 14) }
    )
    // A stretch the method cannot fit (a constant target, no donors) says nothing about its error.
    if (fitted._tag !== "Estimate") continue
    let total = 0
    fitted.days.forEach((day, i) => {
      total += day.effect
      squares[i] = (squares[i] ?? 0) + total * total
      counts[i] = (counts[i] ?? 0) + 1
    })
  }
  return {
    rmse: squares.map((s, i) => ((counts[i] ?? 0) > 0 ? Math.sqrt(s / (counts[i] ?? 1)) : Number.NaN)),
    placebos: counts
  }
}

/** The fewest post days a pre/post needs, from the history's in-time placebo errors. */
export const prePostDesign = (input: PrePostDesignInput): PrePostDesign => {
  const alpha = input.alpha ?? 0.05
  const power = input.power ?? 0.8
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`)
  if (!(power > 0 && power < 1)) throw new RangeError(`power must be in (0, 1), got ${power}`)
  if (!(input.minimumEffect > 0)) throw new RangeError(`the minimum effect must be positive, got ${input.minimumEffect}`)
  const minimumPlacebos = input.minimumPlacebos ?? 10
  const n = input.target.length
  const dailyMean = n === 0 ? 0 : input.target.reduce((a, b) => a + b, 0) / n
  const dailyEffect = input.effectKind === "relative" ? input.minimumEffect * dailyMean : input.minimumEffect
  const { rmse, placebos } = placeboErrors(input.target, input.donors, input.preDays)
  let longestMeasured = 0
  placebos.forEach((count, i) => {
    if (count >= minimumPlacebos && Number.isFinite(rmse[i])) longestMeasured = i + 1
  })
  const tooShort = (reason: string): PrePostDesign => ({ _tag: "HistoryTooShort", reason, dailyMean, dailyEffect, longestMeasured })
  if (!(dailyEffect > 0)) return tooShort("the target has no outcome in the history: no effect to scale")
  if (longestMeasured === 0) {
    return tooShort(`${n} days of history give fewer than ${minimumPlacebos} placebo fits of ${input.preDays} pre days`)
  }
  const z = normalQuantile(1 - alpha / 2) + normalQuantile(power)
  for (let length = 1; length <= longestMeasured; length++) {
    const error = rmse[length - 1] ?? Number.NaN
    if ((placebos[length - 1] ?? 0) < minimumPlacebos || !Number.isFinite(error)) continue
    if (length * dailyEffect >= z * error) {
      return { _tag: "Design", days: length, dailyEffect, dailyMean, totalError: error, placebos: placebos[length - 1] ?? 0, longestMeasured }
    }
  }
  return tooShort(`no post window of up to ${longestMeasured} days (the longest the history measures) reaches the power`)
}
