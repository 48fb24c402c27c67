/**
 * Value per customer (audience holdout): a seeded bootstrap of the difference in mean value,
 * treatment − control, and of the relative lift mean_t / mean_c − 1, with percentile or BCa
 * intervals. Values are per customer in each group, zeros included for customers who did not
 * convert.
 *
 * Each resample draws n_t customers from the treatment group and n_c from the control group with
 * replacement (a stratified bootstrap: the design fixed the group sizes). Only each resample's sums
 * matter, so a resample first draws how many of its n picks hit a non-zero value
 * (Binomial(n, nonzero / n)) and then picks that many of the non-zero values: the same
 * distribution as picking n values, at a cost of the non-zero count rather than n (most customers
 * of a holdout convert nothing).
 */
import { normalCdf, normalQuantile } from "./distributions.ts"
import { createRandom, type Random } from "./random.ts"
import { checkLevel, DEFAULT_LEVEL, type Estimate, estimate, type Estimated, insufficient } from "./result.ts"

export type BootstrapMethod = "percentile" | "bca"

export interface BootstrapOptions {
  readonly seed: number
  /** Number of resamples (default 2,000). */
  readonly resamples?: number
  readonly level?: number
  /**
   * "percentile" (default): the level's central quantiles of the resampled statistic.
   * "bca": bias-corrected and accelerated (Efron 1987); the acceleration comes from jackknife
   * influence values of both groups, each scaled by its group size (Davison & Hinkley 1997, §3.2,
   * stratified case).
   */
  readonly method?: BootstrapMethod
}

export interface MeanDifferenceBootstrap extends Estimate {
  /** The estimate and bounds above are for mean_t − mean_c. */
  readonly treatmentMean: number
  readonly controlMean: number
  /** mean_t / mean_c − 1 from the same resamples; InsufficientData when the control mean is not positive. */
  readonly relativeLift: Estimated
  readonly resamples: number
  readonly method: BootstrapMethod
}

interface Group {
  readonly size: number
  readonly sum: number
  readonly nonZero: Float64Array
}

const group = (values: ReadonlyArray<number>, name: string): Group => {
  let sum = 0
  const nonZero: Array<number> = []
  for (const value of values) {
    if (!Number.isFinite(value)) throw new RangeError(`${name}: values must be finite, got ${value}`)
    sum += value
    if (value !== 0) nonZero.push(value)
  }
  return { size: values.length, sum, nonZero: Float64Array.from(nonZero) }
}

const resampleMean = (g: Group, random: Random): number => {
  const count = g.nonZero.length
  if (count === 0) return 0
  const hits = random.binomial(g.size, count / g.size)
  let sum = 0
  for (let i = 0; i < hits; i++) sum += g.nonZero[random.int(count)] ?? 0
  return sum / g.size
}

/** Quantile q of sorted values, by linear interpolation between order statistics (Hyndman–Fan type 7). */
export const sortedQuantile = (sorted: Float64Array, q: number): number => {
  const h = (sorted.length - 1) * Math.min(1, Math.max(0, q))
  const i = Math.floor(h)
  const lower = sorted[i] ?? Number.NaN
  const upper = sorted[Math.min(i + 1, sorted.length - 1)] ?? Number.NaN
  return lower + (h - i) * (upper - lower)
}

/**
 * Jackknife influence values of a statistic of the two means, each divided by its group's size,
 * reduced to the acceleration a = Σ u³ / (6 (Σ u²)^{3/2}). Leaving out one customer changes only
 * that group's sum, so each value costs O(1); equal values share one evaluation.
 */
const acceleration = (t: Group, c: Group, statistic: (mt: number, mc: number) => number): number => {
  let sum2 = 0
  let sum3 = 0
  const add = (g: Group, leaveOut: (value: number) => number) => {
    const n = g.size
    // Zeros are not in nonZero: their leave-one-out value is shared by n − nonZero customers.
    const zeros = n - g.nonZero.length
    const values: Array<[number, number]> = zeros > 0 ? [[leaveOut(0), zeros]] : []
    for (const value of g.nonZero) values.push([leaveOut(value), 1])
    let mean = 0
    for (const [theta, weight] of values) mean += theta * weight
    mean /= n
    for (const [theta, weight] of values) {
      const u = (n - 1) * (mean - theta) / n
      sum2 += weight * u * u
      sum3 += weight * u * u * u
    }
  }
  const mt = t.sum / t.size
  const mc = c.sum / c.size
  add(t, (value) => statistic((t.sum - value) / (t.size - 1), mc))
  add(c, (value) => statistic(mt, (c.sum - value) / (c.size - 1)))
  return sum2 === 0 ? 0 : sum3 / (6 * Math.pow(sum2, 1.5))
}

const interval = (
  draws: Float64Array,
  observed: number,
  level: number,
  method: BootstrapMethod,
  accelerationOf: () => number
): Estimated => {
  for (const draw of draws) {
    if (!Number.isFinite(draw)) return insufficient("the statistic is undefined in some resamples (a zero control mean)")
  }
  const sorted = Float64Array.from(draws).sort()
  const alpha = (1 - level) / 2
  if (method === "percentile") {
    return estimate(observed, sortedQuantile(sorted, alpha), sortedQuantile(sorted, 1 - alpha), level)
  }
  let below = 0
  let equal = 0
  for (const draw of sorted) {
    if (draw < observed) below++
    else if (draw === observed) equal++
  }
  const share = (below + equal / 2) / sorted.length
  if (share <= 0 || share >= 1) {
    return insufficient("every resample fell on one side of the estimate: no bias correction is possible")
  }
  const z0 = normalQuantile(share)
  const a = accelerationOf()
  const adjusted = (q: number) => {
    const zq = normalQuantile(q)
    return normalCdf(z0 + (z0 + zq) / (1 - a * (z0 + zq)))
  }
  return estimate(observed, sortedQuantile(sorted, adjusted(alpha)), sortedQuantile(sorted, adjusted(1 - alpha)), level)
}

/** Bootstrap interval for the difference in mean value per customer, and for the relative lift. */
export const bootstrapMeanDifference = (
  treatment: ReadonlyArray<number>,
  control: ReadonlyArray<number>,
  options: BootstrapOptions
): Estimated<MeanDifferenceBootstrap> => {
  const level = options.level ?? DEFAULT_LEVEL
  checkLevel(level)
  const resamples = options.resamples ?? 2000
  if (!Number.isInteger(resamples) || resamples < 100) {
    throw new RangeError(`resamples must be an integer of at least 100, got ${resamples}`)
  }
  const method = options.method ?? "percentile"
  const t = group(treatment, "treatment")
  const c = group(control, "control")
  if (t.size < 2 || c.size < 2) return insufficient("each group needs at least two customers")
  const random = createRandom(options.seed)
  const differences = new Float64Array(resamples)
  const ratios = new Float64Array(resamples)
  for (let b = 0; b < resamples; b++) {
    const mt = resampleMean(t, random)
    const mc = resampleMean(c, random)
    differences[b] = mt - mc
    ratios[b] = mt / mc - 1
  }
  const treatmentMean = t.sum / t.size
  const controlMean = c.sum / c.size
  const difference = interval(
    differences,
    treatmentMean - controlMean,
    level,
    method,
    () => acceleration(t, c, (mt, mc) => mt - mc)
  )
  if (difference._tag === "InsufficientData") return difference
  const relativeLift = controlMean > 0
    ? interval(ratios, treatmentMean / controlMean - 1, level, method, () => acceleration(t, c, (mt, mc) => mt / mc - 1))
    : insufficient("the control group's mean value is not positive: no relative lift")
  return { ...difference, treatmentMean, controlMean, relativeLift, resamples, method }
}
