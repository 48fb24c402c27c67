/**
 * Incrementality statistics under known truth (`npm run bench:incrementality`, issue 32).
 *
 * Each scenario simulates BENCH_RUNS experiments (default 1,000) with the seeded simulators of
 * src/experiments/statistics/simulate.ts and analyses each with the same functions the results
 * use (Newcombe for holdout counts, the bootstrap for holdout value, the day-of-week regression for
 * switchbacks, the synthetic control for pre/post). Per scenario it prints:
 *
 * - coverage: the share of 95 % intervals containing the true lift (goal 93-97 %);
 * - rejections: the share excluding zero; with a zero lift (A/A) the false-positive rate (goal 4-6 %),
 *   otherwise the power reached, beside the power the design functions promise for that size;
 * - bias: mean estimate minus the truth (and over the truth where it is not zero);
 * - insufficient: runs answered "not enough data".
 *
 * Pure computation (no database, no service): CPU only. BENCH_SEED (default 20261129) fixes every
 * draw; BENCH_RESAMPLES (default 1000) the bootstrap's resamples. With `--through-ingest` a second
 * phase (through-ingest.ts) posts BENCH_INGEST_RUNS simulated experiments per kind through the real
 * ingest and experiments API of an in-process server and checks each answer equals these functions
 * on the same figures.
 */
import {
  type CoverageSummary,
  createRandom,
  normalCdf,
  normalQuantile,
  placeboErrors,
  powerTwoMeans,
  powerTwoProportions,
  simulateProportionsCoverage,
  simulateSwitchbackCoverage,
  simulateSyntheticControlCoverage,
  simulateSyntheticControlSeries,
  simulateValueCoverage,
  switchbackPower
} from "../../src/experiments/statistics/index.ts"
import { intFromEnv } from "../support.ts"

const RUNS = intFromEnv("BENCH_RUNS", 1000, 1_000_000)
const SEED = intFromEnv("BENCH_SEED", 20261129, 2 ** 31 - 1)
const RESAMPLES = intFromEnv("BENCH_RESAMPLES", 1000, 100_000)

interface Row {
  readonly kind: string
  readonly scenario: string
  readonly summary: CoverageSummary
  /** The design's power for this size and true effect; null for A/A and where no design exists. */
  readonly promised: number | null
  readonly seconds: number
}

const rows: Array<Row> = []
const timed = (kind: string, scenario: string, promised: number | null, run: () => CoverageSummary) => {
  const started = performance.now()
  const summary = run()
  rows.push({ kind, scenario, summary, promised, seconds: (performance.now() - started) / 1000 })
  process.stderr.write(`  ${kind} ${scenario}: ${summary.runs} runs in ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
}

// Audience holdout, counts: a 10 % holdout of 20,000 customers, 5 % baseline conversion.
const holdout = { treatmentSize: 18_000, controlSize: 2_000, baselineRate: 0.05 }
for (const [name, lift] of [["zero (A/A)", 0], ["small +10 %", 0.1], ["large +40 %", 0.4]] as const) {
  const promised = lift === 0
    ? null
    : powerTwoProportions({ baseline: holdout.baselineRate, minimumEffect: lift, effectKind: "relative", treatment: holdout.treatmentSize, control: holdout.controlSize })
  timed("holdout count", name, promised, () => simulateProportionsCoverage({ ...holdout, relativeLift: lift }, { runs: RUNS, seed: SEED }).difference)
}

// Audience holdout, value per customer: 8 % convert, log-normal values (mean 60, σ of log 1).
const value = { treatmentSize: 4_000, controlSize: 1_000, conversionRate: 0.08, meanValue: 60, valueLogSd: 1 }
const perCustomerMean = value.conversionRate * value.meanValue
const perCustomerSd = Math.sqrt(value.conversionRate * value.meanValue ** 2 * Math.exp(value.valueLogSd ** 2) - perCustomerMean ** 2)
for (const [name, lift] of [["zero (A/A)", 0], ["small +15 %", 0.15], ["large +50 %", 0.5]] as const) {
  const promised = lift === 0
    ? null
    : powerTwoMeans({ mean: perCustomerMean, sd: perCustomerSd, minimumEffect: lift, effectKind: "relative", treatment: value.treatmentSize, control: value.controlSize })
  timed("holdout value", name, promised, () =>
    simulateValueCoverage({ ...value, relativeLift: lift, resamples: RESAMPLES }, { runs: RUNS, seed: SEED + 1 }))
}

// Switchback: 28 days, weekly seasonality (weekend dip), daily noise sd 10 around 100; and one with a trend.
const switchback = { days: 28, offLevel: 100, noiseSd: 10 }
for (const [name, effect, trend] of [["zero (A/A)", 0, 0], ["small +6/day", 6, 0], ["large +20/day", 20, 0], ["zero, trend +1/day", 0, 1]] as const) {
  const promised = effect === 0
    ? null
    : switchbackPower({ dailyMean: switchback.offLevel, dailySd: switchback.noiseSd, minimumEffect: effect, effectKind: "absolute", days: switchback.days })
  timed("switchback", name, promised, () =>
    simulateSwitchbackCoverage({ ...switchback, effect, trendPerDay: trend }, { runs: RUNS, seed: SEED + 2 }))
}

// Pre/post with a synthetic control: 56 pre days, 14 post days, 8 donors, AR(1) noise.
const prePost = { preDays: 56, postDays: 14, donors: 8, noiseSd: 3, autocorrelation: 0.3 }
// What the pre/post design promises: its in-time placebos (statistics/pre-post-power.ts) on
// histories of the same process, 180 days each, as the design reads a profile's: the post
// window's total error, the mean of its squares over PROMISE_HISTORIES histories, then
// power = Φ(L·effect / error − z) for the L = 14 post days the runs have.
const PROMISE_HISTORIES = 20
const promiseRandom = createRandom(SEED + 4)
const squared = Array.from({ length: PROMISE_HISTORIES }, () => {
  const history = simulateSyntheticControlSeries(promiseRandom, { ...prePost, postDays: 180 - prePost.preDays, effectPerDay: 0 })
  const error = placeboErrors(history.target, history.donors, prePost.preDays).rmse[prePost.postDays - 1] ?? Number.NaN
  return error * error
})
const postError = Math.sqrt(squared.reduce((sum, x) => sum + x, 0) / squared.length)
const prePostPower = (effect: number) => normalCdf((prePost.postDays * effect) / postError - normalQuantile(0.975))
for (const [name, effect] of [["zero (A/A)", 0], ["small +2/day", 2], ["large +8/day", 8]] as const) {
  timed("pre/post", name, effect === 0 ? null : prePostPower(effect), () =>
    simulateSyntheticControlCoverage({ ...prePost, effectPerDay: effect }, { runs: RUNS, seed: SEED + 3 }))
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : "n/a")
const num = (x: number) => (Number.isFinite(x) ? x.toPrecision(3) : "n/a")
const flag = (ok: boolean) => (ok ? "" : " !")

console.log(`\nincrementality: ${RUNS} runs per scenario, seed ${SEED}, ${RESAMPLES} bootstrap resamples\n`)
console.log("| kind | scenario | runs (insufficient) | coverage (93-97 %) | A/A false positives (4-6 %) | power reached / promised | bias (relative) |")
console.log("| --- | --- | --- | --- | --- | --- | --- |")
for (const { kind, scenario, summary: s, promised } of rows) {
  const aa = s.truth === 0
  const bias = s.meanEstimate - s.truth
  console.log(
    `| ${kind} | ${scenario} | ${s.runs} (${s.insufficient}) | ${pct(s.coverage)}${flag(s.coverage >= 0.93 && s.coverage <= 0.97)} | ` +
      `${aa ? pct(s.rejectionRate) + flag(s.rejectionRate >= 0.04 && s.rejectionRate <= 0.06) : ""} | ` +
      `${aa ? "" : `${pct(s.rejectionRate)} / ${promised === null ? "n/a" : pct(promised)}`} | ` +
      `${num(bias)}${aa ? "" : ` (${pct(bias / s.truth)})`} |`
  )
}
console.log("\n! outside its goal (with few runs the spread alone can put a figure outside: at 1,000 runs a 95 % coverage has a standard error of 0.7 points)")

// The same processes through the real ingest and experiments API, compared run by run with the
// functions above (bench/incrementality/through-ingest.ts); loaded only when asked.
if (process.argv.includes("--through-ingest")) {
  const { runThroughIngest } = await import("./through-ingest.ts")
  await runThroughIngest()
}
