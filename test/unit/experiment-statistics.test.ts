/**
 * The statistics core of incrementality experiments (src/experiments/statistics): known values
 * from the papers and textbooks each method cites, closed forms, and fast-check properties (seeded,
 * so every run checks the same cases).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  analyseSwitchback,
  bootstrapMeanDifference,
  chiSquareSurvival,
  compareProportions,
  createRandom,
  erfc,
  type Estimated,
  fiellerInterval,
  fitSimplexWeights,
  incrementalConversions,
  logGamma,
  newcombeDifference,
  normalCdf,
  normalQuantile,
  ols,
  powerTwoMeans,
  placeboErrors,
  powerTwoProportions,
  prePostDesign,
  projectToSimplex,
  relativeLiftInterval,
  sampleRatioMismatch,
  sampleSizeTwoMeans,
  sampleSizeTwoProportions,
  studentTCdf,
  studentTQuantile,
  switchbackDays,
  switchbackDesign,
  switchbackPower,
  type SwitchbackDay,
  syntheticControl,
  tooFewOutcomes,
  wilsonInterval
} from "../../src/experiments/statistics/index.ts"

const SEED = 32
const runs = (numRuns: number) => ({ seed: SEED, numRuns })

const close = (actual: number, expected: number, tolerance: number, message?: string) =>
  assert.isAtMost(Math.abs(actual - expected), tolerance, `${message ?? ""} ${actual} vs ${expected}`)

const relClose = (actual: number, expected: number, tolerance: number, message?: string) =>
  assert.isAtMost(Math.abs(actual - expected) / Math.abs(expected), tolerance, `${message ?? ""} ${actual} vs ${expected}`)

/** The Estimate of an answer, failing the test on InsufficientData. */
const estimated = <A extends { readonly _tag: "Estimate" }>(answer: A | { readonly _tag: "InsufficientData"; readonly reason: string }): A => {
  if (answer._tag === "InsufficientData") throw new Error(`expected an estimate, got InsufficientData: ${answer.reason}`)
  return answer
}

const rounded = (answer: Estimated, digits: number) => {
  const e = estimated(answer)
  return [Number(e.lower.toFixed(digits)), Number(e.upper.toFixed(digits))]
}

// ---------------------------------------------------------------------------------------------

describe("distributions", () => {
  it("normal quantile and CDF match published values", () => {
    close(normalQuantile(0.975), 1.959963984540054, 2e-15)
    close(normalQuantile(0.5), 0, 0)
    close(normalQuantile(0.3), -0.5244005127080407, 1e-15)
    relClose(normalQuantile(1e-10), -6.361340902404056, 1e-14)
    close(normalCdf(1), 0.8413447460685429, 1e-15)
    close(normalCdf(1.96), 0.9750021048517795, 1e-15)
    relClose(normalCdf(-5), 2.866515718791939e-7, 1e-12)
    relClose(normalCdf(-10), 7.61985302416047e-24, 1e-12)
    assert.strictEqual(normalQuantile(0), -Infinity)
    assert.strictEqual(normalQuantile(1), Infinity)
    assert.throws(() => normalQuantile(1.5), RangeError)
  })

  it("Φ and Φ⁻¹ invert each other, and Φ is symmetric", () => {
    fc.assert(
      // The lower tail, where Φ keeps its relative accuracy (1 − Φ(x) for x > 0 rounds away digits).
      fc.property(fc.double({ min: -37, max: 0.5, noNaN: true }), (x) => {
        close(normalQuantile(normalCdf(x)), x, 1e-12 * Math.max(1, Math.abs(x)))
        close(normalCdf(x) + normalCdf(-x), 1, 1e-15)
      }),
      runs(300)
    )
    fc.assert(
      fc.property(fc.double({ min: 1e-300, max: 0.5, noNaN: true }), (p) => {
        relClose(normalCdf(normalQuantile(p)), p, 1e-12)
      }),
      runs(300)
    )
  })

  it("erfc and log-gamma agree with exact values", () => {
    close(erfc(0), 1, 1e-16)
    close(erfc(-Infinity), 2, 0)
    close(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-14)
    close(logGamma(1), 0, 1e-14)
    close(logGamma(10), Math.log(362880), 1e-13)
    close(logGamma(0.1), Math.log(9.513507698668732), 1e-13)
  })

  it("Student t: quantile(0.975, 10) = 2.228138852, the CDF matches closed forms", () => {
    close(studentTQuantile(0.975, 10), 2.228138852, 1e-9)
    close(studentTQuantile(0.975, 1), Math.tan(Math.PI * 0.475), 1e-12)
    close(studentTQuantile(0.025, 2), -4.302652729749464, 1e-12)
    close(studentTQuantile(0.975, 3), 3.182446305283706, 1e-12)
    close(studentTQuantile(0.975, 1e9), 1.959963984540054, 1e-8)
    // ν = 1 is Cauchy: F(t) = 1/2 + atan(t)/π.
    fc.assert(
      fc.property(fc.double({ min: -50, max: 50, noNaN: true }), (t) => {
        close(studentTCdf(t, 1), 0.5 + Math.atan(t) / Math.PI, 1e-13)
      }),
      runs(200)
    )
    // ν = 3: F(t) = 1/2 + (θ + sinθ·cosθ)/π, θ = atan(t/√3).
    fc.assert(
      fc.property(fc.double({ min: -50, max: 50, noNaN: true }), (t) => {
        const theta = Math.atan(t / Math.sqrt(3))
        close(studentTCdf(t, 3), 0.5 + (theta + Math.sin(theta) * Math.cos(theta)) / Math.PI, 1e-13)
      }),
      runs(200)
    )
    // Even ν: F(t) = 1/2 + sinθ/2 · Σ_{k<ν/2} c_k cos^{2k}θ, θ = atan(t/√ν), c_k = c_{k−1}(2k−1)/(2k).
    const evenCdf = (t: number, v: number) => {
      const theta = Math.atan(t / Math.sqrt(v))
      const c2 = Math.cos(theta) ** 2
      let sum = 0
      let c = 1
      let power = 1
      for (let k = 0; k < v / 2; k++) {
        if (k > 0) {
          c *= (2 * k - 1) / (2 * k)
          power *= c2
        }
        sum += c * power
      }
      return 0.5 + 0.5 * Math.sin(theta) * sum
    }
    fc.assert(
      fc.property(fc.double({ min: -20, max: 20, noNaN: true }), fc.integer({ min: 1, max: 15 }), (t, half) => {
        close(studentTCdf(t, 2 * half), evenCdf(t, 2 * half), 1e-13)
      }),
      runs(300)
    )
  })

  it("Student t quantile inverts the CDF for any df", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1e-6, max: 1 - 1e-6, noNaN: true }),
        fc.double({ min: 0.5, max: 500, noNaN: true }),
        (p, df) => {
          const t = studentTQuantile(p, df)
          close(studentTCdf(t, df), p, 1e-12)
        }
      ),
      runs(300)
    )
  })

  it("chi-square upper tail: 3.8415 at 1 df is 0.05, closed forms at 1 to 4 df", () => {
    close(chiSquareSurvival(3.841458820694124, 1), 0.05, 1e-14)
    close(chiSquareSurvival(0, 3), 1, 0)
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: 80, noNaN: true }), (x) => {
        close(chiSquareSurvival(x, 1), 2 * normalCdf(-Math.sqrt(x)), 1e-14)
        relClose(chiSquareSurvival(x, 2), Math.exp(-x / 2), 1e-12)
        relClose(
          chiSquareSurvival(x, 3),
          erfc(Math.sqrt(x / 2)) + Math.sqrt(2 * x / Math.PI) * Math.exp(-x / 2),
          1e-11
        )
        relClose(chiSquareSurvival(x, 4), Math.exp(-x / 2) * (1 + x / 2), 1e-12)
      }),
      runs(300)
    )
  })
})

// ---------------------------------------------------------------------------------------------

const countPair = fc.integer({ min: 1, max: 5000 }).chain((size) =>
  fc.integer({ min: 0, max: size }).map((conversions) => ({ conversions, size }))
)

describe("proportions", () => {
  it("Wilson intervals of Newcombe (1998a, method 3)", () => {
    assert.deepStrictEqual(rounded(wilsonInterval(81, 263), 4), [0.2553, 0.3662])
    assert.deepStrictEqual(rounded(wilsonInterval(15, 148), 4), [0.0624, 0.1605])
    assert.deepStrictEqual(rounded(wilsonInterval(0, 20), 4), [0, 0.1611])
    assert.deepStrictEqual(rounded(wilsonInterval(1, 29), 4), [0.0061, 0.1718])
    assert.strictEqual(wilsonInterval(0, 0)._tag, "InsufficientData")
    assert.throws(() => wilsonInterval(5, 4), RangeError)
    assert.throws(() => wilsonInterval(-1, 4), RangeError)
  })

  it("Newcombe's hybrid score interval reproduces the 1998b examples (method 10)", () => {
    const d = estimated(newcombeDifference({ conversions: 56, size: 70 }, { conversions: 48, size: 80 }))
    close(d.estimate, 0.2, 1e-15)
    assert.deepStrictEqual(rounded(d, 4), [0.0524, 0.3339])
    const examples: Array<[number, number, number, number, number, number]> = [
      [9, 10, 3, 10, 0.1705, 0.809],
      [5, 56, 0, 29, -0.0381, 0.1926],
      [0, 10, 0, 20, -0.1611, 0.2775],
      [0, 10, 0, 10, -0.2775, 0.2775],
      [10, 10, 0, 20, 0.6791, 1],
      [10, 10, 0, 10, 0.6075, 1]
    ]
    for (const [x1, n1, x2, n2, lower, upper] of examples) {
      const answer = newcombeDifference({ conversions: x1, size: n1 }, { conversions: x2, size: n2 })
      assert.deepStrictEqual(rounded(answer, 4), [lower, upper], `${x1}/${n1} − ${x2}/${n2}`)
    }
    assert.strictEqual(newcombeDifference({ conversions: 0, size: 0 }, { conversions: 1, size: 2 })._tag, "InsufficientData")
  })

  it("Wilson bounds lie in [0, 1] and contain the proportion", () => {
    fc.assert(
      fc.property(countPair, fc.double({ min: 0.5, max: 0.999, noNaN: true }), ({ conversions, size }, level) => {
        const w = estimated(wilsonInterval(conversions, size, level))
        assert.isAtLeast(w.lower, 0)
        assert.isAtMost(w.upper, 1)
        assert.isAtMost(w.lower, w.estimate)
        assert.isAtLeast(w.upper, w.estimate)
      }),
      runs(500)
    )
  })

  it("Newcombe's interval lies in [-1, 1], contains the difference, and swapping groups negates it", () => {
    fc.assert(
      fc.property(countPair, countPair, (treatment, control) => {
        const d = estimated(newcombeDifference(treatment, control))
        const swapped = estimated(newcombeDifference(control, treatment))
        assert.isAtLeast(d.lower, -1)
        assert.isAtMost(d.upper, 1)
        assert.isAtMost(d.lower, d.estimate)
        assert.isAtLeast(d.upper, d.estimate)
        close(swapped.estimate, -d.estimate, 1e-15)
        close(swapped.lower, -d.upper, 1e-12)
        close(swapped.upper, -d.lower, 1e-12)
        const wider = estimated(newcombeDifference(treatment, control, 0.99))
        assert.isAtMost(wider.lower, d.lower + 1e-15)
        assert.isAtLeast(wider.upper, d.upper - 1e-15)
      }),
      runs(500)
    )
  })

  it("the relative lift's Katz interval is log-symmetric, contains the lift, and needs conversions", () => {
    const lift = estimated(relativeLiftInterval({ conversions: 56, size: 70 }, { conversions: 48, size: 80 }))
    const se = Math.sqrt(1 / 56 - 1 / 70 + 1 / 48 - 1 / 80)
    close(lift.estimate, 1 / 3, 1e-15)
    close(lift.lower, (4 / 3) * Math.exp(-1.959963984540054 * se) - 1, 1e-12)
    close(lift.upper, (4 / 3) * Math.exp(1.959963984540054 * se) - 1, 1e-12)
    assert.strictEqual(relativeLiftInterval({ conversions: 0, size: 70 }, { conversions: 48, size: 80 })._tag, "InsufficientData")
    fc.assert(
      fc.property(countPair, countPair, (treatment, control) => {
        const answer = relativeLiftInterval(treatment, control)
        if (treatment.conversions === 0 || control.conversions === 0) {
          assert.strictEqual(answer._tag, "InsufficientData")
          return
        }
        const e = estimated(answer)
        assert.isAtLeast(e.lower, -1)
        assert.isAtMost(e.lower, e.estimate * (1 + 1e-12) + 1e-12)
        assert.isAtLeast(e.upper, e.estimate * (1 - 1e-12) - 1e-12)
        close(Math.log1p(e.upper) + Math.log1p(e.lower), 2 * Math.log1p(e.estimate), 1e-9)
      }),
      runs(300)
    )
  })

  it("incremental conversions are the difference interval times the treatment size", () => {
    const treatment = { conversions: 560, size: 7000 }
    const control = { conversions: 480, size: 8000 }
    const difference = estimated(newcombeDifference(treatment, control))
    const incremental = estimated(incrementalConversions(treatment, control))
    close(incremental.estimate, 140, 1e-9)
    close(incremental.lower, difference.lower * 7000, 1e-9)
    close(incremental.upper, difference.upper * 7000, 1e-9)
  })

  it("compareProportions answers InsufficientData below the minimum conversions", () => {
    const small = compareProportions({ conversions: 9, size: 1000 }, { conversions: 30, size: 1000 })
    assert.strictEqual(small._tag, "InsufficientData")
    const full = estimated(compareProportions({ conversions: 60, size: 1000 }, { conversions: 40, size: 1000 }))
    close(full.estimate, 0.02, 1e-15)
    close(full.incrementalConversions.estimate, 20, 1e-9)
    close(full.treatmentRate.estimate, 0.06, 1e-15)
    assert.strictEqual(full.relativeLift._tag, "Estimate")
  })
})

// ---------------------------------------------------------------------------------------------

describe("bootstrap of value per customer", () => {
  const values = (seed: number, n: number, conversion: number, meanValue: number) => {
    const random = createRandom(seed)
    return Array.from({ length: n }, () =>
      random.uniform() < conversion ? Math.exp(Math.log(meanValue) - 0.5 + random.normal()) : 0)
  }
  const treatment = values(1, 4000, 0.1, 60)
  const control = values(2, 4000, 0.1, 50)

  it("is reproducible from its seed and changes with it", () => {
    const a = estimated(bootstrapMeanDifference(treatment, control, { seed: 7, resamples: 500 }))
    const b = estimated(bootstrapMeanDifference(treatment, control, { seed: 7, resamples: 500 }))
    const c = estimated(bootstrapMeanDifference(treatment, control, { seed: 8, resamples: 500 }))
    assert.deepStrictEqual(a, b)
    assert.notStrictEqual(a.lower, c.lower)
    assert.strictEqual(a.estimate, c.estimate)
    assert.strictEqual(a.resamples, 500)
  })

  it("agrees with the normal-theory interval on large samples, percentile and BCa alike", () => {
    const mean = (xs: ReadonlyArray<number>) => xs.reduce((s, x) => s + x, 0) / xs.length
    const variance = (xs: ReadonlyArray<number>) => {
      const m = mean(xs)
      return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1)
    }
    const se = Math.sqrt(variance(treatment) / treatment.length + variance(control) / control.length)
    const difference = mean(treatment) - mean(control)
    for (const method of ["percentile", "bca"] as const) {
      const boot = estimated(bootstrapMeanDifference(treatment, control, { seed: 3, resamples: 4000, method }))
      close(boot.estimate, difference, 1e-9)
      close(boot.treatmentMean, mean(treatment), 1e-9)
      // Within a tenth of the normal interval's half-width at each end.
      close(boot.lower, difference - 1.959963984540054 * se, 0.1 * 1.96 * se, method)
      close(boot.upper, difference + 1.959963984540054 * se, 0.1 * 1.96 * se, method)
      const lift = estimated(boot.relativeLift)
      close(lift.estimate, mean(treatment) / mean(control) - 1, 1e-12)
      assert.isBelow(lift.lower, lift.estimate)
      assert.isAbove(lift.upper, lift.estimate)
    }
  })

  it("answers InsufficientData for tiny groups and a zero control mean", () => {
    assert.strictEqual(bootstrapMeanDifference([1], [1, 2], { seed: 1 })._tag, "InsufficientData")
    const zeroControl = estimated(bootstrapMeanDifference([1, 2, 3, 0], [0, 0, 0, 0], { seed: 1, resamples: 200 }))
    assert.strictEqual(zeroControl.relativeLift._tag, "InsufficientData")
    assert.throws(() => bootstrapMeanDifference([1, 2], [1, 2], { seed: 1, resamples: 10 }), RangeError)
  })
})

// ---------------------------------------------------------------------------------------------

/** A random design with full column rank: an intercept and k − 1 continuous columns. */
const design = fc.integer({ min: 1, max: 5 }).chain((k) =>
  fc.record({
    rows: fc.integer({ min: k + 2, max: 30 }).chain((n) =>
      fc.array(fc.array(fc.integer({ min: -10_000, max: 10_000 }).map((x) => x / 1000), { minLength: k - 1, maxLength: k - 1 }), {
        minLength: n,
        maxLength: n
      })
    ),
    beta: fc.array(fc.double({ min: -100, max: 100, noNaN: true }), { minLength: k, maxLength: k })
  })
)

describe("OLS", () => {
  it("matches a hand-solved line fit: coefficients, classic and HC1 errors, R²", () => {
    // x = 0..3, y = 1, 3, 2, 5: x̄ = 1.5, Sxx = 5, Sxy = 5.5, slope = intercept = 1.1,
    // residuals −0.1, 0.8, −1.3, 0.6, SSE = 2.7, σ̂² = 1.35, SST = 8.75.
    const fit = ols([[1, 0], [1, 1], [1, 2], [1, 3]], [1, 3, 2, 5])
    assert.strictEqual(fit._tag, "Fit")
    if (fit._tag !== "Fit") return
    close(fit.coefficients[0] ?? Number.NaN, 1.1, 1e-14)
    close(fit.coefficients[1] ?? Number.NaN, 1.1, 1e-14)
    close(fit.residualVariance, 1.35, 1e-14)
    close(fit.rSquared, 1 - 2.7 / 8.75, 1e-14)
    assert.strictEqual(fit.degreesOfFreedom, 2)
    // Var(slope) = σ̂²/Sxx = 0.27; Var(intercept) = σ̂²(1/n + x̄²/Sxx) = 0.945; Cov = −x̄σ̂²/Sxx = −0.405.
    close(fit.classicCovariance[3] ?? Number.NaN, 0.27, 1e-14)
    close(fit.classicCovariance[0] ?? Number.NaN, 0.945, 1e-14)
    close(fit.classicCovariance[1] ?? Number.NaN, -0.405, 1e-14)
    // HC1 slope: n/(n−k) · Σ(x−x̄)²e² / Sxx² = 2 · 1.415 / 25.
    close(fit.robustCovariance[3] ?? Number.NaN, 2 * 1.415 / 25, 1e-14)
  })

  it("solves an exact quadratic and recovers coefficients of any noiseless full-rank design", () => {
    const xs = [0, 1, 2, 3, 4, 5]
    const exact = ols(xs.map((x) => [1, x, x * x]), xs.map((x) => 2 + 3 * x - 0.5 * x * x))
    assert.strictEqual(exact._tag, "Fit")
    if (exact._tag !== "Fit") return
    exact.coefficients.forEach((c, j) => close(c, [2, 3, -0.5][j] ?? Number.NaN, 1e-12))
    close(exact.residualVariance, 0, 1e-24)
    fc.assert(
      fc.property(design, ({ rows, beta }) => {
        const x = rows.map((row) => [1, ...row])
        const y = x.map((row) => row.reduce((sum, value, j) => sum + value * (beta[j] ?? 0), 0))
        const fit = ols(x, y)
        // Random columns can be nearly dependent; such a design is rightly refused.
        if (fit._tag === "InsufficientData") return
        fit.coefficients.forEach((c, j) => close(c, beta[j] ?? Number.NaN, 1e-6 * (1 + Math.abs(beta[j] ?? 0))))
      }),
      runs(300)
    )
  })

  it("refuses a singular design or one without residual degrees of freedom", () => {
    const singular = ols([[1, 2, 2], [1, 3, 3], [1, 4, 4], [1, 5, 5]], [1, 2, 3, 5])
    assert.strictEqual(singular._tag, "InsufficientData")
    if (singular._tag === "InsufficientData") assert.include(singular.reason, "column(s) 2 depend")
    assert.strictEqual(ols([[1, 0], [1, 1]], [1, 2])._tag, "InsufficientData")
    assert.throws(() => ols([[1, 0], [1]], [1, 2]), RangeError)
  })

  it("Fieller's interval: hand-solved quadratic, unbounded when the denominator is not significant", () => {
    // a = 2, b = 4, Va = Vb = 0.25, t = 2: 15r² − 16r + 3 = 0.
    const interval = fiellerInterval(2, 4, 0.25, 0.25, 0, 2)
    assert.isDefined(interval)
    close(interval?.lower ?? Number.NaN, (8 - Math.sqrt(19)) / 15, 1e-14)
    close(interval?.upper ?? Number.NaN, (8 + Math.sqrt(19)) / 15, 1e-14)
    assert.isUndefined(fiellerInterval(2, 0.5, 0.25, 0.25, 0, 2))
  })
})

// ---------------------------------------------------------------------------------------------

const PATTERN = [100, 104, 98, 101, 120, 70, 60]
/** Days from Monday 2025-01-06, outcomes = pattern + effect when on (+ noise when given). */
const switchbackDays_ = (on: ReadonlyArray<boolean>, effect: number, noise: (i: number) => number = () => 0): Array<SwitchbackDay> =>
  on.map((isOn, i) => ({
    date: new Date(Date.UTC(2025, 0, 6 + i)).toISOString().slice(0, 10),
    on: isOn,
    outcomes: (PATTERN[i % 7] ?? 0) + (isOn ? effect : 0) + noise(i)
  }))
/** On every other day, the phase flipping each week, so each weekday is on in two weeks and off in two. */
const ALTERNATING = Array.from({ length: 28 }, (_, i) => ((i % 7) + Math.floor(i / 7)) % 2 === 0)

describe("switchback", () => {
  it("builds intercept, on, a dummy per weekday present but the first, and a centred weekly trend", () => {
    const d = switchbackDesign(switchbackDays_(ALTERNATING.slice(0, 14), 5), { trend: true })
    assert.deepStrictEqual(d.columns, ["intercept", "on", "dow:tue", "dow:wed", "dow:thu", "dow:fri", "dow:sat", "dow:sun", "trend"])
    assert.deepStrictEqual(d.rows[0], [1, 1, 0, 0, 0, 0, 0, 0, -6.5 / 7])
    assert.deepStrictEqual(d.rows[13], [1, ALTERNATING[13] === true ? 1 : 0, 0, 0, 0, 0, 0, 1, 6.5 / 7])
    // Given out of order, the days come back sorted.
    const shuffled = switchbackDesign([...switchbackDays_(ALTERNATING.slice(0, 14), 5)].reverse())
    assert.strictEqual(shuffled.dates[0], "2025-01-06")
    assert.throws(() => switchbackDesign([{ date: "2025-02-30", on: true, outcomes: 1 }]), RangeError)
    assert.throws(() => switchbackDesign([{ date: "2025-01-06", on: true, outcomes: 1 }, { date: "2025-01-06", on: false, outcomes: 1 }]), RangeError)
  })

  it("recovers the exact effect and relative lift of noiseless days despite the weekly pattern", () => {
    const result = estimated(analyseSwitchback(switchbackDays_(ALTERNATING, 7)))
    close(result.estimate, 7, 1e-10)
    close(result.lower, 7, 1e-9)
    close(result.upper, 7, 1e-9)
    const offLevel = PATTERN.reduce((s, x) => s + x, 0) / 7
    close(result.offLevel, offLevel, 1e-9)
    const lift = estimated(result.relativeLift)
    close(lift.estimate, 7 / offLevel, 1e-12)
    assert.strictEqual(result.daysOn + result.daysOff, 28)
    assert.strictEqual(result.degreesOfFreedom, 28 - 8)
  })

  it("gives a t interval that contains the effect, classic and HC1", () => {
    const random = createRandom(5)
    const noise = Array.from({ length: 28 }, () => 4 * random.normal())
    const days = switchbackDays_(ALTERNATING, 10, (i) => noise[i] ?? 0)
    const classic = estimated(analyseSwitchback(days))
    const robust = estimated(analyseSwitchback(days, { standardErrors: "hc1" }))
    assert.strictEqual(classic.estimate, robust.estimate)
    assert.notStrictEqual(classic.standardError, robust.standardError)
    const t = studentTQuantile(0.975, classic.degreesOfFreedom)
    close(classic.upper - classic.estimate, t * classic.standardError, 1e-12)
    assert.isBelow(classic.lower, classic.estimate)
    const lift = estimated(classic.relativeLift)
    assert.isBelow(lift.lower, lift.estimate)
    assert.isAbove(lift.upper, lift.estimate)
  })

  it("answers InsufficientData for too few days, one arm only, or on/off confounded with weekdays", () => {
    assert.strictEqual(analyseSwitchback(switchbackDays_(ALTERNATING.slice(0, 10), 7))._tag, "InsufficientData")
    assert.strictEqual(analyseSwitchback(switchbackDays_(new Array(28).fill(true), 7))._tag, "InsufficientData")
    // On exactly at weekends: the on column is the sum of the Saturday and Sunday dummies.
    const weekends = Array.from({ length: 28 }, (_, i) => i % 7 >= 5)
    const confounded = analyseSwitchback(switchbackDays_(weekends, 7))
    assert.strictEqual(confounded._tag, "InsufficientData")
    if (confounded._tag === "InsufficientData") assert.include(confounded.reason, "dow:sun depend")
  })
})

// ---------------------------------------------------------------------------------------------

const simplexPoint = (size: number) =>
  fc.array(fc.double({ min: 0.01, max: 1, noNaN: true }), { minLength: size, maxLength: size }).map((raw) => {
    const total = raw.reduce((s, x) => s + x, 0)
    return raw.map((x) => x / total)
  })

describe("synthetic control", () => {
  it("projects onto the simplex: known points, sum 1, non-negative, nearest", () => {
    assert.deepStrictEqual(Array.from(projectToSimplex([2, 0])), [1, 0])
    const third = Array.from(projectToSimplex([0.5, 0.5, 0.5]))
    third.forEach((w) => close(w, 1 / 3, 1e-15))
    const pair = Array.from(projectToSimplex([0.6, 0.2]))
    close(pair[0] ?? Number.NaN, 0.7, 1e-15)
    close(pair[1] ?? Number.NaN, 0.3, 1e-15)
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }).chain((n) =>
          fc.tuple(
            fc.array(fc.double({ min: -50, max: 50, noNaN: true }), { minLength: n, maxLength: n }),
            simplexPoint(n)
          )
        ),
        ([v, q]) => {
          const w = projectToSimplex(v)
          let sum = 0
          for (const x of w) {
            assert.isAtLeast(x, 0)
            sum += x
          }
          close(sum, 1, 1e-12)
          const distance = (a: ArrayLike<number>) => v.reduce((s, x, i) => s + (x - (a[i] ?? 0)) ** 2, 0)
          assert.isAtMost(distance(w), distance(q) + 1e-9)
        }
      ),
      runs(400)
    )
  })

  it("recovers known weights of noiseless convex combinations", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }).chain((J) =>
          fc.record({
            weights: simplexPoint(J).map((w) => (J > 2 ? w.map((x, j) => (j === 0 ? 0 : x / (1 - (w[0] ?? 0)))) : w)),
            donors: fc.integer({ min: J + 12, max: J + 40 }).chain((T) =>
              fc.array(fc.array(fc.double({ min: 1, max: 100, noNaN: true }), { minLength: T, maxLength: T }), {
                minLength: J,
                maxLength: J
              })
            )
          })
        ),
        ({ weights, donors }) => {
          const T = donors[0]?.length ?? 0
          const target = Array.from({ length: T }, (_, t) => donors.reduce((s, d, j) => s + (weights[j] ?? 0) * (d[t] ?? 0), 0))
          const fit = fitSimplexWeights(donors, target)
          fit.weights.forEach((w, j) => close(w, weights[j] ?? Number.NaN, 1e-6))
          assert.isAtMost(fit.sumOfSquares, 1e-12 * target.reduce((s, y) => s + y * y, 0))
        }
      ),
      runs(150)
    )
  })

  const random = createRandom(11)
  const donors = Array.from({ length: 4 }, (_, j) => Array.from({ length: 42 }, (_, t) => 50 + 10 * j + 8 * Math.sin(t / (2 + j)) + 3 * random.normal()))
  const truth = [0.5, 0, 0.3, 0.2]
  const combination = (t: number) => donors.reduce((s, d, j) => s + (truth[j] ?? 0) * (d[t] ?? 0), 0)

  it("recovers the effect of a noiseless target exactly, with R² = 1", () => {
    const target = Array.from({ length: 42 }, (_, t) => combination(t) + (t >= 28 ? 5 : 0))
    const result = estimated(syntheticControl({ target, donors, preDays: 28 }))
    result.weights.forEach((w, j) => close(w, truth[j] ?? Number.NaN, 1e-9))
    close(result.estimate, 5 * 14, 1e-8)
    close(result.perDay.estimate, 5, 1e-9)
    close(result.fit.rSquared, 1, 1e-12)
    close(result.fit.rmspe, 0, 1e-8)
    assert.isTrue(result.fit.sufficient)
    assert.strictEqual(result.days.length, 14)
    close(result.days[0]?.effect ?? Number.NaN, 5, 1e-9)
  })

  it("gives an interval that contains the effect and widens with the pre-period noise", () => {
    const noise = Array.from({ length: 42 }, () => random.normal())
    const widths = [0.5, 2].map((sd) => {
      const target = Array.from({ length: 42 }, (_, t) => combination(t) + sd * (noise[t] ?? 0) + (t >= 28 ? 5 : 0))
      const result = estimated(syntheticControl({ target, donors, preDays: 28 }))
      assert.isBelow(result.lower, result.estimate)
      assert.isAbove(result.upper, result.estimate)
      assert.isBelow(result.perDay.lower, result.perDay.estimate)
      assert.isAtLeast(result.fit.degreesOfFreedom, 28 - 3)
      return result.upper - result.lower
    })
    assert.isAbove(widths[1] ?? 0, 3 * (widths[0] ?? 0))
  })

  it("fits a shifted target only with the intercept, and flags a poor fit", () => {
    const target = Array.from({ length: 42 }, (_, t) => 200 + combination(t))
    const raw = estimated(syntheticControl({ target, donors, preDays: 28 }))
    assert.isFalse(raw.fit.sufficient)
    const demeaned = estimated(syntheticControl({ target, donors, preDays: 28 }, { intercept: true }))
    close(demeaned.fit.rSquared, 1, 1e-9)
    close(demeaned.estimate, 0, 1e-7)
    demeaned.weights.forEach((w, j) => close(w, truth[j] ?? Number.NaN, 1e-6))
    const unrelated = Array.from({ length: 42 }, () => 60 + 10 * random.normal())
    const poor = estimated(syntheticControl({ target: unrelated, donors, preDays: 28 }, { minimumRSquared: 0.5 }))
    assert.isBelow(poor.fit.rSquared, 0.5)
    assert.isFalse(poor.fit.sufficient)
  })

  it("answers InsufficientData without donors, pre-period days, post-period days or target variation", () => {
    const target = Array.from({ length: 42 }, (_, t) => combination(t))
    assert.strictEqual(syntheticControl({ target, donors: [], preDays: 28 })._tag, "InsufficientData")
    assert.strictEqual(syntheticControl({ target, donors, preDays: 10 })._tag, "InsufficientData")
    assert.strictEqual(syntheticControl({ target, donors, preDays: 42 })._tag, "InsufficientData")
    assert.strictEqual(syntheticControl({ target: new Array(42).fill(3), donors, preDays: 28 })._tag, "InsufficientData")
    assert.throws(() => syntheticControl({ target, donors: [[1, 2]], preDays: 28 }), RangeError)
  })
})

// ---------------------------------------------------------------------------------------------

describe("power and design", () => {
  it("two proportions 10% vs 12%, α = .05 two-sided, power .8: 3,841 per group (Fleiss; R power.prop.test)", () => {
    const absolute = sampleSizeTwoProportions({ baseline: 0.1, minimumEffect: 0.02, effectKind: "absolute" })
    assert.deepStrictEqual(absolute, { treatment: 3841, control: 3841, total: 7682 })
    assert.deepStrictEqual(sampleSizeTwoProportions({ baseline: 0.1, minimumEffect: 0.2, effectKind: "relative" }), absolute)
    const reached = (n: number) =>
      powerTwoProportions({ baseline: 0.1, minimumEffect: 0.02, effectKind: "absolute", treatment: n, control: n })
    assert.isAtLeast(reached(3841), 0.8)
    assert.isBelow(reached(3840), 0.8)
    // A 10% holdout needs more customers in all.
    const holdout = sampleSizeTwoProportions({ baseline: 0.1, minimumEffect: 0.02, effectKind: "absolute", treatmentShare: 0.9 })
    assert.isAbove(holdout.total, absolute.total)
    assert.isAtLeast(
      powerTwoProportions({ baseline: 0.1, minimumEffect: 0.02, effectKind: "absolute", treatment: holdout.treatment, control: holdout.control }),
      0.8
    )
    assert.throws(() => sampleSizeTwoProportions({ baseline: 0.1, minimumEffect: 0, effectKind: "absolute" }), RangeError)
  })

  it("two means, σ = 1, Δ = 0.5: 2(z.975 + z.8)²/0.25 = 62.8, so 63 per group", () => {
    const n = sampleSizeTwoMeans({ mean: 10, sd: 1, minimumEffect: 0.5, effectKind: "absolute" })
    assert.deepStrictEqual(n, { treatment: 63, control: 63, total: 126 })
    // A relative effect scales the treatment's SD too (1.05 here): 63 per group fall short, the relative size reaches it.
    const relative = { mean: 10, sd: 1, minimumEffect: 0.05, effectKind: "relative" as const }
    close(powerTwoMeans({ ...relative, treatment: 63, control: 63 }), 1 - 0.2 - 0.019, 0.01)
    const sized = sampleSizeTwoMeans(relative)
    // (1.96 + 0.8416)² × (1.05² + 1) / 0.25 = 66.01: 67 per group.
    assert.deepStrictEqual(sized, { treatment: 67, control: 67, total: 134 })
    assert.isAtLeast(powerTwoMeans({ ...relative, treatment: 67, control: 67 }), 0.8)
    assert.isBelow(powerTwoMeans({ ...relative, treatment: 66, control: 66 }), 0.8)
    assert.isBelow(powerTwoMeans({ mean: 10, sd: 1, minimumEffect: 0.5, effectKind: "absolute", treatment: 62, control: 62 }), 0.8)
  })

  it("switchback days: the fewest days whose power reaches the target", () => {
    const plan = { dailyMean: 1000, dailySd: 100, minimumEffect: 0.05, effectKind: "relative" as const }
    const { days, onDays, offDays } = switchbackDays(plan)
    assert.strictEqual(onDays + offDays, days)
    assert.isAtLeast(switchbackPower({ ...plan, days }), 0.8)
    assert.isBelow(switchbackPower({ ...plan, days: days - 1 }), 0.8)
    // The t quantiles make it a little more than the normal-theory 126 days.
    assert.isAtLeast(days, 126)
    assert.isAtMost(days, 132)
  })

  it("power grows with the sample and the sample size reaches the promised power", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.01, max: 0.5, noNaN: true }),
        fc.double({ min: 0.05, max: 0.5, noNaN: true }),
        fc.integer({ min: 10, max: 20_000 }),
        fc.double({ min: 0.1, max: 0.9, noNaN: true }),
        fc.double({ min: 0.5, max: 0.95, noNaN: true }),
        (baseline, lift, n, share, power) => {
          const effect = { baseline, minimumEffect: lift, effectKind: "relative" as const }
          const small = powerTwoProportions({ ...effect, treatment: n, control: n })
          const large = powerTwoProportions({ ...effect, treatment: 2 * n, control: 2 * n })
          // Both saturate at 1 in double precision for large samples.
          if (small < 0.999) assert.isAbove(large, small)
          else assert.isAtLeast(large, small)
          const size = sampleSizeTwoProportions({ ...effect, power, treatmentShare: share })
          assert.isAtLeast(powerTwoProportions({ ...effect, treatment: size.treatment, control: size.control }), power - 1e-12)
          const means = { mean: 50, sd: 80, minimumEffect: lift, effectKind: "relative" as const }
          assert.isAtLeast(powerTwoMeans({ ...means, treatment: 2 * n, control: 2 * n }), powerTwoMeans({ ...means, treatment: n, control: n }))
          const plan = { dailyMean: 500, dailySd: 80, minimumEffect: lift, effectKind: "relative" as const }
          const days = 10 + (n % 200)
          assert.isAtLeast(switchbackPower({ ...plan, days: days + 1 }), switchbackPower({ ...plan, days }))
        }
      ),
      runs(200)
    )
  })
})

describe("holdout value design against the simulation", () => {
  it("a relative value lift scales the treatment's spread: the design's power matches the simulated runs' (the bench's 59 % against 69 %)", () => {
    const p = 0.08
    const m = 60
    const mean = p * m
    const sd = Math.sqrt(p * m * m * Math.E - mean * mean)
    const promised = powerTwoMeans({ mean, sd, minimumEffect: 0.5, effectKind: "relative", treatment: 4000, control: 1000 })
    close(promised, 0.596, 0.005)
    // Exactly the variance of the simulated treatment group: values of mean 90 with the same log-normal shape.
    const treatmentSd = Math.sqrt(p * (m * 1.5) ** 2 * Math.E - (mean * 1.5) ** 2)
    close(treatmentSd, sd * 1.5, 1e-9)
  })
})

describe("pre/post design from in-time placebos", () => {
  /** Two donors with weekly patterns and a target tracking their mean with seeded noise of SD `noise`. */
  const history = (seed: number, days: number, noise: number, scale = 1) => {
    const random = createRandom(seed)
    const d1 = Array.from({ length: days }, (_, i) => scale * (40 + (i % 7) * 6 + 4 * random.normal()))
    const d2 = Array.from({ length: days }, (_, i) => scale * (60 + ((i * 3) % 5) * 5 + 4 * random.normal()))
    const target = d1.map((a, i) => (a + (d2[i] ?? 0)) / 2 + scale * noise * random.normal())
    return { target, donors: [d1, d2] }
  }

  it("a target the donors reproduce exactly has no placebo error: one post day detects any effect", () => {
    const { donors } = history(1, 60, 0)
    const target = donors[0]!.map((a, i) => 0.3 * a + 0.7 * (donors[1]![i] ?? 0))
    const errors = placeboErrors(target, donors, 28)
    assert.strictEqual(errors.placebos[0], 32)
    assert.strictEqual(errors.placebos[31], 1)
    for (const e of errors.rmse) assert.isBelow(e, 1e-6)
    const design = prePostDesign({ target, donors, preDays: 28, minimumEffect: 0.01, effectKind: "relative" })
    assert.strictEqual(design._tag, "Design")
    if (design._tag === "Design") assert.strictEqual(design.days, 1)
  })

  it("independent noise of SD σ: the placebo error of an L-day total is about σ√L, and the days follow (z.975 + z.8)²σ²/δ²", () => {
    const { target, donors } = history(2, 240, 5)
    const errors = placeboErrors(target, donors, 28)
    for (const L of [1, 4, 9]) close(errors.rmse[L - 1] ?? 0, 5 * Math.sqrt(L), 5 * Math.sqrt(L) * 0.35, `L = ${L}`)
    const design = prePostDesign({ target, donors, preDays: 28, minimumEffect: 5, effectKind: "absolute" })
    assert.strictEqual(design._tag, "Design")
    if (design._tag !== "Design") return
    // (1.96 + 0.84)² × 25 / 25 ≈ 7.8 days for independent noise and a known fit.
    assert.isAtLeast(design.days, 5)
    assert.isAtMost(design.days, 14)
    assert.isAtLeast(design.days * 5, 2.8 * design.totalError)
    assert.isAtLeast(design.placebos, 10)
  })

  it("properties: fewer days for a larger effect or a lower power; the same days at any scale (relative effect)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0.02, max: 0.3, noNaN: true }),
        fc.double({ min: 1.2, max: 3, noNaN: true }),
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        (seed, effect, factor, scale) => {
          const h = history(seed, 90, 6)
          const plan = { ...h, preDays: 21, effectKind: "relative" as const }
          const days = (d: ReturnType<typeof prePostDesign>) => (d._tag === "Design" ? d.days : Number.POSITIVE_INFINITY)
          const small = days(prePostDesign({ ...plan, minimumEffect: effect }))
          const large = days(prePostDesign({ ...plan, minimumEffect: effect * factor }))
          assert.isAtMost(large, small)
          assert.isAtMost(days(prePostDesign({ ...plan, minimumEffect: effect, power: 0.6 })), days(prePostDesign({ ...plan, minimumEffect: effect, power: 0.9 })))
          const scaled = history(seed, 90, 6, scale)
          assert.strictEqual(days(prePostDesign({ ...scaled, preDays: 21, effectKind: "relative", minimumEffect: effect })), small)
        }
      ),
      runs(25)
    )
  })

  it("a history too short for the placebos, or for a long enough window, is HistoryTooShort with the longest measured length", () => {
    const { target, donors } = history(3, 35, 5)
    const short = prePostDesign({ target, donors, preDays: 28, minimumEffect: 0.1, effectKind: "relative" })
    assert.strictEqual(short._tag, "HistoryTooShort")
    assert.strictEqual(short.longestMeasured, 0)
    const longer = history(4, 60, 20)
    const tiny = prePostDesign({ ...longer, preDays: 28, minimumEffect: 0.001, effectKind: "relative" })
    assert.strictEqual(tiny._tag, "HistoryTooShort")
    // 32 placebo starts: lengths up to 23 have at least 10.
    assert.strictEqual(tiny.longestMeasured, 23)
    const empty = prePostDesign({ target: new Array(60).fill(0), donors: longer.donors, preDays: 28, minimumEffect: 0.1, effectKind: "relative" })
    assert.strictEqual(empty._tag, "HistoryTooShort")
    assert.throws(() => prePostDesign({ target, donors, preDays: 28, minimumEffect: 0, effectKind: "relative" }), RangeError)
  })
})

// ---------------------------------------------------------------------------------------------

describe("checks", () => {
  it("sample ratio mismatch: chi-square against the planned split, flagged below p = 0.001", () => {
    const near = sampleRatioMismatch([5000, 5200], [1, 1])
    close(near.statistic, 20000 / 5100, 1e-12)
    close(near.pValue, 2 * normalCdf(-Math.sqrt(20000 / 5100)), 1e-14)
    assert.isFalse(near.mismatch)
    const far = sampleRatioMismatch([5000, 5400], [0.5, 0.5])
    close(far.statistic, 80000 / 5200, 1e-12)
    assert.isBelow(far.pValue, 0.001)
    assert.isTrue(far.mismatch)
    const holdout = sampleRatioMismatch([9000, 1000], [0.9, 0.1])
    assert.strictEqual(holdout.statistic, 0)
    assert.strictEqual(holdout.pValue, 1)
    const three = sampleRatioMismatch([100, 120, 80], [1, 1, 1])
    assert.strictEqual(three.degreesOfFreedom, 2)
    close(three.pValue, Math.exp(-three.statistic / 2), 1e-14)
    assert.isFalse(sampleRatioMismatch([0, 0], [1, 1]).mismatch)
    assert.throws(() => sampleRatioMismatch([1, 2], [1]), RangeError)
  })

  it("too few outcomes names the short groups", () => {
    assert.deepStrictEqual(tooFewOutcomes([{ name: "treatment", outcomes: 40 }, { name: "holdout", outcomes: 9 }], 10), {
      sufficient: false,
      short: ["holdout"]
    })
    assert.isTrue(tooFewOutcomes([{ name: "treatment", outcomes: 10 }], 10).sufficient)
  })
})

describe("seeded random", () => {
  it("repeats its sequence for a seed, and its draws have the right moments", () => {
    const a = createRandom(42)
    const b = createRandom(42)
    const c = createRandom(43)
    const first = Array.from({ length: 5 }, () => a.uniform())
    assert.deepStrictEqual(first, Array.from({ length: 5 }, () => b.uniform()))
    assert.notDeepEqual(first, Array.from({ length: 5 }, () => c.uniform()))
    const random = createRandom(1)
    let sum = 0
    let squares = 0
    const n = 100_000
    for (let i = 0; i < n; i++) {
      const u = random.uniform()
      assert.isTrue(u >= 0 && u < 1)
      sum += u
    }
    close(sum / n, 0.5, 0.005)
    sum = 0
    for (let i = 0; i < n; i++) {
      const z = random.normal()
      sum += z
      squares += z * z
    }
    close(sum / n, 0, 0.02)
    close(squares / n, 1, 0.02)
    for (const p of [0.01, 0.3, 0.8]) {
      let total = 0
      for (let i = 0; i < 200; i++) total += random.binomial(1000, p)
      close(total / 200, 1000 * p, 4 * Math.sqrt(1000 * p * (1 - p) / 200), `binomial p = ${p}`)
    }
    assert.strictEqual(random.binomial(10, 1), 10)
    assert.strictEqual(random.binomial(0, 0.5), 0)
  })
})
