/**
 * Ordinary least squares on an arbitrary design matrix, solved by Householder QR (no normal
 * equations, so a badly scaled design loses no more precision than it must), with classic and
 * HC1 (heteroskedasticity-robust, MacKinnon & White 1985) coefficient covariances and t intervals.
 * Also Fieller's interval for a ratio of two linear combinations of coefficients.
 */
import { studentTQuantile, studentTTwoSidedP } from "./distributions.ts"
import { bilinearForm, householderQr, inverseGram, quadraticForm, backSubstitute } from "./matrix.ts"
import { checkLevel, DEFAULT_LEVEL, type Estimate, type InsufficientData, insufficient } from "./result.ts"

export type StandardErrors = "classic" | "hc1"

export interface OlsFit {
  readonly _tag: "Fit"
  readonly observations: number
  readonly parameters: number
  /** Residual degrees of freedom, observations − parameters (at least 1). */
  readonly degreesOfFreedom: number
  readonly coefficients: ReadonlyArray<number>
  readonly fitted: ReadonlyArray<number>
  readonly residuals: ReadonlyArray<number>
  /** Residual variance SSE / (n − k). */
  readonly residualVariance: number
  /** 1 − SSE / SST with SST about the mean of y (can be negative for a design without an intercept). */
  readonly rSquared: number
  /** σ̂²(XᵀX)⁻¹, row-major k × k. */
  readonly classicCovariance: Float64Array
  /** HC1: n / (n − k) · (XᵀX)⁻¹ Xᵀ diag(e²) X (XᵀX)⁻¹, row-major k × k. */
  readonly robustCovariance: Float64Array
}

export type OlsResult = OlsFit | InsufficientData

/**
 * Fits y = Xβ + ε. `rows` are the design's rows (n rows of k values); `names` (optional) name the
 * columns in the reason of a singular design. A design whose columns are linearly dependent
 * (relative tolerance 1e-10) or with no residual degree of freedom is InsufficientData: its
 * coefficients are not identified, and no interval could be given. Throws a RangeError on rows of
 * unequal length or non-finite values.
 */
export const ols = (
  rows: ReadonlyArray<ReadonlyArray<number>>,
  y: ReadonlyArray<number>,
  names?: ReadonlyArray<string>
): OlsResult => {
  const n = rows.length
  if (y.length !== n) throw new RangeError(`ols: ${n} rows but ${y.length} responses`)
  if (n === 0) return insufficient("no observations")
  const k = rows[0]?.length ?? 0
  if (k === 0) throw new RangeError("ols: the design has no columns")
  rows.forEach((row, i) => {
    if (row.length !== k) throw new RangeError(`ols: row ${i} has ${row.length} columns, expected ${k}`)
  })
  if (n <= k) return insufficient(`${n} observations cannot estimate ${k} coefficients with an interval`)
  const qr = householderQr(rows, y, k)
  if (qr.kept.length < k) {
    const dependent = Array.from({ length: k }, (_, j) => j)
      .filter((j) => !qr.kept.includes(j))
      .map((j) => names?.[j] ?? String(j))
    return insufficient(`the design is singular: column(s) ${dependent.join(", ")} depend on the earlier ones`)
  }
  const beta = backSubstitute(qr.r, qr.qty, k)
  const fitted = new Array<number>(n)
  const residuals = new Array<number>(n)
  let mean = 0
  for (const value of y) mean += value
  mean /= n
  let sse = 0
  let sst = 0
  for (let i = 0; i < n; i++) {
    const row = rows[i] ?? []
    let value = 0
    for (let j = 0; j < k; j++) value += (row[j] ?? 0) * (beta[j] ?? 0)
    const observed = y[i] ?? 0
    fitted[i] = value
    residuals[i] = observed - value
    sse += (observed - value) ** 2
    sst += (observed - mean) ** 2
  }
  const df = n - k
  const sigma2 = sse / df
  const bread = inverseGram(qr.r, k)
  const classic = bread.map((value) => value * sigma2)
  // Meat Σ eᵢ² xᵢxᵢᵀ, then sandwich.
  const meat = new Float64Array(k * k)
  for (let i = 0; i < n; i++) {
    const row = rows[i] ?? []
    const e2 = (residuals[i] ?? 0) ** 2
    for (let a = 0; a < k; a++) {
      const xa = (row[a] ?? 0) * e2
      for (let b = 0; b < k; b++) meat[a * k + b] = (meat[a * k + b] ?? 0) + xa * (row[b] ?? 0)
    }
  }
  const robust = new Float64Array(k * k)
  const scale = n / df
  for (let a = 0; a < k; a++) {
    for (let b = 0; b < k; b++) {
      let sum = 0
      for (let c = 0; c < k; c++) {
        let inner = 0
        for (let d = 0; d < k; d++) inner += (meat[c * k + d] ?? 0) * (bread[d * k + b] ?? 0)
        sum += (bread[a * k + c] ?? 0) * inner
      }
      robust[a * k + b] = sum * scale
    }
  }
  return {
    _tag: "Fit",
    observations: n,
    parameters: k,
    degreesOfFreedom: df,
    coefficients: Array.from(beta),
    fitted,
    residuals,
    residualVariance: sigma2,
    rSquared: sst === 0 ? Number.NaN : 1 - sse / sst,
    classicCovariance: classic,
    robustCovariance: robust
  }
}

export const covarianceOf = (fit: OlsFit, standardErrors: StandardErrors): Float64Array =>
  standardErrors === "hc1" ? fit.robustCovariance : fit.classicCovariance

export interface CoefficientEstimate extends Estimate {
  readonly standardError: number
  readonly tStatistic: number
  readonly pValue: number
}

/** Coefficient j with its t interval on the fit's residual degrees of freedom. */
export const coefficientEstimate = (
  fit: OlsFit,
  j: number,
  options: { readonly level?: number; readonly standardErrors?: StandardErrors } = {}
): CoefficientEstimate => {
  const level = options.level ?? DEFAULT_LEVEL
  checkLevel(level)
  const k = fit.parameters
  if (!Number.isInteger(j) || j < 0 || j >= k) throw new RangeError(`coefficient ${j} is not in 0..${k - 1}`)
  const covariance = covarianceOf(fit, options.standardErrors ?? "classic")
  const value = fit.coefficients[j] ?? Number.NaN
  const se = Math.sqrt(Math.max(0, covariance[j * k + j] ?? Number.NaN))
  const t = studentTQuantile(0.5 + level / 2, fit.degreesOfFreedom)
  const tStatistic = se === 0 ? (value === 0 ? 0 : Math.sign(value) * Infinity) : value / se
  return {
    _tag: "Estimate",
    estimate: value,
    lower: value - t * se,
    upper: value + t * se,
    level,
    standardError: se,
    tStatistic,
    pValue: se === 0 ? (value === 0 ? 1 : 0) : studentTTwoSidedP(tStatistic, fit.degreesOfFreedom)
  }
}

/**
 * Fieller's interval for the ratio aᵀβ / bᵀβ of two linear combinations of coefficients with
 * covariance V and critical value `critical` (Fieller 1954): the ratios r with
 * (aᵀβ − r·bᵀβ)² ≤ critical²·(a − rb)ᵀV(a − rb). Unlike the delta method it stays correct when
 * the denominator is imprecise, and says so: when the denominator is not itself distinguishable
 * from zero the set is unbounded and the answer is undefined.
 */
export const fiellerInterval = (
  numerator: number,
  denominator: number,
  varianceNumerator: number,
  varianceDenominator: number,
  covariance: number,
  critical: number
): { readonly lower: number; readonly upper: number } | undefined => {
  const c2 = critical * critical
  const qa = denominator * denominator - c2 * varianceDenominator
  if (!(qa > 0)) return undefined
  const qb = numerator * denominator - c2 * covariance
  const qc = numerator * numerator - c2 * varianceNumerator
  const discriminant = Math.max(0, qb * qb - qa * qc)
  const root = Math.sqrt(discriminant)
  return { lower: (qb - root) / qa, upper: (qb + root) / qa }
}

/** Fieller interval for (cᵀβ)/(dᵀβ) of a fit: the linear combinations as coefficient vectors. */
export const ratioOfCombinations = (
  fit: OlsFit,
  numerator: ReadonlyArray<number>,
  denominator: ReadonlyArray<number>,
  options: { readonly level?: number; readonly standardErrors?: StandardErrors } = {}
): { readonly ratio: number; readonly interval: { readonly lower: number; readonly upper: number } | undefined } => {
  const level = options.level ?? DEFAULT_LEVEL
  checkLevel(level)
  const k = fit.parameters
  const covariance = covarianceOf(fit, options.standardErrors ?? "classic")
  let a = 0
  let b = 0
  for (let j = 0; j < k; j++) {
    a += (numerator[j] ?? 0) * (fit.coefficients[j] ?? 0)
    b += (denominator[j] ?? 0) * (fit.coefficients[j] ?? 0)
  }
  const t = studentTQuantile(0.5 + level / 2, fit.degreesOfFreedom)
  return {
    ratio: a / b,
    interval: fiellerInterval(
      a,
      b,
      quadraticForm(covariance, numerator, k),
      quadraticForm(covariance, denominator, k),
      bilinearForm(covariance, numerator, denominator, k),
      t
    )
  }
}
