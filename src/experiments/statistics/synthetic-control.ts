/**
 * Pre/post experiments with a synthetic control: the target's daily series is modelled, over the
 * pre-period, as a convex combination of the profile's other series (the donors; weights ≥ 0
 * summing to 1, Abadie, Diamond & Hainmueller 2010), optionally after removing each series'
 * pre-period mean (the "demeaned" estimator of Doudchenko & Imbens 2016 / Ferman & Pinto 2021,
 * for donors at another scale than the target). The post-period counterfactual is the same
 * combination of the donors' post-period values; the effect is actual − counterfactual.
 *
 * Interval (stated here because it is a modelling choice, not a theorem): the weights' support
 * is treated as known, so the fit is a linear regression with one equality constraint (the
 * constraint substituted out: the last donor with weight carries 1 − Σ others), and the noise u
 * of the target around the combination is stationary AR(1). The error of a sum of post-period
 * effects is then a linear form aᵀu — the post days' own noise minus the counterfactual's
 * estimation error, a_pre = −Z̃(Z̃ᵀZ̃)⁻¹s̃ (Z̃ the pre-period design, s̃ its rows summed over those
 * days) — with variance σ²·aᵀRa, R_ij = ρ^|i−j|. That counts the post-period's serial
 * correlation, the estimation error, and their correlation across the pre/post boundary.
 * σ̂² = SSE / (T₀ − p), p the free parameters (positive weights − 1, + 1 with the intercept); ρ̂
 * the residuals' lag-1 autocorrelation, bias-corrected and clamped to [0, 0.95] (a negative one
 * never narrows the interval). The interval is t with T₀(1 − ρ̂)/(1 + ρ̂) − p degrees of freedom
 * (Bartlett's effective sample size: correlated residuals say less about σ). It assumes the
 * pre-period residuals are representative of the post-period (no structural break) and ignores
 * the uncertainty in which donors got weight, so a poor fit (R² below `minimumRSquared`) is
 * flagged, not hidden. test/unit/experiment-coverage.test.ts measures its coverage.
 */
import { studentTQuantile } from "./distributions.ts"
import { householderQr, inverseGram } from "./matrix.ts"
import { checkLevel, DEFAULT_LEVEL, type Estimate, estimate, type Estimated, insufficient } from "./result.ts"
import { fitSimplexWeights } from "./simplex.ts"

export interface SyntheticControlInput {
  /** The target's daily values, pre-period then post-period. */
  readonly target: ReadonlyArray<number>
  /** Each donor's daily values over the same days. */
  readonly donors: ReadonlyArray<ReadonlyArray<number>>
  /** Number of leading days that are the pre-period. */
  readonly preDays: number
}

export interface SyntheticControlOptions {
  readonly level?: number
  /** Fit on pre-period-demeaned series (an intercept) rather than raw levels (default false). */
  readonly intercept?: boolean
  /** R² of the pre-period fit below this sets `fit.sufficient` to false (default 0.8). */
  readonly minimumRSquared?: number
  /** Fewer pre-period days than this is InsufficientData (default 14). */
  readonly minimumPreDays?: number
}

export interface SyntheticControlDay {
  readonly actual: number
  readonly counterfactual: number
  readonly effect: number
  /** Interval for this day's effect alone (prediction interval of one day). */
  readonly lower: number
  readonly upper: number
}

export interface SyntheticControlFit {
  /** Root mean squared prediction error over the pre-period. */
  readonly rmspe: number
  /** 1 − SSE / SST of the target over the pre-period. */
  readonly rSquared: number
  /** False when rSquared < minimumRSquared: the counterfactual does not track the target well enough to trust. */
  readonly sufficient: boolean
  readonly minimumRSquared: number
  /** ρ̂, bias-corrected and clamped to [0, 0.95]. */
  readonly residualAutocorrelation: number
  /** T₀ − p, the divisor of σ̂². */
  readonly degreesOfFreedom: number
  /** T₀(1 − ρ̂)/(1 + ρ̂) − p (at least 1), the degrees of freedom of the interval's t quantile. */
  readonly effectiveDegreesOfFreedom: number
}

export interface SyntheticControlEstimate extends Estimate {
  /** The estimate and bounds above are the post-period's total effect (sum over its days). */
  readonly perDay: Estimate
  /**
   * total / counterfactualTotal, its bounds the total's bounds over the same counterfactual total
   * (taken as fixed: narrower than the truth when the counterfactual itself is imprecise).
   */
  readonly relativeLift: Estimated
  readonly counterfactualTotal: number
  readonly weights: ReadonlyArray<number>
  /** The counterfactual's constant term (0 unless the `intercept` option was set). */
  readonly intercept: number
  readonly fit: SyntheticControlFit
  readonly days: ReadonlyArray<SyntheticControlDay>
  readonly preFitted: ReadonlyArray<number>
}

const mean = (values: ArrayLike<number>, from: number, to: number): number => {
  let sum = 0
  for (let i = from; i < to; i++) sum += values[i] ?? 0
  return sum / (to - from)
}

/** Weights, fit quality, counterfactual and effect of a pre/post experiment. */
export const syntheticControl = (
  input: SyntheticControlInput,
  options: SyntheticControlOptions = {}
): Estimated<SyntheticControlEstimate> => {
  const level = options.level ?? DEFAULT_LEVEL
  checkLevel(level)
  const withIntercept = options.intercept ?? false
  const minimumRSquared = options.minimumRSquared ?? 0.8
  const minimumPreDays = options.minimumPreDays ?? 14
  const { target, donors, preDays } = input
  const T = target.length
  if (!Number.isInteger(preDays) || preDays < 0 || preDays > T) {
    throw new RangeError(`preDays must be an integer in [0, ${T}], got ${preDays}`)
  }
  for (const value of target) if (!Number.isFinite(value)) throw new RangeError(`target values must be finite, got ${value}`)
  for (const donor of donors) {
    if (donor.length !== T) throw new RangeError(`a donor has ${donor.length} values, the target ${T}`)
    for (const value of donor) if (!Number.isFinite(value)) throw new RangeError(`donor values must be finite, got ${value}`)
  }
  const postDays = T - preDays
  if (donors.length === 0) return insufficient("no donor series")
  if (preDays < minimumPreDays) return insufficient(`${preDays} pre-period days, fewer than the ${minimumPreDays} needed`)
  if (postDays === 0) return insufficient("no post-period days")
  const targetPreMean = mean(target, 0, preDays)
  let sst = 0
  for (let t = 0; t < preDays; t++) sst += ((target[t] ?? 0) - targetPreMean) ** 2
  if (sst === 0) return insufficient("the target is constant over the pre-period: fit quality is undefined")

  const donorMeans = donors.map((donor) => (withIntercept ? mean(donor, 0, preDays) : 0))
  const centre = withIntercept ? targetPreMean : 0
  const preDonors = donors.map((donor, j) => Array.from({ length: preDays }, (_, t) => (donor[t] ?? 0) - (donorMeans[j] ?? 0)))
  const preTarget = Array.from({ length: preDays }, (_, t) => (target[t] ?? 0) - centre)
  const simplex = fitSimplexWeights(preDonors, preTarget)
  const weights = Array.from(simplex.weights)
  // Counterfactual at day t: centre + Σ w_j (donor_j[t] − mean_j).
  let offset = centre
  for (let j = 0; j < donors.length; j++) offset -= (weights[j] ?? 0) * (donorMeans[j] ?? 0)
  const counterfactualAt = (t: number): number => {
    let value = offset
    for (let j = 0; j < donors.length; j++) value += (weights[j] ?? 0) * (donors[j]?.[t] ?? 0)
    return value
  }
  const preFitted = Array.from({ length: preDays }, (_, t) => counterfactualAt(t))
  const residuals = preFitted.map((fitted, t) => (target[t] ?? 0) - fitted)
  let sse = 0
  for (const e of residuals) sse += e * e
  let lagged = 0
  for (let t = 1; t < preDays; t++) lagged += (residuals[t] ?? 0) * (residuals[t - 1] ?? 0)
  const rawRho = sse === 0 ? 0 : lagged / sse
  // The lag-1 autocorrelation of residuals is biased towards 0 by about (1 + 3ρ)/T₀ (Marriott &
  // Pope 1954); correcting it keeps the interval from narrowing exactly when it matters.
  const rho = sse === 0 ? 0 : Math.min(0.95, Math.max(0, rawRho + (1 + 3 * rawRho) / preDays))

  // The constrained regression with its constraint substituted out: the last positive-weight
  // donor L carries 1 − Σ others, so target − donor_L = Σ_{j≠L} w_j (donor_j − donor_L) (+ c).
  const support = weights.flatMap((w, j) => (w > 1e-9 ? [j] : []))
  const anchor = support[support.length - 1] ?? 0
  const free = support.slice(0, -1)
  const designRow = (t: number): Array<number> => [
    ...(withIntercept ? [1] : []),
    ...free.map((j) => (donors[j]?.[t] ?? 0) - (donors[anchor]?.[t] ?? 0))
  ]
  const p = free.length + (withIntercept ? 1 : 0)
  const df = preDays - p
  if (df < 1) return insufficient(`${preDays} pre-period days leave no degree of freedom for ${p} fitted parameters`)
  const sigma2 = sse / df
  // B = Z̃(Z̃ᵀZ̃)⁻¹ over the pre-period (dependent columns dropped: they do not change the fitted
  // space), so the counterfactual's error at post rows s̃ is −s̃ᵀ Bᵀ u_pre.
  const qr = p > 0
    ? householderQr(Array.from({ length: preDays }, (_, t) => designRow(t)), new Array<number>(preDays).fill(0), p)
    : undefined
  const kept = qr?.kept ?? []
  const q = kept.length
  const gramInverse = qr === undefined ? new Float64Array(0) : inverseGram(qr.r, q)
  const keptRow = (t: number): Array<number> => {
    const row = designRow(t)
    return kept.map((column) => row[column] ?? 0)
  }
  const preRows = Array.from({ length: preDays }, (_, t) => keptRow(t))
  /** Var(effect error of the post days `days`) / σ²: the AR(1) quadratic form of a = [−B s̃; 1_days]. */
  const varianceFactor = (days: ReadonlyArray<number>): number => {
    const a = new Float64Array(T)
    if (q > 0) {
      const s = new Array<number>(q).fill(0)
      for (const t of days) keptRow(t).forEach((value, i) => {
        s[i] = (s[i] ?? 0) + value
      })
      // g = (Z̃ᵀZ̃)⁻¹ s̃, then a_pre = −Z̃ g.
      const g = Array.from({ length: q }, (_, i) => {
        let sum = 0
        for (let j = 0; j < q; j++) sum += (gramInverse[i * q + j] ?? 0) * (s[j] ?? 0)
        return sum
      })
      preRows.forEach((row, t) => {
        let sum = 0
        for (let i = 0; i < q; i++) sum += (row[i] ?? 0) * (g[i] ?? 0)
        a[t] = -sum
      })
    }
    for (const t of days) a[t] = (a[t] ?? 0) + 1
    // aᵀRa with R_ij = ρ^|i−j|, in O(T): carry Σ_{j<i} ρ^{i−j} a_j.
    let total = 0
    let carried = 0
    for (let t = 0; t < T; t++) {
      carried = rho * (carried + (t > 0 ? (a[t - 1] ?? 0) : 0))
      const value = a[t] ?? 0
      total += value * value + 2 * value * carried
    }
    return Math.max(0, total)
  }
  // Serially correlated residuals carry less information about σ than T₀ independent ones:
  // the t quantile takes Bartlett's effective sample size T₀(1 − ρ̂)/(1 + ρ̂), less p.
  const effectiveDf = Math.max(1, preDays * (1 - rho) / (1 + rho) - p)
  const critical = studentTQuantile(0.5 + level / 2, effectiveDf)
  const days: Array<SyntheticControlDay> = []
  let actualTotal = 0
  let counterfactualTotal = 0
  const postRows: Array<number> = []
  for (let t = preDays; t < T; t++) {
    const actual = target[t] ?? 0
    const counterfactual = counterfactualAt(t)
    const half = critical * Math.sqrt(sigma2 * varianceFactor([t]))
    days.push({ actual, counterfactual, effect: actual - counterfactual, lower: actual - counterfactual - half, upper: actual - counterfactual + half })
    actualTotal += actual
    counterfactualTotal += counterfactual
    postRows.push(t)
  }
  const total = actualTotal - counterfactualTotal
  const totalHalf = critical * Math.sqrt(sigma2 * varianceFactor(postRows))
  const relativeLift: Estimated = counterfactualTotal > 0
    ? estimate(total / counterfactualTotal, (total - totalHalf) / counterfactualTotal, (total + totalHalf) / counterfactualTotal, level)
    : insufficient("the counterfactual total is not positive: no relative lift")
  const rSquared = 1 - sse / sst
  return {
    ...estimate(total, total - totalHalf, total + totalHalf, level),
    perDay: estimate(total / postDays, (total - totalHalf) / postDays, (total + totalHalf) / postDays, level),
    relativeLift,
    counterfactualTotal,
    weights,
    intercept: offset,
    fit: {
      rmspe: Math.sqrt(sse / preDays),
      rSquared,
      sufficient: rSquared >= minimumRSquared,
      minimumRSquared,
      residualAutocorrelation: rho,
      degreesOfFreedom: df,
      effectiveDegreesOfFreedom: effectiveDf
    },
    days,
    preFitted
  }
}
