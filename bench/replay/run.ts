/**
 * Full attribution replay (`npm run bench:replay`). Decision 0035; figures in bench/README.md.
 *
 * In-process, on the PostgreSQL of `DATABASE_URL` (required: a million-touch profile is no job
 * for the embedded database, and the figure is meant for the production setup): the service's
 * own layers (configuration, database pool, migrations, `CreditEngine`, `AttributionWorker` with
 * its default settings, background fibers off). A profile is generated with set-based SQL
 * (bench/replay/dataset.ts; its time is printed, not counted), then, in the same run:
 *
 * - baseline "statistics": the `svc_model` statistics (`CreditEngine.pathStats`), which a replay
 *   computes first, next to the same statistics computed as before (decision 0030's query: every
 *   path as an array, then `buildPathStats`);
 * - baseline "read": the candidate touches of every conversion with the replay's own SQL
 *   (`AttributionRepo.candidateTouches`, batches of the replay's size), nothing credited or written;
 * - baseline "compute": the six pure models (`creditAll`) over those paths in memory;
 * - four replays, each `ReplayQueue.enqueue` then `AttributionWorker.runNextReplay` (the worker's real
 *   code path: claim, lease, statistics, batches, locks, reads, writes, renewals, success):
 *   1. first credit: the conversions have no rows yet;
 *   2. after the `purchase` definition's window went from 30 to 14 days (rows deleted and changed);
 *   3. after it went back to 30 days (rows inserted and changed);
 *   4. nothing changed (every row is recomputed and found equal).
 *
 * touches/s = the profile's touches / replay seconds (goal: 300k/s at 1M; 10M in under 60 s, issue 35);
 * credit rows/s = the rows the profile has after the replay / replay seconds. After each replay the bench
 * checks (not timed) that the stored rows are exactly `creditAll`'s over the read paths with the
 * statistics of that state, and that `pathStats` equals the straightforward statistics; at the
 * end a sample of conversions is credited from scratch with independent SQL and compared
 * (bench/replay/check.ts). A mismatch fails the run.
 *
 * Settings (env): BENCH_TOUCHES (1000000), BENCH_CUSTOMERS (touches / 10), BENCH_CONVERT_EVERY (2: one
 * customer in 2 converts, issue 35's shape: 50k conversions per 1M touches; before issue 35 it was 20), BENCH_REPLAYS (4: how
 * many of the replays above), BENCH_SAMPLE (300 conversions checked independently), BENCH_BATCH
 * and BENCH_CONCURRENCY (override the worker's replay batch size and concurrency, to compare),
 * BENCH_KEEP=1 keeps the profile (otherwise its touches, conversions and credits are deleted at
 * the end, also after a failure; its customers stay, see `dropDataset`), BENCH_PROFILE=<id>
 * measures a kept profile again without generating (its credit rows are deleted first; it stays),
 * BENCH_PROFILE=<id> BENCH_DROP=1 drops it.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CreditEngine, pathsByConversion } from "../../src/attribution/engine.ts"
import { creditAll, type PathStats } from "../../src/attribution/models/index.ts"
import { REPLAY_JOB_KIND, ReplayQueue } from "../../src/attribution/jobs/repo.ts"
import { AttributionRepo, type CandidateTouch } from "../../src/attribution/repo.ts"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { RunnerLiveness } from "../../src/platform/liveness.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { availableParallelism } from "node:os"
import { fmt, intFromEnv, processCpuMs, runInProcessBench } from "../support.ts"
import {
  addExpected,
  checkInChunks,
  type CreditState,
  dropSnapshot,
  independentSample,
  referencePathStats,
  snapshotBefore,
  type stateChanges,
  statsDifference
} from "./check.ts"
import { type Dataset, dropDataset, existingDataset, generateDataset, resetDataset } from "./dataset.ts"

/** Issue 35 part 1: at least 300k touches/s at 1M touches, and 10M touches in under 60 s. */
const GOAL_TOUCHES_PER_SECOND = 300_000
const GOAL_SECONDS_AT_10M = 60

interface Target {
  readonly id: string
  readonly profile_id: string
  readonly occurred_ms: number
  readonly window_days: number
  readonly eligible: boolean
  readonly customer_id: string | null
  readonly occurred_at: string
  readonly definition_id: string | null
}

/** Seconds an effect takes (wall clock). */
const clock = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.map(effect, (value) => ({ value, seconds: (performance.now() - started) / 1000 }))
  })

/** CPU ms used so far by this process and by the pool's PostgreSQL backends (read from /proc: same machine only). */
const cpuNow = (sql: SqlClient) =>
  Effect.map(
    sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'attribution-service'`,
    (rows) => {
      const backends = new Map<number, number>()
      for (const row of rows) {
        const ms = processCpuMs(row.pid)
        if (ms !== undefined) backends.set(row.pid, ms)
      }
      const usage = process.cpuUsage()
      return { node: (usage.user + usage.system) / 1000, backends }
    }
  )

type Cpu = Effect.Success<ReturnType<typeof cpuNow>>

const cpuSince = (before: Cpu, after: Cpu) => {
  let postgres = 0
  for (const [pid, ms] of after.backends) postgres += ms - (before.backends.get(pid) ?? 0)
  return { node: after.node - before.node, postgres, readable: after.backends.size > 0 }
}

const program = Effect.gen(function*() {
  const sql = yield* SqlClient
  const engine = yield* CreditEngine
  const worker = yield* AttributionWorker
  const queue = yield* ReplayQueue
  const attribution = yield* AttributionRepo
  const settings = yield* AttributionWorkerSettings
  const touchesWanted = intFromEnv("BENCH_TOUCHES", 1_000_000, 20_000_000)
  const customers = intFromEnv("BENCH_CUSTOMERS", Math.max(100, Math.floor(touchesWanted / 10)), 10_000_000)
  const convertEvery = intFromEnv("BENCH_CONVERT_EVERY", 2, 1000)
  const replays = intFromEnv("BENCH_REPLAYS", 4, 4)
  const sampleSize = intFromEnv("BENCH_SAMPLE", 300, 100_000)
  const keep = process.env["BENCH_KEEP"] === "1"

  const [other] = yield* sql<{ n: number }>`
    SELECT count(*)::int AS n FROM work_jobs WHERE kind = ${REPLAY_JOB_KIND} AND state IN ('queued', 'running')`
  if ((other?.n ?? 0) > 0) {
    return yield* Effect.fail(
      new Error(`${other?.n} attribution replay(s) are queued or running in this database; the bench needs the worker to itself`)
    )
  }
  const [server] = yield* sql<{ version: string }>`SELECT current_setting('server_version') AS version`
  console.log(
    `node ${process.versions.node}, PostgreSQL ${server?.version ?? "?"}; replay batches of ${settings.replayBatchSize} conversions, ` +
      `${settings.replayBatchConcurrency} at a time; ` +
      `${availableParallelism()} cores (shared with other work)`
  )

  const reuse = process.env["BENCH_PROFILE"]
  const dropOf = (dataset: Dataset) =>
    Effect.andThen(
      dropDataset(sql, dataset),
      Effect.sync(() => console.log(`dropped profile ${dataset.profileId}'s touches, conversions and credits (its customers stay)`))
    )
  let dataset: Dataset
  if (reuse === undefined) {
    process.stdout.write(`generating ${fmt(touchesWanted)} touches over ${fmt(customers)} customers ...`)
    const generated = yield* clock(generateDataset(sql, { touches: touchesWanted, customers, convertEvery }))
    dataset = generated.value
    console.log(` ${fmt(generated.seconds, 1)} s (not counted)`)
    const generatedDataset = dataset
    yield* Effect.addFinalizer(() =>
      keep
        ? Effect.sync(() =>
          console.log(`kept profile ${generatedDataset.profileId}; drop it with BENCH_PROFILE=${generatedDataset.profileId} BENCH_DROP=1`)
        )
        : dropOf(generatedDataset).pipe(
          Effect.catchCause((cause) => Effect.sync(() => console.error(`dropping the profile failed: ${String(cause)}`)))
        )
    )
  } else {
    dataset = yield* existingDataset(sql, reuse)
    if (process.env["BENCH_DROP"] === "1") return yield* dropOf(dataset)
    console.log(`reusing the kept profile ${reuse} (BENCH_PROFILE; it stays): its credit rows are deleted first`)
    yield* resetDataset(sql, dataset)
  }
  console.log(
    `dataset: profile ${dataset.profileId}: ${fmt(dataset.touches)} touches, ${fmt(dataset.conversions)} conversions, ` +
      `${fmt(dataset.customers)} customers (${fmt(dataset.boundAnonymousIds)} bound anonymous ids, ${fmt(dataset.visitors)} unbound visitors)`
  )

  // --- Baseline "statistics": the svc_model statistics a replay computes first, and the same
  // statistics the straightforward way (decision 0030's query: every path as an array).
  const statsRun = yield* clock(engine.pathStats(dataset.profileId))
  const reference = yield* clock(referencePathStats(sql, dataset.profileId))
  const statsDiff = statsDifference(statsRun.value, reference.value.stats)

  // --- Baseline "read": every conversion's candidate touches, replay-sized batches, the same SQL.
  const targets = yield* sql<Target>`
    SELECT c.id::text AS id, c.profile_id::text AS profile_id, floor(extract(epoch FROM c.occurred_at) * 1000)::float8 AS occurred_ms,
           COALESCE(d.lookback_window_days, 30) AS window_days, COALESCE(d.attribution_eligible, c.attribution_eligible) AS eligible,
           c.customer_id::text AS customer_id, c.occurred_at::text AS occurred_at, c.definition_id::text AS definition_id
    FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
    WHERE c.profile_id = ${dataset.profileId}
    ORDER BY c.occurred_at, c.id`
  const creditable = targets.filter((target) => target.eligible && target.customer_id !== null)
  const readRun = yield* clock(Effect.gen(function*() {
    const rows: Array<CandidateTouch> = []
    for (let start = 0; start < creditable.length; start += settings.replayBatchSize) {
      const batch = yield* attribution.candidateTouches(creditable.slice(start, start + settings.replayBatchSize))
      for (const row of batch) rows.push(row)
    }
    return rows
  }))
  // --- Baseline "compute": the six models over the same paths, in memory (second pass timed: JIT warm).
  const stats: PathStats = reference.value.stats
  const { candidateCount, computeRun } = yield* Effect.sync(() => {
    const paths = pathsByConversion(readRun.value)
    const computeOnce = () => {
      let rows = 0
      for (const target of creditable) {
        for (const result of creditAll({ occurred_at: target.occurred_ms, lookback_window_days: target.window_days }, paths.get(target.id) ?? [], stats)) {
          rows += result.rows.length
        }
      }
      return rows
    }
    computeOnce()
    const started = performance.now()
    const value = computeOnce()
    return { candidateCount: readRun.value.length, computeRun: { value, seconds: (performance.now() - started) / 1000 } }
  })
  const creditRows = computeRun.value
  // The baseline's rows are not kept through the replays: a worker does not hold a profile's paths,
  // and at 10M touches these millions of objects made the replay's garbage collection the bench's
  // own cost. The check reads each chunk's candidates again, with the same statement.
  readRun.value.length = 0

  // --- The replays, through the worker. The read baseline fetched 30-day windows: a superset of
  // every scenario's paths (the models pick the window), so the expected rows come from them.
  const scenarios: ReadonlyArray<{ readonly label: string; readonly purchaseDays: number; readonly reason: string }> = [
    { label: "first credit (no rows yet)", purchaseDays: 30, reason: "recompute_requested" },
    { label: "purchase window 30 -> 14 days", purchaseDays: 14, reason: "definitions_changed" },
    { label: "purchase window back to 30 days", purchaseDays: 30, reason: "definitions_changed" },
    { label: "nothing changed", purchaseDays: 30, reason: "recompute_requested" }
  ].slice(0, replays)
  const creditableById = new Map(creditable.map((target) => [target.id, target] as const))
  const targetIds = targets.map((target) => target.id)
  const runs: Array<{
    readonly label: string
    readonly seconds: number
    readonly cpu: ReturnType<typeof cpuSince>
    readonly changes: ReturnType<typeof stateChanges>
    readonly rows: number
    readonly statsDiff: ReadonlyArray<string>
    readonly mismatches: { readonly conversions: number; readonly examples: ReadonlyArray<string> }
  }> = []
  // The statistics of the last state replayed: the independent sample credits with them (a run of
  // fewer than four replays ends on the 14-day window, whose statistics differ from the first's).
  let lastStats = stats
  for (const [i, scenario] of scenarios.entries()) {
    yield* sql`UPDATE conversion_definitions SET lookback_window_days = ${scenario.purchaseDays} WHERE id = ${dataset.purchaseDefinitionId}`
    // What the profile holds now, to count what the replay changes (not timed).
    yield* snapshotBefore(sql, dataset.profileId)
    process.stdout.write(`replay ${i + 1}/${scenarios.length}: ${scenario.label} ...`)
    const cpuBefore = yield* cpuNow(sql)
    const run = yield* clock(Effect.gen(function*() {
      const queued = yield* queue.enqueue(dataset.profileId, scenario.reason)
      const outcome = yield* worker.runNextReplay
      if (Option.isNone(outcome) || outcome.value.jobId !== queued.jobId || outcome.value.state !== "succeeded") {
        return yield* Effect.fail(new Error(`the replay did not succeed: ${JSON.stringify(outcome)}`))
      }
      return outcome.value
    }))
    const cpu = cpuSince(cpuBefore, yield* cpuNow(sql))
    console.log(` ${fmt(run.seconds, 2)} s, ${fmt(dataset.touches / run.seconds)} touches/s`)
    // Check (not timed): the statistics of this state, and every row against creditAll.
    const referenceNow = scenario.purchaseDays === 30 ? reference.value.stats : (yield* referencePathStats(sql, dataset.profileId)).stats
    const engineNow = yield* engine.pathStats(dataset.profileId)
    lastStats = referenceNow
    // Chunk by chunk: a 10M-touch profile's rows do not fit in memory three times over.
    const check = yield* checkInChunks(sql, dataset.profileId, targetIds, (ids) =>
      Effect.gen(function*() {
        // The read baseline's windows (the targets as first read): a superset of every scenario's paths.
        const chunk = ids.flatMap((id) => {
          const target = creditableById.get(id)
          return target === undefined ? [] : [target]
        })
        const paths = pathsByConversion(chunk.length === 0 ? [] : yield* attribution.candidateTouches(chunk))
        const state: CreditState = new Map()
        let rows = 0
        for (const target of chunk) {
          const windowDays = target.definition_id === dataset.purchaseDefinitionId ? scenario.purchaseDays : target.window_days
          rows += addExpected(state, { ...target, window_days: windowDays }, paths.get(target.id) ?? [], referenceNow)
        }
        return { state, rows }
      }))
    runs.push({
      label: scenario.label,
      seconds: run.seconds,
      cpu,
      changes: check.changes,
      rows: check.rows,
      statsDiff: statsDifference(engineNow, referenceNow),
      mismatches: check.mismatches
    })
  }
  yield* dropSnapshot(sql)
  const sample = yield* independentSample(sql, dataset.profileId, lastStats, sampleSize)

  // --- Report.
  const perSecond = (n: number, seconds: number) => fmt(n / seconds)
  const pathTouches = creditRows / 6
  console.log("")
  console.log(
    `paths: ${fmt(creditable.length)} creditable conversions, ${fmt(candidateCount)} candidate touches read, ` +
      `${fmt(pathTouches)} on 30/14-day paths (mean ${fmt(pathTouches / Math.max(1, creditable.length), 2)}), ${fmt(creditRows)} credit rows; ` +
      `svc_model statistics over ${fmt(stats.total_paths)} paths (${fmt(stats.converting_paths)} converting)`
  )
  console.log("")
  console.log("| step | seconds | touches/s (profile) | conversions/s | credit rows (ins / upd / del / same) | node CPU s | PostgreSQL CPU s |")
  console.log("|---|---:|---:|---:|---:|---:|---:|")
  const line = (label: string, seconds: number, rows: string, cpu?: ReturnType<typeof cpuSince>) =>
    console.log(
      `| ${label} | ${fmt(seconds, 3)} | ${perSecond(dataset.touches, seconds)} | ${perSecond(dataset.conversions, seconds)} | ${rows} | ` +
        `${cpu === undefined ? "" : fmt(cpu.node / 1000, 2)} | ${cpu === undefined || !cpu.readable ? "" : fmt(cpu.postgres / 1000, 2)} |`
    )
  line("baseline: svc_model statistics (`pathStats`)", statsRun.seconds, "")
  line("(before: statistics as path arrays + `buildPathStats`)", reference.seconds, "")
  line("baseline: read candidate touches (`AttributionRepo.candidateTouches`, decoded)", readRun.seconds, "")
  line("baseline: six models in memory (`creditAll`)", computeRun.seconds, `${fmt(creditRows)} computed`)
  const floor = statsRun.seconds + readRun.seconds + computeRun.seconds
  line("baseline: statistics + read + compute", floor, "")
  for (const run of runs) {
    const c = run.changes
    line(`**replay: ${run.label}**`, run.seconds, `${fmt(c.inserted)} / ${fmt(c.updated)} / ${fmt(c.deleted)} / ${fmt(c.unchanged)}`, run.cpu)
  }
  console.log("")
  const failures: Array<string> = []
  if (statsDiff.length > 0) failures.push(`statistics differ from the reference: ${statsDiff.join("; ")}`)
  for (const run of runs) {
    if (run.statsDiff.length > 0) failures.push(`after "${run.label}": statistics differ: ${run.statsDiff.join("; ")}`)
    if (run.mismatches.conversions > 0) {
      failures.push(`after "${run.label}": ${run.mismatches.conversions} conversions' rows differ from creditAll, e.g. ${run.mismatches.examples.join("; ")}`)
    }
  }
  if (sample.conversions > 0) failures.push(`independent sample: ${sample.conversions} conversions differ, e.g. ${sample.examples.join("; ")}`)
  console.log(
    `checks: statistics equal to the reference in every state: ${statsDiff.length === 0 && runs.every((run) => run.statsDiff.length === 0) ? "yes" : "NO"}; ` +
      `after each replay every stored row equals creditAll (${runs.map((run) => fmt(run.rows)).join(", ")} rows): ` +
      `${runs.every((run) => run.mismatches.conversions === 0) ? "yes" : "NO"}; ` +
      `independent sample of ${fmt(sample.sampled)} conversions (${fmt(sample.rows)} rows): ${sample.conversions === 0 ? "equal" : "DIFFERS"}`
  )
  for (const failure of failures) console.log(`  ${failure}`)
  console.log("")
  for (const run of runs) {
    const rate = dataset.touches / run.seconds
    const goal = dataset.touches >= 10_000_000
      ? `goal under ${GOAL_SECONDS_AT_10M} s at 10M: ${run.seconds < GOAL_SECONDS_AT_10M ? "met" : "NOT met"}`
      : `goal >= ${fmt(GOAL_TOUCHES_PER_SECOND)} touches/s: ${rate >= GOAL_TOUCHES_PER_SECOND ? "met" : "NOT met"}`
    console.log(
      `replay "${run.label}": ${fmt(run.seconds, 2)} s, ${fmt(rate)} touches/s, ${fmt(dataset.conversions / run.seconds)} conversions/s, ` +
        `${fmt(run.rows / run.seconds)} credit rows/s (${goal})`
    )
  }
  const worst = runs.reduce((a, b) => (b.seconds > a.seconds ? b : a))
  if (dataset.touches / worst.seconds < GOAL_TOUCHES_PER_SECOND) {
    console.log(
      `  the slowest replay takes ${fmt(worst.seconds, 2)} s, the goal needs ${fmt(dataset.touches / GOAL_TOUCHES_PER_SECOND, 2)} s; ` +
        `of it (estimated from the baselines): statistics ${fmt(statsRun.seconds, 2)} s, read ${fmt(readRun.seconds, 2)} s, ` +
        `compute ${fmt(computeRun.seconds, 2)} s, writes, locks and transactions ${fmt(worst.seconds - floor, 2)} s`
    )
  }
  if (failures.length > 0) return yield* Effect.fail(new Error("the replays' rows differ from creditAll (see above)"))
})

await runInProcessBench("replay", "a PostgreSQL the bench may write a million touches to", program, () => {
  // The service's defaults, unless BENCH_BATCH / BENCH_CONCURRENCY ask otherwise (to compare).
  const workerSettings = Layer.succeed(AttributionWorkerSettings)({
    ...defaultWorkerSettings,
    enabled: false,
    replayBatchSize: intFromEnv("BENCH_BATCH", defaultWorkerSettings.replayBatchSize, 100_000),
    replayBatchConcurrency: intFromEnv("BENCH_CONCURRENCY", defaultWorkerSettings.replayBatchConcurrency, 16)
  })
  return Layer.mergeAll(AttributionWorker.layer, CreditEngine.layer, ReplayQueue.layer, AttributionRepo.layer).pipe(
    Layer.provide(workerSettings),
    Layer.provideMerge(workerSettings),
    Layer.provide(RunnerLiveness.layer),
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provide(AppConfig.layer)
  )
})
