/**
 * The distributions the experiment analyses need: the standard normal (CDF, quantile, density),
 * Student's t (CDF, quantile) for small-sample regression, and the chi-square upper tail.
 *
 * No tables of magic constants beyond two well-known ones (Acklam's starting rational
 * approximation and Lanczos' log-gamma), each followed by a check against an accurate CDF:
 * - Φ comes from erfc, summed by the series of only positive terms below 2.5 and by its
 *   continued fraction above (Abramowitz & Stegun 7.1.6 and 7.1.14), so tails keep relative
 *   accuracy (about 1e-13 relative, 1e-15 absolute);
 * - the normal quantile starts from Acklam's approximation (relative error 1.15e-9) and takes two
 *   Halley steps on that Φ, which brings it to double precision;
 * - t and chi-square go through the regularised incomplete beta and gamma functions (continued
 *   fractions by the modified Lentz method, Numerical Recipes 3rd ed. §6.2 and §6.4).
 */

const SQRT_PI = Math.sqrt(Math.PI)
const LOG_SQRT_2PI = 0.5 * Math.log(2 * Math.PI)
const EPS = 1e-16
const TINY = 1e-300

/** erfc(z) for z ≥ 0. */
const erfcPositive = (z: number): number => {
  if (z < 2.5) {
    // erf z = 2/√π e^{-z²} Σ (2z²)^n z / (1·3·…·(2n+1)): every term positive, no cancellation.
    const twoZ2 = 2 * z * z
    let term = z
    let sum = z
    for (let n = 1; n < 500; n++) {
      term *= twoZ2 / (2 * n + 1)
      sum += term
      if (term < sum * EPS) break
    }
    return 1 - (2 / SQRT_PI) * Math.exp(-z * z) * sum
  }
  // erfc z = e^{-z²}/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …)))), by modified Lentz.
  let f = z
  let c = z
  let d = 0
  for (let n = 1; n < 1000; n++) {
    const a = n / 2
    d = z + a * d
    if (Math.abs(d) < TINY) d = TINY
    c = z + a / c
    if (Math.abs(c) < TINY) c = TINY
    d = 1 / d
    const delta = c * d
    f *= delta
    if (Math.abs(delta - 1) < EPS) break
  }
  return Math.exp(-z * z) / SQRT_PI / f
}

/** The complementary error function. */
export const erfc = (z: number): number => {
  if (Number.isNaN(z)) return Number.NaN
  if (z === Infinity) return 0
  if (z === -Infinity) return 2
  return z >= 0 ? erfcPositive(z) : 2 - erfcPositive(-z)
}

/** Standard normal density. */
export const normalPdf = (x: number): number => Math.exp(-0.5 * x * x - LOG_SQRT_2PI)

/** Standard normal CDF Φ(x); the lower tail keeps its relative accuracy far out (Φ(-30) ≈ 4.9e-198). */
export const normalCdf = (x: number): number => {
  if (Number.isNaN(x)) return Number.NaN
  if (x === Infinity) return 1
  if (x === -Infinity) return 0
  return x < 0 ? 0.5 * erfcPositive(-x / Math.SQRT2) : 1 - 0.5 * erfcPositive(x / Math.SQRT2)
}

// Acklam's rational approximation, used only as the starting point of the Halley steps.
const A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00] as const
const B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01] as const
const C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00] as const
const D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00] as const

/** Acklam's approximation for 0 < p ≤ 0.5 (a lower-tail quantile, ≤ 0). */
const acklamLower = (p: number): number => {
  if (p < 0.02425) {
    const q = Math.sqrt(-2 * Math.log(p))
    return (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) /
      ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1)
  }
  const q = p - 0.5
  const r = q * q
  return (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q /
    (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1)
}

/**
 * Standard normal quantile Φ⁻¹(p): Acklam's start refined by two Halley steps on `normalCdf`
 * (error below 1e-15 relative for p in [1e-300, 1 - 1e-16]). p = 0 and 1 give ∓Infinity.
 */
export const normalQuantile = (p: number): number => {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`normalQuantile: p must be in [0, 1], got ${p}`)
  if (p === 0) return -Infinity
  if (p === 1) return Infinity
  // 1 - p is exact for p ≥ 0.5, so symmetry costs no precision.
  if (p > 0.5) return -normalQuantile(1 - p)
  let x = acklamLower(p)
  for (let step = 0; step < 2; step++) {
    const e = normalCdf(x) - p
    const u = e * Math.sqrt(2 * Math.PI) * Math.exp(0.5 * x * x)
    x = x - u / (1 + 0.5 * x * u)
  }
  return x
}

// Lanczos (g = 7, n = 9) coefficients for log Γ, relative error about 1e-15.
const LANCZOS = [
  0.99999999999980993,
  676.5203681218851,
  -1259.1392167224028,
  771.32342877765313,
  -176.61502916214059,
  12.507343278686905,
  -0.13857109526572012,
  9.9843695780195716e-6,
  1.5056327351493116e-7
] as const

/** log Γ(x) for x > 0. */
export const logGamma = (x: number): number => {
  if (!(x > 0)) throw new RangeError(`logGamma: x must be positive, got ${x}`)
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x)
  const y = x - 1
  let a = LANCZOS[0]
  for (let i = 1; i < LANCZOS.length; i++) a += (LANCZOS[i] ?? 0) / (y + i)
  const t = y + 7.5
  return LOG_SQRT_2PI + (y + 0.5) * Math.log(t) - t + Math.log(a)
}

/** Stirling's series remainder of log Γ(x) for x ≥ 10: log Γ(x) − ((x − ½)log x − x + ½log 2π). */
const stirlingRemainder = (x: number): number => {
  const inv = 1 / x
  const inv2 = inv * inv
  return inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 / 1188))))
}

/**
 * log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b). With the larger argument ≥ 10 the large
 * terms are cancelled analytically, log Γ(a + b) − log Γ(a) = (a − ½)·log1p(b/a) + b·log(a + b)
 * − b + remainders, since for a t with many degrees of freedom (a = ν/2) the three log Γ values
 * are huge and their difference would keep only a few of their digits.
 */
const logBeta = (a: number, b: number): number => {
  const large = Math.max(a, b)
  const small = Math.min(a, b)
  if (large < 10) return logGamma(a) + logGamma(b) - logGamma(a + b)
  const difference = (large - 0.5) * Math.log1p(small / large) + small * Math.log(large + small) - small +
    stirlingRemainder(large + small) - stirlingRemainder(large)
  return logGamma(small) - difference
}

/** Continued fraction of the incomplete beta (Numerical Recipes `betacf`, modified Lentz). */
const betaContinuedFraction = (a: number, b: number, x: number): number => {
  const qab = a + b
  const qap = a + 1
  const qam = a - 1
  let c = 1
  let d = 1 - qab * x / qap
  if (Math.abs(d) < TINY) d = TINY
  d = 1 / d
  let h = d
  // It needs O(√max(a, b)) terms: enough for ν up to about 10¹⁰.
  for (let m = 1; m < 200_000; m++) {
    const m2 = 2 * m
    let aa = m * (b - m) * x / ((qam + m2) * (a + m2))
    d = 1 + aa * d
    if (Math.abs(d) < TINY) d = TINY
    c = 1 + aa / c
    if (Math.abs(c) < TINY) c = TINY
    d = 1 / d
    h *= d * c
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
    d = 1 + aa * d
    if (Math.abs(d) < TINY) d = TINY
    c = 1 + aa / c
    if (Math.abs(c) < TINY) c = TINY
    d = 1 / d
    const delta = d * c
    h *= delta
    if (Math.abs(delta - 1) < EPS) break
  }
  return h
}

/**
 * Regularised incomplete beta I_x(a, b); `y` is 1 − x and the logarithms of both are given
 * separately, so a caller that knows them more precisely than `1 − x` and `Math.log(x)` (a t with
 * many degrees of freedom: log x = −log1p(t²/ν)) keeps that precision.
 */
const incompleteBeta = (x: number, y: number, logX: number, logY: number, a: number, b: number): number => {
  if (x <= 0) return 0
  if (y <= 0) return 1
  const front = Math.exp(a * logX + b * logY - logBeta(a, b))
  return x < (a + 1) / (a + b + 2)
    ? front * betaContinuedFraction(a, b, x) / a
    : 1 - front * betaContinuedFraction(b, a, y) / b
}

/** Regularised incomplete beta I_x(a, b) for 0 ≤ x ≤ 1, a, b > 0. */
export const regularizedBeta = (x: number, a: number, b: number): number => {
  if (!(x >= 0 && x <= 1)) throw new RangeError(`regularizedBeta: x must be in [0, 1], got ${x}`)
  return incompleteBeta(x, 1 - x, Math.log(x), Math.log1p(-x), a, b)
}

const checkDf = (df: number, name: string): void => {
  if (!(df > 0)) throw new RangeError(`${name}: degrees of freedom must be positive, got ${df}`)
}

/**
 * Beyond this many degrees of freedom the incomplete beta's continued fraction accumulates
 * rounding (its terms grow as √ν), and t is within O(1/ν²) of its first-order expansion about
 * the normal, which is then the more accurate of the two.
 */
const LARGE_DF = 1e7

/** Student's t CDF with `df` degrees of freedom (df = Infinity is the normal); about 1e-12 accurate. */
export const studentTCdf = (t: number, df: number): number => {
  checkDf(df, "studentTCdf")
  if (Number.isNaN(t)) return Number.NaN
  if (df === Infinity) return normalCdf(t)
  if (df > LARGE_DF && Number.isFinite(t)) return normalCdf(t) - normalPdf(t) * (t * t * t + t) / (4 * df)
  if (t === Infinity) return 1
  if (t === -Infinity) return 0
  const t2 = t * t
  // P(|T| > |t|) = I_{ν/(ν+t²)}(ν/2, 1/2).
  const tail = 0.5 * incompleteBeta(
    df / (df + t2),
    t2 / (df + t2),
    -Math.log1p(t2 / df),
    Math.log(t2) - Math.log(df + t2),
    df / 2,
    0.5
  )
  return t > 0 ? 1 - tail : tail
}

/** Student's t density. */
export const studentTPdf = (t: number, df: number): number => {
  checkDf(df, "studentTPdf")
  if (df === Infinity) return normalPdf(t)
  // Γ((ν+1)/2) / (Γ(ν/2)·√(νπ)) = 1 / (√ν · B(ν/2, ½)).
  return Math.exp(-0.5 * Math.log(df) - logBeta(df / 2, 0.5) - (df + 1) / 2 * Math.log1p(t * t / df))
}

/** Fisher's (1925) expansion of the t quantile in powers of 1/ν (Abramowitz & Stegun 26.7.5), four terms. */
const cornishFisher = (z: number, df: number): number => {
  const z2 = z * z
  return z +
    z * (z2 + 1) / (4 * df) +
    z * ((5 * z2 + 16) * z2 + 3) / (96 * df ** 2) +
    z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / (384 * df ** 3) +
    z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / (92160 * df ** 4)
}

/** Lower-tail t quantile for 0 < p < 0.5: safeguarded Newton inside a bracket. */
const studentTQuantileLower = (p: number, df: number): number => {
  const z = normalQuantile(p)
  // Two terms of Fisher's expansion as the start (more terms diverge at small ν); the bracket
  // below makes the iteration safe when the start is poor.
  let x = z + z * (z * z + 1) / (4 * df) + z * ((5 * z * z + 16) * z * z + 3) / (96 * df * df)
  if (!(x < 0) || !Number.isFinite(x)) x = z
  let hi = 0
  let lo = Math.min(x, -1)
  while (studentTCdf(lo, df) > p) {
    hi = lo
    lo *= 2
  }
  x = Math.min(Math.max(x, lo), hi)
  for (let i = 0; i < 200; i++) {
    const f = studentTCdf(x, df) - p
    if (f === 0) return x
    if (f > 0) hi = x
    else lo = x
    let next = x - f / studentTPdf(x, df)
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi)
    if (Math.abs(next - x) <= 1e-15 * Math.abs(x)) return next
    x = next
  }
  return x
}

/** Student's t quantile: the t with P(T ≤ t) = p for `df` degrees of freedom. */
export const studentTQuantile = (p: number, df: number): number => {
  checkDf(df, "studentTQuantile")
  if (!(p >= 0 && p <= 1)) throw new RangeError(`studentTQuantile: p must be in [0, 1], got ${p}`)
  if (p === 0) return -Infinity
  if (p === 1) return Infinity
  if (p === 0.5) return 0
  if (df === Infinity) return normalQuantile(p)
  if (p > 0.5) return -studentTQuantile(1 - p, df)
  // Closed forms for ν = 1 (Cauchy) and ν = 2.
  if (df === 1) return Math.tan(Math.PI * (p - 0.5))
  if (df === 2) return (2 * p - 1) / Math.sqrt(2 * p * (1 - p))
  if (df > LARGE_DF) return cornishFisher(normalQuantile(p), df)
  return studentTQuantileLower(p, df)
}

/** Two-sided p-value of a t statistic. */
export const studentTTwoSidedP = (t: number, df: number): number => Math.min(1, 2 * studentTCdf(-Math.abs(t), df))

/** Regularised upper incomplete gamma Q(a, x) (Numerical Recipes `gser` / `gcf`). */
export const regularizedGammaQ = (a: number, x: number): number => {
  if (!(a > 0)) throw new RangeError(`regularizedGammaQ: a must be positive, got ${a}`)
  if (Number.isNaN(x)) return Number.NaN
  if (x <= 0) return 1
  if (x === Infinity) return 0
  const front = Math.exp(-x + a * Math.log(x) - logGamma(a))
  if (x < a + 1) {
    let ap = a
    let del = 1 / a
    let sum = del
    for (let n = 0; n < 100_000; n++) {
      ap += 1
      del *= x / ap
      sum += del
      if (Math.abs(del) < Math.abs(sum) * EPS) break
    }
    return 1 - sum * front
  }
  let b = x + 1 - a
  let c = 1 / TINY
  let d = 1 / b
  let h = d
  for (let i = 1; i < 100_000; i++) {
    const an = -i * (i - a)
    b += 2
    d = an * d + b
    if (Math.abs(d) < TINY) d = TINY
    c = b + an / c
    if (Math.abs(c) < TINY) c = TINY
    d = 1 / d
    const delta = d * c
    h *= delta
    if (Math.abs(delta - 1) < EPS) break
  }
  return front * h
}

/** Upper-tail p-value P(χ²_df ≥ statistic). */
export const chiSquareSurvival = (statistic: number, df: number): number => {
  checkDf(df, "chiSquareSurvival")
  return regularizedGammaQ(df / 2, statistic / 2)
}
