/**
 * Design: how many customers or days an experiment needs to detect a given effect, and the power
 * a given size reaches (so a benchmark can compare the promised power with the reached one).
 *
 * The minimum detectable effect is `relative` (a share of the baseline: 0.2 is +20%) or `absolute`
 * (in the outcome's own units: 0.02 is two points of conversion rate). The test is two-sided at
 * `alpha`; power ignores rejections in the wrong direction (negligible at useful powers), which is
 * what makes the sample size and power functions exact inverses.
 */
import { normalCdf, normalQuantile, studentTCdf, studentTQuantile } from "./distributions.ts"

export type EffectKind = "relative" | "absolute"

interface Common {
  readonly minimumEffect: number
  readonly effectKind: EffectKind
  /** Two-sided significance level (default 0.05). */
  readonly alpha?: number
}

const checkUnit = (value: number, name: string): void => {
  if (!(value > 0 && value < 1)) throw new RangeError(`${name} must be in (0, 1), got ${value}`)
}

const checkShare = (share: number): void => checkUnit(share, "treatment share")

const shifted = (base: number, effect: number, kind: EffectKind): number =>
  kind === "relative" ? base * (1 + effect) : base + effect

export interface SampleSize {
  readonly treatment: number
  readonly control: number
  readonly total: number
}

export interface TwoProportionsDesign extends Common {
  /** Control (baseline) conversion rate; the treatment's is baseline shifted by the effect. */
  readonly baseline: number
  /** Target power (default 0.8). */
  readonly power?: number
  /** Share of customers in treatment (default 0.5; a 10% holdout is 0.9). */
  readonly treatmentShare?: number
}

const proportionsRates = (design: Common & { readonly baseline: number }) => {
  const alpha = design.alpha ?? 0.05
  checkUnit(alpha, "alpha")
  checkUnit(design.baseline, "baseline")
  const control = design.baseline
  const treatment = shifted(control, design.minimumEffect, design.effectKind)
  checkUnit(treatment, "the treatment rate (baseline shifted by the effect)")
  if (treatment === control) throw new RangeError("the minimum effect must not be zero")
  return { alpha, control, treatment }
}

/**
 * Customers per group for the two-sided test of two proportions, by the normal approximation
 * with the pooled variance under the null and the unpooled one under the alternative (Fleiss,
 * Levin & Paik 2003, §4.2, without continuity correction; the formula of R's `power.prop.test`).
 * For unequal groups (share s in treatment) it generalises to
 * N = [z_{1−α/2}·√(p̄q̄(1/s + 1/(1−s))) + z_{power}·√(p_t q_t/s + p_c q_c/(1−s))]² / Δ², p̄ = s·p_t + (1−s)·p_c,
 * each group then rounded up. p_c = 0.10, p_t = 0.12, α = 0.05, power 0.8: 3,841 per group.
 */
export const sampleSizeTwoProportions = (design: TwoProportionsDesign): SampleSize => {
  const { alpha, control, treatment } = proportionsRates(design)
  const power = design.power ?? 0.8
  checkUnit(power, "power")
  const s = design.treatmentShare ?? 0.5
  checkShare(s)
  const pooled = s * treatment + (1 - s) * control
  const null_ = Math.sqrt(pooled * (1 - pooled) * (1 / s + 1 / (1 - s)))
  const alternative = Math.sqrt(treatment * (1 - treatment) / s + control * (1 - control) / (1 - s))
  const total = ((normalQuantile(1 - alpha / 2) * null_ + normalQuantile(power) * alternative) / (treatment - control)) ** 2
  const t = Math.ceil(s * total)
  const c = Math.ceil((1 - s) * total)
  return { treatment: t, control: c, total: t + c }
}

export interface TwoProportionsPower extends Common {
  readonly baseline: number
  readonly treatment: number
  readonly control: number
}

/** Power of the two-sided two-proportion test with these group sizes (inverse of sampleSizeTwoProportions). */
export const powerTwoProportions = (design: TwoProportionsPower): number => {
  const { alpha, control, treatment } = proportionsRates(design)
  const nt = design.treatment
  const nc = design.control
  if (!(nt > 0 && nc > 0)) throw new RangeError(`group sizes must be positive, got ${nt} and ${nc}`)
  const pooled = (nt * treatment + nc * control) / (nt + nc)
  const null_ = Math.sqrt(pooled * (1 - pooled) * (1 / nt + 1 / nc))
  const alternative = Math.sqrt(treatment * (1 - treatment) / nt + control * (1 - control) / nc)
  return normalCdf((Math.abs(treatment - control) - normalQuantile(1 - alpha / 2) * null_) / alternative)
}

export interface TwoMeansDesign extends Common {
  /** Control mean of the outcome (the base of a relative effect). */
  readonly mean: number
  /**
   * Standard deviation of the outcome per customer in the control group. The treatment's is taken
   * as sd·(1 + effect) for a relative effect (an effect that multiplies values multiplies their
   * spread: the bench's holdout value runs reached 59 % where an equal-SD design promised 69 %),
   * and as sd for an absolute one (a shift).
   */
  readonly sd: number
  readonly power?: number
  readonly treatmentShare?: number
}

const meansDelta = (design: Common & { readonly mean: number; readonly sd: number }) => {
  const alpha = design.alpha ?? 0.05
  checkUnit(alpha, "alpha")
  if (!(design.sd > 0)) throw new RangeError(`sd must be positive, got ${design.sd}`)
  const delta = Math.abs(shifted(design.mean, design.minimumEffect, design.effectKind) - design.mean)
  if (!(delta > 0)) throw new RangeError("the minimum effect must not be zero")
  const treatmentSd = design.effectKind === "relative" ? design.sd * Math.abs(1 + design.minimumEffect) : design.sd
  return { alpha, delta, treatmentSd }
}

/**
 * Customers per group to compare two means (value per customer) by the normal approximation:
 * N = (z_{1−α/2} + z_{power})²·(σ_t²/s + σ_c²/(1−s)) / Δ², each group rounded up.
 */
export const sampleSizeTwoMeans = (design: TwoMeansDesign): SampleSize => {
  const { alpha, delta, treatmentSd } = meansDelta(design)
  const power = design.power ?? 0.8
  checkUnit(power, "power")
  const s = design.treatmentShare ?? 0.5
  checkShare(s)
  const total = ((normalQuantile(1 - alpha / 2) + normalQuantile(power)) / delta) ** 2 * (treatmentSd ** 2 / s + design.sd ** 2 / (1 - s))
  const t = Math.ceil(s * total)
  const c = Math.ceil((1 - s) * total)
  return { treatment: t, control: c, total: t + c }
}

export interface TwoMeansPower extends Common {
  readonly mean: number
  readonly sd: number
  readonly treatment: number
  readonly control: number
}

/** Power of the two-sided comparison of means with these group sizes. */
export const powerTwoMeans = (design: TwoMeansPower): number => {
  const { alpha, delta, treatmentSd } = meansDelta(design)
  if (!(design.treatment > 0 && design.control > 0)) throw new RangeError("group sizes must be positive")
  const se = Math.sqrt(treatmentSd ** 2 / design.treatment + design.sd ** 2 / design.control)
  return normalCdf(delta / se - normalQuantile(1 - alpha / 2))
}

export interface SwitchbackDesignPlan extends Common {
  /** Mean daily outcome with the campaign off (the base of a relative effect). */
  readonly dailyMean: number
  /**
   * Standard deviation of the daily outcome around its day-of-week pattern. The raw daily SD
   * also contains the weekly pattern the regression removes: passing it is conservative.
   */
  readonly dailySd: number
  /** Share of days on (default 0.5). */
  readonly onShare?: number
  /** Regression parameters besides intercept and on/off (default 6: the day-of-week dummies; 7 with a trend). */
  readonly controls?: number
}

const switchbackParts = (plan: SwitchbackDesignPlan) => {
  const alpha = plan.alpha ?? 0.05
  checkUnit(alpha, "alpha")
  if (!(plan.dailySd > 0)) throw new RangeError(`dailySd must be positive, got ${plan.dailySd}`)
  const delta = Math.abs(shifted(plan.dailyMean, plan.minimumEffect, plan.effectKind) - plan.dailyMean)
  if (!(delta > 0)) throw new RangeError("the minimum effect must not be zero")
  const s = plan.onShare ?? 0.5
  checkShare(s)
  const controls = plan.controls ?? 6
  if (!Number.isInteger(controls) || controls < 0) throw new RangeError(`controls must be a non-negative integer, got ${controls}`)
  return { alpha, delta, s, controls }
}

/**
 * Power of a switchback of `days` days: the regression's on/off coefficient has standard error
 * about σ·√(1/n_on + 1/n_off) (balanced across weekdays) and n − 2 − controls degrees of freedom;
 * power is approximated by the shifted central t, T_df(Δ/se − t_{1−α/2, df}) (the noncentral t
 * would be exact; the difference is below a percentage point from df ≈ 10).
 */
export const switchbackPower = (plan: SwitchbackDesignPlan & { readonly days: number }): number => {
  const { alpha, delta, s, controls } = switchbackParts(plan)
  const df = plan.days - 2 - controls
  if (!(df >= 1)) return 0
  const se = plan.dailySd * Math.sqrt(1 / (s * plan.days) + 1 / ((1 - s) * plan.days))
  return studentTCdf(delta / se - studentTQuantile(1 - alpha / 2, df), df)
}

/** Fewest days for which switchbackPower reaches `power` (default 0.8). */
export const switchbackDays = (plan: SwitchbackDesignPlan & { readonly power?: number }): { readonly days: number; readonly onDays: number; readonly offDays: number } => {
  const { alpha, delta, s, controls } = switchbackParts(plan)
  const power = plan.power ?? 0.8
  checkUnit(power, "power")
  // The normal-theory size is a lower bound (t quantiles exceed z): start there and walk up.
  const normal = ((normalQuantile(1 - alpha / 2) + normalQuantile(power)) * plan.dailySd / delta) ** 2 * (1 / s + 1 / (1 - s))
  let days = Math.max(controls + 3, Math.floor(normal))
  while (switchbackPower({ ...plan, days }) < power) days++
  const onDays = Math.round(s * days)
  return { days, onDays, offDays: days - onDays }
}
