/**
 * The incrementality bench's phase through the real path (`npm run bench:incrementality -- --through-ingest`).
 *
 * The 1,000-run table analyses simulated figures with the statistics functions directly. This
 * phase shows that table is what the service computes: BENCH_INGEST_RUNS simulated experiments
 * per kind (default 60) go through an in-process server (the real app, test harness settings, on
 * PGlite or on the PostgreSQL of DATABASE_URL):
 *
 * - the simulated outcomes are posted one by one to `POST /api/v1/events` (the real ingest: a
 *   conversion definition turns them into conversions, customers come from `user_traits`);
 * - the experiment goes through the real API: create (draft), start, stop (`window_ended`), results;
 * - its answer is compared with the pure functions on the same simulated figures (the path the
 *   fast table takes): estimate, lower and upper within 1e-9 relative, group sizes equal.
 *
 * Kinds: switchback (value metric, one event per day carrying the day's outcome, the scenario of
 * the fast table on the service's own paired schedule), audience holdout (count metric, a list
 * of BENCH_INGEST_CUSTOMERS customers made by cash payments before the window) and pre/post
 * (value metric, the fast table's 8 donors and 56 pre days: each campaign-day one purchase and
 * the partner ad referral that brought it, credited by the attribution worker, so the series the
 * synthetic control reads are credited touches as in production). The salt and the customers'
 * ids are read by SQL, as the API tests do, to simulate the groups; the synced ad catalogue is
 * written by SQL as the ad-platform sync writes it.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { rmSync } from "node:fs"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { heldOut } from "../../src/experiments/analysis.ts"
import {
  analyseSwitchback,
  compareProportions,
  createRandom,
  type Estimated,
  simulateSwitchbackDays,
  simulateSyntheticControlSeries,
  syntheticControl
} from "../../src/experiments/statistics/index.ts"
import { call, serveApp, testSettings } from "../../test/support/app.ts"
import { seedAdConnection } from "../../test/support/experiments.ts"
import { seedApiKey, seedProfile } from "../../test/support/tenancy.ts"
import { intFromEnv } from "../support.ts"

const RUNS = intFromEnv("BENCH_INGEST_RUNS", 60, 10_000)
const CUSTOMERS = intFromEnv("BENCH_INGEST_CUSTOMERS", 400, 100_000)
const SEED = intFromEnv("BENCH_SEED", 20261129, 2 ** 31 - 1)
const CONCURRENCY = 2
const SCOPES = ["analytics:read", "campaigns:apply", "events:write", "attribution:write"]

const DAY_MS = 86_400_000
const dayFromToday = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10)
const noonOf = (date: string, minutes = 0) => new Date(Date.parse(`${date}T12:00:00Z`) + minutes * 60_000).toISOString()

interface Interval {
  readonly estimate: number
  readonly lower: number
  readonly upper: number
}

/** One run: the API's interval beside the pure function's, and whether it contains the truth. */
interface Compared {
  readonly equal: boolean
  readonly difference: number
  readonly estimated: boolean
  readonly covered: boolean
  readonly rejected: boolean
  readonly detail: string
}

const compare = (api: Interval | null, pure: Estimated, truth: number, sizesEqual: boolean): Compared => {
  if (pure._tag === "InsufficientData" || api === null) {
    return { equal: api === null && pure._tag === "InsufficientData" && sizesEqual, difference: 0, estimated: false, covered: false, rejected: false, detail: `api ${JSON.stringify(api)} pure ${pure._tag}` }
  }
  const gaps = (["estimate", "lower", "upper"] as const).map((k) => Math.abs(api[k] - pure[k]) / Math.max(1, Math.abs(pure[k])))
  const difference = Math.max(...gaps)
  return {
    equal: difference <= 1e-9 && sizesEqual,
    difference,
    estimated: true,
    covered: api.lower <= truth && truth <= api.upper,
    rejected: api.lower > 0 || api.upper < 0,
    detail: `api ${JSON.stringify(api)} pure ${JSON.stringify({ estimate: pure.estimate, lower: pure.lower, upper: pure.upper })}`
  }
}

const json = (key: string, method: string, path: string, body?: unknown) =>
  Effect.flatMap(
    call(path, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }),
    (r) => r.status >= 200 && r.status < 300 ? Effect.succeed(r.json) : Effect.die(`${method} ${path}: ${r.status} ${r.text}`)
  )

/** A fresh profile (one per run: a run's outcomes are its own) with a key and its conversion definitions. */
const profile = Effect.gen(function*() {
  const sql = yield* SqlClient
  const p = yield* seedProfile()
  const { key } = yield* seedApiKey(p, { scopes: SCOPES, rateLimitPerMinute: 1_000_000 })
  for (const [conversionKey, cash] of [["purchase", false], ["payment", true]] as const) {
    yield* sql`
      INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, counts_as_cash, is_default, created_at)
      VALUES (${crypto.randomUUID()}, ${p.profileId}, ${conversionKey}, ${conversionKey}, 'event', ${[conversionKey]}, ${cash}, false, now() - interval '400 days')`
  }
  return { ...p, key }
})

/** The real ingest: one outcome event per call. */
const ingest = (key: string, event: { readonly name: string; readonly at: string; readonly value?: string; readonly customer?: string }) =>
  json(key, "POST", "/api/v1/events", {
    event_name: event.name,
    occurred_at: event.at,
    ...(event.value === undefined ? {} : { properties: { value: event.value } }),
    ...(event.customer === undefined ? {} : { user_traits: { external_id: event.customer } })
  })

/**
 * create, start, stop at the window's end, results: the API's whole lifecycle. The window is in
 * the past, so the service may complete the experiment itself first (`window_ended`, on a read or
 * a switchback's day tick): then the stop's 409 `not_running` is the documented answer.
 */
const lifecycle = (key: string, id: string) =>
  Effect.gen(function*() {
    yield* json(key, "POST", `/api/v1/experiments/${id}/start`)
    const stopped = yield* call(`/api/v1/experiments/${id}/stop`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ reason: "window_ended" })
    })
    if (stopped.status !== 200) {
      const read = (yield* json(key, "GET", `/api/v1/experiments/${id}`)).data
      const completedFirst = stopped.status === 409 && stopped.json?.error?.reason === "not_running" &&
        read.status === "completed" && read.status_reason === "window_ended"
      if (!completedFirst) return yield* Effect.die(`POST stop: ${stopped.status} ${stopped.text}`)
    }
    return (yield* json(key, "GET", `/api/v1/experiments/${id}/results`)).data
  })

const switchback = { days: 28, offLevel: 100, noiseSd: 10 }

const switchbackRun = (random: ReturnType<typeof createRandom>, effect: number) =>
  Effect.gen(function*() {
    const p = yield* profile
    // A switchback's start asks for an ad account that can write ads (its days pause and resume the target).
    yield* seedAdConnection(p.profileId)
    const start = dayFromToday(-36)
    const end = dayFromToday(-9)
    const created = (yield* json(p.key, "POST", "/api/v1/experiments", {
      name: "Switchback through ingest",
      kind: "switchback",
      metric: { conversion_key: "purchase", measure: "value" },
      window: { start, end },
      target: { level: "campaign", id: "cmp_bench" }
    })).data
    const schedule: ReadonlyArray<{ date: string; on: boolean }> = created.config.schedule
    // The fast table's process on the service's own schedule; amounts in cents, as ingest keeps them.
    const days = simulateSwitchbackDays(random, { ...switchback, effect, startDate: start, plan: schedule.map((d) => d.on) })
      .map((d) => ({ ...d, outcomes: Math.round(Math.max(0, d.outcomes) * 100) / 100 }))
    yield* Effect.forEach(days, (d) => ingest(p.key, { name: "purchase", at: noonOf(d.date), value: d.outcomes.toFixed(2) }), { concurrency: CONCURRENCY, discard: true })
    const r = yield* lifecycle(p.key, created.id)
    const pure = analyseSwitchback(days, { standardErrors: "hc1" })
    const onDays = days.filter((d) => d.on).length
    return compare(r.absolute_lift, pure, effect, r.treatment.size === onDays && r.control.size === days.length - onDays)
  })

const holdout = { fraction: 0.2, baselineRate: 0.3 }

const holdoutRun = (random: ReturnType<typeof createRandom>, lift: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const p = yield* profile
    const start = dayFromToday(-22)
    const end = dayFromToday(-9)
    // The list: customers with a cash payment before the window.
    const paid = yield* Effect.forEach(
      Array.from({ length: CUSTOMERS }, (_, i) => `c${i}`),
      (customer, i) => Effect.map(ingest(p.key, { name: "payment", at: noonOf(dayFromToday(-60), i % 600), value: "50.00", customer }), (r) => ({ customer, conversion: r.data.conversion_id as string })),
      { concurrency: CONCURRENCY }
    )
    const created = (yield* json(p.key, "POST", "/api/v1/experiments", {
      name: "Holdout through ingest",
      kind: "audience_holdout",
      metric: { conversion_key: "purchase", measure: "count" },
      window: { start, end },
      holdout_fraction: holdout.fraction
    })).data
    const salts = yield* sql<{ salt: string }>`SELECT salt FROM experiments WHERE profile_id = ${p.profileId} AND id = ${created.id}`
    const salt = salts[0]?.salt
    if (salt === undefined) return yield* Effect.die("the experiment has no row")
    const ids = new Map((yield* sql<{ id: string; customer_id: string }>`
      SELECT id::text AS id, customer_id::text AS customer_id FROM conversions WHERE profile_id = ${p.profileId} AND conversion_key = 'payment'`)
      .map((row) => [row.id, row.customer_id]))
    const groups = { treatment: { size: 0, conversions: 0 }, control: { size: 0, conversions: 0 } }
    const purchases: Array<{ customer: string; at: string }> = []
    for (const [i, { customer, conversion }] of paid.entries()) {
      const id = ids.get(conversion)
      if (id === undefined) return yield* Effect.die(`no customer for ${customer}`)
      const control = heldOut(salt, id, holdout.fraction)
      const group = control ? groups.control : groups.treatment
      group.size++
      if (random.uniform() < holdout.baselineRate * (control ? 1 : 1 + lift)) {
        group.conversions++
        purchases.push({ customer, at: noonOf(dayFromToday(-15 + (i % 5)), i % 600) })
      }
    }
    yield* Effect.forEach(purchases, (x) => ingest(p.key, { name: "purchase", at: x.at, value: "20.00", customer: x.customer }), { concurrency: CONCURRENCY, discard: true })
    const r = yield* lifecycle(p.key, created.id)
    const pure = compareProportions(groups.treatment, groups.control, { minimumConversions: 10 })
    const truth = holdout.baselineRate * lift
    return compare(r.absolute_lift, pure, truth, r.treatment.size === groups.treatment.size && r.control.size === groups.control.size)
  })

/** The fast table's pre/post scenario (bench/incrementality/run.ts), its series as daily value in the profile's currency. */
const prePost = { preDays: 56, postDays: 14, donors: 8, noiseSd: 3, autocorrelation: 0.3 }

/** A campaign, an ad set and one ad of the profile, as the ad-platform sync writes them. */
const syncCampaign = (profileId: string, campaignId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const campaignRow = crypto.randomUUID()
    const adSetRow = crypto.randomUUID()
    yield* sql`
      INSERT INTO ad_campaigns (id, profile_id, platform_id, name, status, objective, daily_budget_minor)
      VALUES (${campaignRow}, ${profileId}, ${campaignId}, ${campaignId}, 'active', 'OUTCOME_ENGAGEMENT', 5000)`
    yield* sql`
      INSERT INTO ad_sets (id, profile_id, campaign_id, platform_id, name, learning_stage_status, daily_budget_minor)
      VALUES (${adSetRow}, ${profileId}, ${campaignRow}, ${`${campaignId}_set`}, ${`${campaignId} set`}, 'LEARNING', 2500)`
    yield* sql`
      INSERT INTO ads (id, profile_id, ad_set_id, platform_id, name, creative_thumbnail_url, destination_type, greeting, greeting_status)
      VALUES (${crypto.randomUUID()}, ${profileId}, ${adSetRow}, ${`${campaignId}_ad`}, ${`${campaignId} ad`}, 'https://cdn.example/t.jpg',
              'chat_app_a', 'Hi! How can we help?', 'ACTIVE')`
  })

/**
 * Pre/post through the real path: each campaign's simulated day is one customer's purchase
 * (`POST /api/v1/events`, the day's value) and the ad referral that brought them that morning
 * (`POST /api/v1/partner/ad-referrals`, a touch of the campaign's synced ad); the attribution
 * worker credits them (last touch), and the experiment reads the credited daily series back.
 */
const prePostRun = (random: ReturnType<typeof createRandom>, effect: number) =>
  Effect.gen(function*() {
    const p = yield* profile
    yield* seedAdConnection(p.profileId)
    const series = simulateSyntheticControlSeries(random, { ...prePost, effectPerDay: effect })
    // Donors sort before the target: the service reads the series ordered by campaign id.
    const campaigns = [...series.donors.map((_, j) => `cmp_d${j}`), "cmp_t"]
    yield* Effect.forEach(campaigns, (campaign) => syncCampaign(p.profileId, campaign), { discard: true })
    const days = prePost.preDays + prePost.postDays
    const firstDay = -(days + 1)
    // Amounts as ingest keeps them: cents, at least one.
    const cents = (x: number) => Math.max(1, Math.round(x * 100)) / 100
    const values = [...series.donors, series.target].map((line) => line.map(cents))
    const cells = campaigns.flatMap((campaign, j) =>
      (values[j] ?? []).map((value, d) => ({ campaign, customer: `${campaign}-${d}`, date: dayFromToday(firstDay + d), value })))
    yield* Effect.forEach(
      cells,
      (cell) => ingest(p.key, { name: "purchase", at: noonOf(cell.date), value: cell.value.toFixed(2), customer: cell.customer }),
      { concurrency: CONCURRENCY, discard: true }
    )
    // 250 a call: 500 referrals (the route's limit) are more than its 64 KiB body allows here.
    for (let at = 0; at < cells.length; at += 250) {
      yield* json(p.key, "POST", "/api/v1/partner/ad-referrals", {
        referrals: cells.slice(at, at + 250).map((cell) => ({
          idempotency_key: cell.customer,
          occurred_at: new Date(Date.parse(`${cell.date}T10:00:00Z`)).toISOString(),
          ad_id: `${cell.campaign}_ad`,
          customer: { external_ref: cell.customer }
        }))
      })
    }
    const worker = yield* AttributionWorker
    while ((yield* worker.drainOnce).credited > 0) {}
    const created = (yield* json(p.key, "POST", "/api/v1/experiments", {
      name: "Pre/post through ingest",
      kind: "pre_post",
      metric: { conversion_key: "purchase", measure: "value" },
      window: { start: dayFromToday(firstDay + prePost.preDays), end: dayFromToday(firstDay + days - 1) },
      target: { level: "campaign", id: "cmp_t" },
      pre_days: prePost.preDays
    })).data
    const r = yield* lifecycle(p.key, created.id)
    const target = values[values.length - 1] ?? []
    const estimate = syntheticControl({ target, donors: values.slice(0, -1), preDays: prePost.preDays })
    const pure: Estimated = estimate._tag === "Estimate" ? { ...estimate.perDay, _tag: "Estimate" } : estimate
    return compare(r.absolute_lift, pure, effect, r.treatment.size === prePost.postDays && r.fit?.donors === series.donors.length)
  })

interface PhaseRow {
  readonly kind: string
  readonly scenario: string
  readonly results: ReadonlyArray<Compared>
  readonly seconds: number
}

const scenarios = [
  { kind: "switchback (value)", scenario: "zero (A/A)", run: (r: ReturnType<typeof createRandom>) => switchbackRun(r, 0) },
  { kind: "switchback (value)", scenario: "small +6/day", run: (r: ReturnType<typeof createRandom>) => switchbackRun(r, 6) },
  { kind: "switchback (value)", scenario: "large +20/day", run: (r: ReturnType<typeof createRandom>) => switchbackRun(r, 20) },
  { kind: "holdout (count)", scenario: "zero (A/A)", run: (r: ReturnType<typeof createRandom>) => holdoutRun(r, 0) },
  { kind: "holdout (count)", scenario: "large +40 %", run: (r: ReturnType<typeof createRandom>) => holdoutRun(r, 0.4) },
  { kind: "pre/post (value)", scenario: "zero (A/A)", run: (r: ReturnType<typeof createRandom>) => prePostRun(r, 0) },
  { kind: "pre/post (value)", scenario: "large +8/day", run: (r: ReturnType<typeof createRandom>) => prePostRun(r, 8) }
]

const program = Effect.gen(function*() {
  const rows: Array<PhaseRow> = []
  for (const [index, s] of scenarios.entries()) {
    const perKind = scenarios.filter((x) => x.kind === s.kind).length
    const runs = Math.max(1, Math.round(RUNS / perKind))
    const random = createRandom(SEED + 100 + index)
    const started = performance.now()
    const results: Array<Compared> = []
    for (let i = 0; i < runs; i++) results.push(yield* s.run(random))
    const seconds = (performance.now() - started) / 1000
    rows.push({ kind: s.kind, scenario: s.scenario, results, seconds })
    process.stderr.write(`  through ingest: ${s.kind} ${s.scenario}: ${runs} runs in ${seconds.toFixed(1)} s\n`)
  }
  return rows
})

export const runThroughIngest = async () => {
  const settings = testSettings()
  const app = serveApp(settings).pipe(Layer.provide(Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })))
  const started = performance.now()
  try {
    const rows = await Effect.runPromise(Effect.scoped(Effect.provide(program, app)))
    const pct = (n: number, of: number) => of === 0 ? "n/a" : `${((100 * n) / of).toFixed(0)} %`
    console.log(`\nthrough ingest: ${RUNS} runs per kind, seed ${SEED}, ${settings.databaseUrl._tag === "Some" ? "PostgreSQL" : "PGlite"}, ${((performance.now() - started) / 1000).toFixed(0)} s in all\n`)
    console.log("| kind | scenario | runs | API = pure functions | largest relative gap | insufficient | coverage | rejections | seconds per run |")
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    let mismatches = 0
    for (const { kind, scenario, results, seconds } of rows) {
      const equal = results.filter((r) => r.equal).length
      mismatches += results.length - equal
      const estimated = results.filter((r) => r.estimated)
      console.log(
        `| ${kind} | ${scenario} | ${results.length} | ${equal} / ${results.length} | ${Math.max(...results.map((r) => r.difference)).toExponential(1)} | ` +
          `${results.length - estimated.length} | ${pct(estimated.filter((r) => r.covered).length, estimated.length)} | ` +
          `${pct(estimated.filter((r) => r.rejected).length, estimated.length)} | ${(seconds / results.length).toFixed(2)} |`
      )
      for (const r of results.filter((x) => !x.equal).slice(0, 3)) console.log(`  mismatch: ${r.detail}`)
    }
    if (mismatches > 0) process.exitCode = 1
  } finally {
    if (settings.databaseUrl._tag === "None") rmSync(settings.dataDir, { recursive: true, force: true })
  }
}
