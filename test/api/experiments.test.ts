/**
 * Experiments (issue 32, decision 0122) end to end: the real app and its Experiment entity on the
 * test database; outcomes seeded by SQL. Results are compared with the statistics functions run
 * on the same figures, and against the effect the seed put in.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, callAs } from "../support/app.ts"
import { analyticsApp, drain, seedAnalyticsProfile } from "../support/analytics.ts"
import {
  dayFromToday,
  noonOf,
  PRE_POST_DAYS,
  prePostBody,
  prePostCampaigns,
  prePostDay,
  saltOf,
  seedAdConnection,
  seedConversions,
  seedCustomers,
  type SeedConversion,
  spendRows
} from "../support/experiments.ts"
import { seedApiKey } from "../support/tenancy.ts"
import { AnalyticsImports } from "../../src/analytics/imports/service.ts"
import { DEFAULT_EVENT_TYPES, OPT_IN_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from "../../schema/webhooks.ts"
import { heldOut, seedOf, switchbackSchedule } from "../../src/experiments/analysis.ts"
import { advanceSwitchbacks } from "../../src/experiments/cron.ts"
import { ExperimentsRepo } from "../../src/experiments/repo.ts"
import {
  analyseSwitchback,
  bootstrapMeanDifference,
  compareProportions,
  createRandom,
  prePostDesign,
  sampleSizeTwoProportions,
  switchbackDays,
  syntheticControl
} from "../../src/experiments/statistics/index.ts"

const SCOPES = ["analytics:read", "campaigns:apply"]

const holdoutBody = (overrides: Record<string, unknown> = {}) => ({
  name: "Holdout of the customer list",
  kind: "audience_holdout",
  metric: { conversion_key: "purchase", measure: "count" },
  window: { start: dayFromToday(5), end: dayFromToday(35) },
  holdout_fraction: 0.2,
  ...overrides
})

const post = (key: string, path: string, body?: unknown, idempotencyKey?: string) =>
  call(path, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const count = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM experiments WHERE profile_id = ${profileId}`, (rows) => rows[0]?.n ?? -1))

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${actual} != ${expected}`)

layer(analyticsApp, { timeout: "300 seconds", excludeTestServices: true })("experiments", (it) => {
  describe("lifecycle", () => {
    it.effect("create (draft, idempotent), list with a cursor, read, start, stop; the state moves with its reason and version", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const created = yield* post(p.key, "/api/v1/experiments", holdoutBody(), "exp-create-1")
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        assert.strictEqual(e.status, "draft")
        assert.strictEqual(e.status_reason, null)
        assert.strictEqual(e.version, 1)
        assert.deepStrictEqual(e.config, { holdout_fraction: 0.2, target: null, pre_days: null, schedule: null })
        assert.deepStrictEqual(e.metric, { conversion_key: "purchase", measure: "count" })
        const replay = yield* post(p.key, "/api/v1/experiments", holdoutBody(), "exp-create-1")
        assert.strictEqual(replay.status, 201, replay.text)
        assert.strictEqual(replay.json.data.id, e.id)
        assert.strictEqual(yield* count(p.profileId), 1)

        const second = yield* post(p.key, "/api/v1/experiments", holdoutBody({ name: "Second" }))
        assert.strictEqual(second.status, 201, second.text)
        const page1 = yield* callAs(p.key, "GET", "/api/v1/experiments?limit=1")
        assert.strictEqual(page1.status, 200, page1.text)
        assert.deepStrictEqual(page1.json.data.map((x: any) => x.id), [e.id])
        assert.strictEqual(page1.json.pagination.has_next, true)
        const page2 = yield* callAs(p.key, "GET", `/api/v1/experiments?limit=1&cursor=${page1.json.pagination.cursor}`)
        assert.deepStrictEqual(page2.json.data.map((x: any) => x.id), [second.json.data.id])
        assert.deepStrictEqual(page2.json.pagination, { has_next: false, cursor: null })

        const read = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)
        assert.strictEqual(read.status, 200, read.text)
        assert.deepStrictEqual(read.json.data, e)

        const started = yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        assert.strictEqual(started.status, 200, started.text)
        assert.strictEqual(started.json.data.status, "running")
        assert.strictEqual(started.json.data.status_reason, "started")
        assert.strictEqual(started.json.data.version, 2)
        assert.ok(started.json.data.started_at !== null)

        const stopped = yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "early_stop", note: "budget cut" })
        assert.strictEqual(stopped.status, 200, stopped.text)
        assert.strictEqual(stopped.json.data.status, "stopped")
        assert.strictEqual(stopped.json.data.status_reason, "early_stop")
        assert.strictEqual(stopped.json.data.status_note, "budget cut")
        assert.strictEqual(stopped.json.data.version, 3)
        assert.ok(stopped.json.data.stopped_at !== null)
        assert.strictEqual(stopped.json.data.completed_at, null)
      }))

    it.effect("invalid transitions: 409 invalid_state with the reason, state unchanged", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody())).json.data
        const expectState = (status: string, version: number) =>
          Effect.map(callAs(p.key, "GET", `/api/v1/experiments/${e.id}`), (r) => {
            assert.strictEqual(r.json.data.status, status)
            assert.strictEqual(r.json.data.version, version)
          })
        const refused = (r: any, reason: string) => {
          assert.strictEqual(r.status, 409, r.text)
          assert.strictEqual(r.json.error.code, "invalid_state")
          assert.strictEqual(r.json.error.reason, reason)
        }
        refused(yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`), "experiment_draft")
        refused(yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "early_stop" }), "not_running")
        yield* expectState("draft", 1)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        refused(yield* post(p.key, `/api/v1/experiments/${e.id}/start`), "not_draft")
        // The window ends in 35 days: it cannot have ended.
        refused(yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "window_ended" }), "window_not_ended")
        yield* expectState("running", 2)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "invalidated" })).status, 200)
        refused(yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "invalidated" }), "not_running")
        refused(yield* post(p.key, `/api/v1/experiments/${e.id}/start`), "not_draft")
        yield* expectState("stopped", 3)
      }))

    it.effect("a second experiment on the same target cannot start: 409 overlapping_experiment naming the running one", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const a = (yield* post(p.key, "/api/v1/experiments", holdoutBody())).json.data
        const b = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ name: "B" }))).json.data
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${a.id}/start`)).status, 200)
        const refused = yield* post(p.key, `/api/v1/experiments/${b.id}/start`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        assert.strictEqual(refused.json.error.reason, "overlapping_experiment")
        assert.include(refused.json.error.message, a.id)
        assert.strictEqual((yield* callAs(p.key, "GET", `/api/v1/experiments/${b.id}`)).json.data.status, "draft")
        // Once the first has stopped, the second starts.
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${a.id}/stop`, { reason: "early_stop" })).status, 200)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${b.id}/start`)).json.data.status, "running")
      }))

    it.effect("concurrent starts and stops of one experiment are ordered: one start and one stop succeed", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody())).json.data
        const starts = yield* Effect.all(Array.from({ length: 6 }, () => post(p.key, `/api/v1/experiments/${e.id}/start`)), {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(starts.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409])
        const stops = yield* Effect.all(
          Array.from({ length: 6 }, () => post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "early_stop" })),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(stops.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409])
        const read = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)
        assert.strictEqual(read.json.data.version, 3)
      }))

    it.effect("a running experiment whose window is over is completed (window_ended) when read", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ window: { start: dayFromToday(-20), end: dayFromToday(-2) } }))).json.data
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const read = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)
        assert.strictEqual(read.json.data.status, "completed")
        assert.strictEqual(read.json.data.status_reason, "window_ended")
        assert.ok(read.json.data.completed_at !== null)
      }))
  })

  describe("experiment.completed", () => {
    const completedEvents = (profileId: string) =>
      Effect.flatMap(SqlClient, (sql) =>
        sql<{ payload: any }>`SELECT payload FROM outbox WHERE profile_id = ${profileId} AND topic = 'experiment.completed' ORDER BY created_at, id`)

    it.effect("a lifecycle event: subscriptions name it to receive it", () =>
      Effect.sync(() => {
        assert.include(WEBHOOK_EVENT_TYPES, "experiment.completed")
        assert.include(OPT_IN_EVENT_TYPES, "experiment.completed")
        assert.notInclude(DEFAULT_EVENT_TYPES, "experiment.completed")
      }))

    it.effect("the lazy completion on read queues one event with the results summary; later reads queue none", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const customers = yield* seedCustomers(p.profileId, 40)
        // The list: paying customers before the window's start.
        yield* seedConversions(p.profileId, customers.map((id) => ({ customerId: id, at: noonOf(dayFromToday(-40)), key: "payment", value: 10, cash: true })))
        const window = { start: dayFromToday(-20), end: dayFromToday(-2) }
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ window }))).json.data
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        assert.deepStrictEqual(yield* completedEvents(p.profileId), [])
        const [first, second] = yield* Effect.all([
          callAs(p.key, "GET", `/api/v1/experiments/${e.id}`),
          callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        ], { concurrency: 2 })
        assert.strictEqual(first.status, 200, first.text)
        assert.strictEqual(second.status, 200, second.text)
        assert.strictEqual((yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)).json.data.status, "completed")
        const results = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data
        const events = yield* completedEvents(p.profileId)
        assert.strictEqual(events.length, 1)
        const event = events[0]?.payload
        assert.strictEqual(event.type, "experiment.completed")
        assert.isString(event.id)
        assert.deepStrictEqual(event.data, {
          id: e.id,
          profile_id: p.profileId,
          kind: "audience_holdout",
          name: "Holdout of the customer list",
          status: "completed",
          status_reason: "window_ended",
          metric: { conversion_key: "purchase", measure: "count" },
          window,
          completed_at: first.json.data.completed_at ?? second.json.data.completed_at ?? event.data.completed_at,
          results: {
            method: results.method,
            analysed: results.analysed,
            treatment: results.treatment,
            control: results.control,
            absolute_lift: results.absolute_lift,
            relative_lift: results.relative_lift,
            incremental_conversions: results.incremental_conversions,
            incremental_value: results.incremental_value,
            insufficient_data: results.insufficient_data,
            failed_checks: results.failed_checks
          }
        })
        assert.strictEqual(event.data.completed_at, (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)).json.data.completed_at)
        assert.strictEqual(results.treatment.size + results.control.size, 40)
      }))

    it.effect("the experiments' tick completes a holdout whose window is over, with its one event, before anyone reads it", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const customers = yield* seedCustomers(p.profileId, 10)
        yield* seedConversions(p.profileId, customers.map((id) => ({ customerId: id, at: noonOf(dayFromToday(-40)), key: "payment", value: 10, cash: true })))
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ window: { start: dayFromToday(-20), end: dayFromToday(-2) } }))).json.data
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const sql = yield* SqlClient
        const statusOf = Effect.map(sql<{ status: string }>`SELECT status FROM experiments WHERE id = ${e.id}`, (rows) => rows[0]?.status)
        assert.strictEqual(yield* statusOf, "running")
        // The tick sends every running experiment past its window to its entity (other tests' rows too).
        assert.isAtLeast(yield* advanceSwitchbacks.pipe(Effect.provide(ExperimentsRepo.layer)), 1)
        assert.strictEqual(yield* statusOf, "completed")
        assert.strictEqual((yield* completedEvents(p.profileId)).length, 1)
        // Nothing left for the next tick to do for it, and no second event.
        yield* advanceSwitchbacks.pipe(Effect.provide(ExperimentsRepo.layer))
        assert.strictEqual((yield* completedEvents(p.profileId)).length, 1)
      }))

    it.effect("a stop after the window queues one event (from its completion); an early stop queues none", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const past = yield* post(p.key, "/api/v1/experiments", holdoutBody({ window: { start: dayFromToday(-20), end: dayFromToday(-2) } }))
        // The same target (the customer list): the first is completed before the second starts.
        const early = yield* post(p.key, "/api/v1/experiments", holdoutBody({ name: "Early", window: { start: dayFromToday(-20), end: dayFromToday(20) } }))
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${past.json.data.id}/start`)).status, 200)
        // The window is over: the stop's own read completes it (one event), so the stop finds it no longer running.
        const stopped = yield* post(p.key, `/api/v1/experiments/${past.json.data.id}/stop`, { reason: "window_ended" })
        assert.strictEqual(stopped.status, 409, stopped.text)
        assert.strictEqual(stopped.json.error.reason, "not_running")
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${early.json.data.id}/start`)).status, 200)
        const cut = yield* post(p.key, `/api/v1/experiments/${early.json.data.id}/stop`, { reason: "early_stop" })
        assert.strictEqual(cut.status, 200, cut.text)
        const events = yield* completedEvents(p.profileId)
        assert.deepStrictEqual(events.map((row) => [row.payload.data.id, row.payload.data.status_reason]), [[past.json.data.id, "window_ended"]])
      }))
  })

  describe("calibration beside credit (decision 0124)", () => {
    it.effect("?calibrated=true adds the completed switchback's factor to the overview and its campaign row; the modelled figures stay", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile([...SCOPES, "campaigns:read"])
        yield* seedAdConnection(p.profileId)
        const start = dayFromToday(-30)
        const end = dayFromToday(-3)
        const created = yield* post(p.key, "/api/v1/experiments", {
          name: "Switchback",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start, end },
          target: { level: "campaign", id: "cmp_cal" }
        })
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        const schedule = switchbackSchedule("fixed-salt", start, end)
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE experiments SET salt = 'fixed-salt', config = jsonb_set(config, '{schedule}', ${JSON.stringify(schedule)}::jsonb)
              WHERE profile_id = ${p.profileId} AND id = ${e.id}`)
        const noise = createRandom(11)
        const rows: Array<SeedConversion> = []
        let credited = 0
        schedule.forEach((d, i) => {
          const outcomes = 20 + (i % 7) * 2 + Math.round(3 * noise.normal()) + (d.on ? 12 : 0)
          // On days the campaign is credited with 15 of them under last_touch (more than it adds).
          for (let k = 0; k < outcomes; k++) {
            const touched = d.on && k < 15
            if (touched) credited++
            rows.push({ customerId: null, at: noonOf(d.date, k), key: "purchase", value: 10, cash: false, ...(touched ? { campaign: "cmp_cal" } : {}) })
          }
        })
        yield* seedConversions(p.profileId, rows)
        // Before any experiment completed: an empty calibration, never a made-up factor.
        const before = yield* callAs(p.key, "GET", "/api/v1/overview?days=60&calibrated=true")
        assert.strictEqual(before.status, 200, before.text)
        assert.deepStrictEqual(before.json.data.calibration, [])
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const results = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data
        assert.strictEqual(results.status, "completed")
        const incremental = results.incremental_conversions
        assert.ok(incremental !== null && incremental.lower > 0, JSON.stringify(incremental))

        const plain = yield* callAs(p.key, "GET", "/api/v1/overview?days=60")
        const calibrated = yield* callAs(p.key, "GET", "/api/v1/overview?days=60&calibrated=true")
        assert.strictEqual(calibrated.status, 200, calibrated.text)
        assert.notProperty(plain.json.data, "calibration")
        const { calibration, ...modelled } = calibrated.json.data
        assert.deepStrictEqual(modelled, plain.json.data)
        assert.strictEqual(calibration.length, 1)
        const factor = calibration[0]
        const completedAt = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)).json.data.completed_at
        assert.deepStrictEqual({ ...factor, incrementality_factor: null }, {
          campaign: "cmp_cal",
          experiment_id: e.id,
          kind: "switchback",
          conversion_key: "purchase",
          analysed: results.analysed,
          completed_at: completedAt,
          age_days: 0,
          stale: false,
          credited_conversions: credited,
          incremental_conversions: incremental,
          incrementality_factor: null
        })
        close(factor.incrementality_factor.estimate, incremental.estimate / credited, "factor")
        close(factor.incrementality_factor.lower, incremental.lower / credited, "factor lower")
        close(factor.incrementality_factor.upper, incremental.upper / credited, "factor upper")
        assert.strictEqual(factor.incrementality_factor.level, 0.95)
        assert.ok(factor.incrementality_factor.estimate < 1, "more credit than measured lift")

        // Another model's credit: none of it under first_touch here, so no factor, the measured conversions still shown.
        const other = yield* callAs(p.key, "GET", "/api/v1/overview?days=60&calibrated=true&model=first_touch")
        assert.strictEqual(other.status, 200, other.text)
        assert.strictEqual(other.json.data.calibration[0].credited_conversions, 0)
        assert.strictEqual(other.json.data.calibration[0].incrementality_factor, null)

        // Campaign rows: the same factor beside each row's modelled figures (null without one).
        yield* drain
        const list = yield* callAs(p.key, "GET", "/api/v1/campaigns?days=60&calibrated=true")
        const listPlain = yield* callAs(p.key, "GET", "/api/v1/campaigns?days=60")
        assert.strictEqual(list.status, 200, list.text)
        assert.deepStrictEqual(list.json.data.map(({ calibration: _c, ...row }: any) => row), listPlain.json.data)
        assert.ok(list.json.data.some((row: any) => row.platform_id === "cmp_cal"), list.text)
        for (const row of list.json.data) {
          assert.deepStrictEqual(row.calibration, row.platform_id === "cmp_cal" ? factor : null)
        }
        for (const row of listPlain.json.data) assert.notProperty(row, "calibration")
        // The single campaign read: the same factor beside the same modelled figures.
        const one = yield* callAs(p.key, "GET", "/api/v1/ads/cmp_cal?level=campaign&days=60&calibrated=true")
        const onePlain = yield* callAs(p.key, "GET", "/api/v1/ads/cmp_cal?level=campaign&days=60")
        assert.strictEqual(one.status, 200, one.text)
        assert.deepStrictEqual(one.json.data.calibration, factor)
        const { calibration: _one, ...oneModelled } = one.json.data
        assert.deepStrictEqual(oneModelled, onePlain.json.data)
        assert.notProperty(onePlain.json.data, "calibration")

        // Aged past 90 days: flagged stale; past 365: gone.
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE experiments SET completed_at = now() - interval '100 days' WHERE profile_id = ${p.profileId} AND id = ${e.id}`)
        const aged = (yield* callAs(p.key, "GET", "/api/v1/overview?days=60&calibrated=true")).json.data.calibration
        assert.deepStrictEqual([aged[0].age_days, aged[0].stale], [100, true])
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE experiments SET completed_at = now() - interval '366 days' WHERE profile_id = ${p.profileId} AND id = ${e.id}`)
        assert.deepStrictEqual((yield* callAs(p.key, "GET", "/api/v1/overview?days=60&calibrated=true")).json.data.calibration, [])
        const bad = yield* callAs(p.key, "GET", "/api/v1/overview?calibrated=yes")
        assert.strictEqual(bad.status, 400, bad.text)
        assert.strictEqual(bad.json.error.code, "invalid_parameter")
      }))
  })

  describe("bad input and refusals", () => {
    it.effect("each malformed create is 400 validation_error and writes nothing", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const cases: ReadonlyArray<Record<string, unknown>> = [
          holdoutBody({ holdout_fraction: 0.6 }),
          holdoutBody({ holdout_fraction: 0.005 }),
          holdoutBody({ holdout_fraction: undefined }),
          holdoutBody({ window: { start: dayFromToday(10), end: dayFromToday(5) } }),
          holdoutBody({ window: { start: dayFromToday(1), end: dayFromToday(400) } }),
          holdoutBody({ window: { start: "2026-02-30", end: dayFromToday(5) } }),
          holdoutBody({ target: { level: "campaign", id: "c1" } }),
          holdoutBody({ kind: "switchback", holdout_fraction: undefined }),
          holdoutBody({ kind: "pre_post", holdout_fraction: undefined, target: { level: "ad_set", id: "s1" } }),
          holdoutBody({ metric: { conversion_key: "purchase", measure: "revenue" } }),
          holdoutBody({ kind: "ab_test" }),
          holdoutBody({ spend_target: { level: "account", id: "c1" } }),
          holdoutBody({ kind: "switchback", holdout_fraction: undefined, target: { level: "campaign", id: "c1" }, spend_target: { level: "campaign", id: "c1" } }),
          holdoutBody({ surprise: true })
        ]
        for (const body of cases) {
          const r = yield* post(p.key, "/api/v1/experiments", body)
          assert.strictEqual(r.status, 400, `${JSON.stringify(body)}: ${r.text}`)
          assert.strictEqual(r.json.error.code, "validation_error", r.text)
        }
        assert.strictEqual(yield* count(p.profileId), 0)
        const badStop = yield* post(p.key, `/api/v1/experiments/${crypto.randomUUID()}/stop`, { reason: "bored" })
        assert.strictEqual(badStop.status, 400, badStop.text)
      }))

    it.effect("a switchback cannot start without a usable ad-platform connection that can write ads; it stays a draft", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", {
          name: "Switchback",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: dayFromToday(2), end: dayFromToday(30) },
          target: { level: "campaign", id: "cmp_1" }
        })).json.data
        const none = yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        assert.strictEqual(none.status, 409, none.text)
        assert.strictEqual(none.json.error.code, "adplatform_connection_required")
        assert.strictEqual(none.json.error.reason, "no_usable_connection")
        yield* seedAdConnection(p.profileId, ["ads_read"])
        const readOnly = yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        assert.strictEqual(readOnly.status, 403, readOnly.text)
        assert.strictEqual(readOnly.json.error.code, "adplatform_write_permission_missing")
        const read = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)
        assert.deepStrictEqual([read.json.data.status, read.json.data.version], ["draft", 1])
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE connections SET scopes = '{ads_management,ads_read}' WHERE profile_id = ${p.profileId}`)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).json.data.status, "running")
      }))

    it.effect("unknown ids are 404 not_found; another profile's experiment is 404", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const other = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(other.key, "/api/v1/experiments", holdoutBody())).json.data
        for (const path of [`/api/v1/experiments/${crypto.randomUUID()}`, "/api/v1/experiments/not-a-uuid", `/api/v1/experiments/${e.id}`]) {
          const r = yield* callAs(p.key, "GET", path)
          assert.strictEqual(r.status, 404, r.text)
          assert.strictEqual(r.json.error.code, "not_found")
        }
        const start = yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        assert.strictEqual(start.status, 404, start.text)
        assert.strictEqual((yield* callAs(other.key, "GET", `/api/v1/experiments/${e.id}`)).json.data.status, "draft")
      }))

    it.effect("scopes: writes need campaigns:apply, reads analytics:read (403 insufficient_scope, nothing written)", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody())).json.data
        const { key: readOnly } = yield* seedApiKey(p, { scopes: ["analytics:read"], rateLimitPerMinute: 10_000 })
        const { key: applyOnly } = yield* seedApiKey(p, { scopes: ["campaigns:apply"], rateLimitPerMinute: 10_000 })
        for (const r of [
          yield* post(readOnly, "/api/v1/experiments", holdoutBody()),
          yield* post(readOnly, `/api/v1/experiments/${e.id}/start`),
          yield* post(readOnly, `/api/v1/experiments/${e.id}/stop`, { reason: "early_stop" }),
          yield* callAs(applyOnly, "GET", "/api/v1/experiments"),
          yield* callAs(applyOnly, "GET", `/api/v1/experiments/${e.id}`),
          yield* callAs(applyOnly, "GET", `/api/v1/experiments/${e.id}/results`),
          yield* post(applyOnly, "/api/v1/experiments/design", {
            kind: "switchback",
            metric: { conversion_key: "purchase", measure: "count" },
            minimum_detectable_effect: 0.2
          })
        ]) {
          assert.strictEqual(r.status, 403, r.text)
          assert.strictEqual(r.json.error.code, "insufficient_scope")
        }
        assert.strictEqual(yield* count(p.profileId), 1)
        assert.strictEqual((yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}`)).json.data.version, 1)
      }))
  })

  describe("results", () => {
    /** Members paid before the window; in the window, treatment converts at `rates[0]` and holdout at `rates[1]` (per mille, spread evenly). */
    const holdoutFixture = (
      measure: "count" | "value",
      perMille: readonly [number, number],
      extra: Record<string, unknown> = {},
      beforeResults: (profileId: string) => Effect.Effect<unknown, unknown, AnalyticsImports> = () => Effect.void
    ) =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const start = dayFromToday(-21)
        const end = dayFromToday(-7)
        // In the order the service reads the list (by id), so the bootstrap draws the same resamples.
        const members = [...(yield* seedCustomers(p.profileId, 2000))].sort()
        yield* seedConversions(p.profileId, members.map((id) => ({ customerId: id, at: noonOf(dayFromToday(-60)), key: "payment", value: 50, cash: true })))
        const created = yield* post(p.key, "/api/v1/experiments", holdoutBody({ metric: { conversion_key: "purchase", measure }, window: { start, end }, ...extra }))
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        const salt = yield* saltOf(p.profileId, e.id)
        const counters = [0, 0]
        const rows: Array<SeedConversion> = []
        const values = { treatment: [] as Array<number>, control: [] as Array<number> }
        members.forEach((id) => {
          const group = heldOut(salt, id, 0.2) ? 1 : 0
          const n = counters[group] ?? 0
          counters[group] = n + 1
          // Evenly spread: the i-th customer of a group converts when (i * rate) crosses a whole thousand.
          const converts = Math.floor(((n + 1) * perMille[group]!) / 1000) > Math.floor((n * perMille[group]!) / 1000)
          const value = converts ? 40 + (n % 5) * 10 : 0
          ;(group === 1 ? values.control : values.treatment).push(value)
          if (converts) rows.push({ customerId: id, at: noonOf(dayFromToday(-14), n % 600), key: "purchase", value, cash: false })
        })
        // Outside the window, not counted.
        rows.push({ customerId: members[0]!, at: noonOf(dayFromToday(-3)), key: "purchase", value: 1000, cash: false })
        yield* seedConversions(p.profileId, rows)
        yield* beforeResults(p.profileId)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const results = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(results.status, 200, results.text)
        return { r: results.json.data, values, salt, e }
      })

    it.effect("audience_holdout, counts: clearly different rates give Newcombe's interval excluding 0, equal to the statistics", () =>
      Effect.gen(function*() {
        const { r, values } = yield* holdoutFixture("count", [300, 100])
        const t = values.treatment
        const c = values.control
        const converting = (xs: ReadonlyArray<number>) => xs.filter((x) => x > 0).length
        assert.strictEqual(r.status, "completed")
        assert.strictEqual(r.treatment.size, t.length)
        assert.strictEqual(r.control.size, c.length)
        assert.strictEqual(r.treatment.conversions, converting(t))
        assert.strictEqual(r.control.conversions, converting(c))
        assert.include(r.method, "Newcombe")
        assert.strictEqual(r.insufficient_data, null)
        const expected = compareProportions({ conversions: converting(t), size: t.length }, { conversions: converting(c), size: c.length })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        close(r.absolute_lift.estimate, expected.estimate, "estimate")
        close(r.absolute_lift.lower, expected.lower, "lower")
        close(r.absolute_lift.upper, expected.upper, "upper")
        close(r.incremental_conversions.estimate, expected.incrementalConversions.estimate, "incremental")
        assert.strictEqual(r.absolute_lift.level, 0.95)
        assert.ok(r.absolute_lift.lower > 0, JSON.stringify(r.absolute_lift))
        assert.ok(Math.abs(r.absolute_lift.estimate - 0.2) < 0.01)
        assert.deepStrictEqual(r.failed_checks, [])
        assert.deepStrictEqual(r.checks.map((x: any) => [x.name, x.passed]), [["sample_ratio_mismatch", true], ["too_few_outcomes", true]])
      }))

    it.effect("audience_holdout, counts: equal rates give an interval containing 0", () =>
      Effect.gen(function*() {
        const { r } = yield* holdoutFixture("count", [200, 200])
        assert.ok(r.absolute_lift.lower < 0 && r.absolute_lift.upper > 0, JSON.stringify(r.absolute_lift))
      }))

    it.effect("audience_holdout, value: the seeded bootstrap of value per customer, equal to the statistics", () =>
      Effect.gen(function*() {
        const { r, values, salt } = yield* holdoutFixture("value", [300, 100])
        assert.include(r.method, "bootstrap")
        const expected = bootstrapMeanDifference(values.treatment, values.control, { seed: seedOf(salt, "bootstrap"), resamples: 2000 })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        close(r.absolute_lift.estimate, expected.estimate, "estimate")
        close(r.absolute_lift.lower, expected.lower, "lower")
        close(r.absolute_lift.upper, expected.upper, "upper")
        assert.ok(r.absolute_lift.lower > 0)
        assert.strictEqual(r.incremental_conversions, null)
        close(r.incremental_value.estimate, expected.estimate * values.treatment.length, "incremental value")
        close(r.incremental_value.lower, expected.lower * values.treatment.length, "incremental value lower")
      }))

    it.effect("audience_holdout with no list: insufficient_data with a reason, never a lift", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ window: { start: dayFromToday(-10), end: dayFromToday(-2) } }))).json.data
        yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        const r = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data
        assert.strictEqual(r.absolute_lift, null)
        assert.strictEqual(r.relative_lift, null)
        assert.deepStrictEqual(r.insufficient_data, { reason: "a group has no customers" })
        assert.deepStrictEqual(r.failed_checks, ["too_few_outcomes"])
      }))

    it.effect("before the window's first whole day: insufficient_data, no figures, whatever the kind", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", {
          name: "Pre/post starting today",
          kind: "pre_post",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: dayFromToday(0), end: dayFromToday(20) },
          target: { level: "campaign", id: "cmp_t" }
        })).json.data
        yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        const r = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data
        assert.strictEqual(r.status, "running")
        assert.deepStrictEqual(r.insufficient_data, { reason: "no whole day of the window has passed yet" })
        assert.strictEqual(r.absolute_lift, null)
        assert.deepStrictEqual(r.treatment, { size: 0, conversions: 0, value: 0 })
      }))

    it.effect("a stopped experiment is analysed up to the day before its stop", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const e = (yield* post(p.key, "/api/v1/experiments", holdoutBody({ window: { start: dayFromToday(-10), end: dayFromToday(10) } }))).json.data
        yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/stop`, { reason: "early_stop" })).status, 200)
        assert.deepStrictEqual((yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data.analysed, {
          start: dayFromToday(-10),
          end: dayFromToday(-1)
        })
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE experiments SET stopped_at = ${`${dayFromToday(-5)}T09:00:00Z`}::timestamptz WHERE profile_id = ${p.profileId} AND id = ${e.id}`)
        const r = (yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)).json.data
        assert.strictEqual(r.status, "stopped")
        assert.deepStrictEqual(r.analysed, { start: dayFromToday(-10), end: dayFromToday(-6) })
      }))

    const switchbackFixture = (
      onLift: number,
      measure: "count" | "value" = "count",
      beforeResults: (profileId: string, schedule: ReadonlyArray<{ readonly date: string; readonly on: boolean }>) => Effect.Effect<unknown, unknown, AnalyticsImports> = () =>
        Effect.void,
      options: { readonly currency?: string } = {}
    ) =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES, options)
        yield* seedAdConnection(p.profileId)
        const start = dayFromToday(-30)
        const end = dayFromToday(-3)
        const created = yield* post(p.key, "/api/v1/experiments", {
          name: "Switchback",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure },
          window: { start, end },
          target: { level: "campaign", id: "cmp_1" }
        })
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        assert.strictEqual(e.config.schedule.length, 28)
        assert.deepStrictEqual(e.config.schedule, switchbackSchedule(yield* saltOf(p.profileId, e.id), start, end))
        assert.strictEqual(e.config.schedule.filter((d: any) => d.on).length, 14)
        // A fixed salt and its schedule, so the data (weekday pattern plus seeded noise) and its answer are fixed.
        const schedule = switchbackSchedule("fixed-salt", start, end)
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE experiments SET salt = 'fixed-salt', config = jsonb_set(config, '{schedule}', ${JSON.stringify(schedule)}::jsonb)
              WHERE profile_id = ${p.profileId} AND id = ${e.id}`)
        const noise = createRandom(7)
        const rows: Array<SeedConversion> = []
        const days = schedule.map((d, i) => {
          const outcomes = 20 + (i % 7) * 2 + Math.round(3 * noise.normal()) + 3 + (d.on ? onLift : 0)
          for (let k = 0; k < outcomes; k++) rows.push({ customerId: null, at: noonOf(d.date, k), key: "purchase", value: 10, cash: false })
          return { date: d.date, on: d.on, outcomes }
        })
        yield* seedConversions(p.profileId, rows)
        yield* beforeResults(p.profileId, schedule)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const r = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(r.status, 200, r.text)
        return { r: r.json.data, days }
      })

    it.effect("switchback: the regression with day-of-week controls finds the on-day lift, equal to analyseSwitchback", () =>
      Effect.gen(function*() {
        const { r, days } = yield* switchbackFixture(8)
        const expected = analyseSwitchback(days, { standardErrors: "hc1" })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        assert.include(r.method, "day-of-week")
        close(r.absolute_lift.estimate, expected.estimate, "estimate")
        close(r.absolute_lift.lower, expected.lower, "lower")
        close(r.absolute_lift.upper, expected.upper, "upper")
        assert.ok(r.absolute_lift.lower > 0)
        assert.deepStrictEqual([r.treatment.size, r.control.size], [14, 14])
        close(r.incremental_conversions.estimate, expected.estimate * 14, "incremental")
      }))

    it.effect("switchback without an effect: the interval contains 0", () =>
      Effect.gen(function*() {
        const { r } = yield* switchbackFixture(0)
        assert.ok(r.absolute_lift.lower < 0 && r.absolute_lift.upper > 0, JSON.stringify(r.absolute_lift))
      }))

    it.effect("pre_post: a synthetic control of the other campaigns, its fit reported, equal to syntheticControl", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const created = yield* post(p.key, "/api/v1/experiments", prePostBody("count"))
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        const rows: Array<SeedConversion> = []
        const target: Array<number> = []
        const d1: Array<number> = []
        const d2: Array<number> = []
        for (let i = 0; i < PRE_POST_DAYS; i++) {
          const date = dayFromToday(-PRE_POST_DAYS + i)
          const day = prePostDay(i)
          d1.push(day.a)
          d2.push(day.b)
          target.push(day.t)
          for (const [campaign, n] of prePostCampaigns(day)) {
            for (let k = 0; k < n; k++) rows.push({ customerId: null, at: noonOf(date, k), key: "purchase", value: 5, cash: false, campaign })
          }
        }
        yield* seedConversions(p.profileId, rows)
        yield* post(p.key, `/api/v1/experiments/${e.id}/start`)
        const response = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(response.status, 200, response.text)
        const r = response.json.data
        const expected = syntheticControl({ target, donors: [d1, d2], preDays: 28 })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        assert.include(r.method, "synthetic control")
        close(r.incremental_conversions.estimate, expected.estimate, "total effect")
        close(r.absolute_lift.estimate, expected.perDay.estimate, "per day")
        close(r.absolute_lift.lower, expected.perDay.lower, "per day lower")
        assert.ok(Math.abs(r.absolute_lift.estimate - 10) < 1, JSON.stringify(r.absolute_lift))
        assert.ok(r.absolute_lift.lower > 0)
        assert.deepStrictEqual(r.fit.donors, 2)
        assert.strictEqual(r.fit.pre_days, 28)
        close(r.fit.r_squared, expected.fit.rSquared, "r squared")
        assert.deepStrictEqual(r.checks.map((x: any) => [x.name, x.passed]), [["pre_period_fit", true]])
      }))

    it.effect("incremental ROAS, switchback: incremental value over the target's spend on the analysed on days, interval from the value's", () =>
      Effect.gen(function*() {
        const { r } = yield* switchbackFixture(8, "value", (profileId, schedule) =>
          // Off days carry a little spend (a pause takes effect late); only on days count. A day after the window neither.
          spendRows(profileId, "cmp_1", [...schedule.map((d) => [d.date, d.on ? 100 : 7] as const), [dayFromToday(-1), 999] as const]))
        assert.deepStrictEqual(r.spend, { amount: 1400, currency: null, days: 14 })
        assert.strictEqual(r.incremental_roas_unavailable, null)
        close(r.incremental_roas.estimate, r.incremental_value.estimate / 1400, "roas")
        close(r.incremental_roas.lower, r.incremental_value.lower / 1400, "roas lower")
        close(r.incremental_roas.upper, r.incremental_value.upper / 1400, "roas upper")
        assert.strictEqual(r.incremental_roas.level, 0.95)
        // 8 extra conversions of 10 per on day against 100 of spend: about 0.8.
        assert.ok(Math.abs(r.incremental_roas.estimate - 0.8) < 0.2, JSON.stringify(r.incremental_roas))
      }))

    it.effect("incremental ROAS: null with its reason when the metric is a count, spend is unknown or cannot be converted", () =>
      Effect.gen(function*() {
        const counted = (yield* switchbackFixture(8, "count", (profileId, schedule) => spendRows(profileId, "cmp_1", schedule.map((d) => [d.date, 50] as const)))).r
        assert.strictEqual(counted.incremental_roas, null)
        assert.deepStrictEqual(counted.incremental_roas_unavailable, { reason: "metric_is_count" })
        assert.deepStrictEqual(counted.spend, { amount: 700, currency: null, days: 14 })
        const unknown = (yield* switchbackFixture(8, "value", (profileId, schedule) => spendRows(profileId, "cmp_other", schedule.map((d) => [d.date, 50] as const)))).r
        assert.strictEqual(unknown.incremental_roas, null)
        assert.strictEqual(unknown.spend, null)
        assert.deepStrictEqual(unknown.incremental_roas_unavailable, { reason: "spend_unknown" })
        assert.notStrictEqual(unknown.incremental_value, null)
        // Spend in USD, the profile's currency EUR, no rate: not converted, never summed as if it were.
        const unconverted = (yield* switchbackFixture(8, "value", (profileId, schedule) => spendRows(profileId, "cmp_1", schedule.map((d) => [d.date, 50] as const)), { currency: "EUR" })).r
        assert.strictEqual(unconverted.incremental_roas, null)
        assert.strictEqual(unconverted.spend, null)
        assert.deepStrictEqual(unconverted.incremental_roas_unavailable, { reason: "fx_rate_missing" })
        const idle = (yield* switchbackFixture(8, "value", (profileId, schedule) => spendRows(profileId, "cmp_1", schedule.map((d) => [d.date, 0] as const)))).r
        assert.deepStrictEqual(idle.spend, { amount: 0, currency: null, days: 14 })
        assert.deepStrictEqual(idle.incremental_roas_unavailable, { reason: "no_spend_in_treatment" })
      }))

    it.effect("incremental ROAS, holdout: with a spend_target its spend over the analysed days; without one no_spend_target", () =>
      Effect.gen(function*() {
        const start = dayFromToday(-21)
        const inWindow = Array.from({ length: 15 }, (_, i) => [dayFromToday(-21 + i), 40] as const)
        const named = yield* holdoutFixture("value", [300, 100], { spend_target: { level: "campaign", id: "cmp_h" } }, (profileId) =>
          spendRows(profileId, "cmp_h", [...inWindow, [dayFromToday(-3), 1000] as const, [dayFromToday(-40), 1000] as const], "EUR"))
        assert.deepStrictEqual(named.e.config.spend_target, { level: "campaign", id: "cmp_h" })
        assert.strictEqual(named.r.analysed.start, start)
        assert.deepStrictEqual(named.r.spend, { amount: 600, currency: null, days: 15 })
        close(named.r.incremental_roas.estimate, named.r.incremental_value.estimate / 600, "roas")
        close(named.r.incremental_roas.lower, named.r.incremental_value.lower / 600, "roas lower")
        close(named.r.incremental_roas.upper, named.r.incremental_value.upper / 600, "roas upper")
        const unnamed = yield* holdoutFixture("value", [300, 100])
        assert.strictEqual(unnamed.e.config.spend_target, undefined)
        assert.strictEqual(unnamed.r.spend, null)
        assert.strictEqual(unnamed.r.incremental_roas, null)
        assert.deepStrictEqual(unnamed.r.incremental_roas_unavailable, { reason: "no_spend_target" })
      }))
  })

  describe("design", () => {
    it.effect("switchback: days from the profile's daily history, equal to switchbackDays; a short window warns", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const daily: Array<number> = []
        const rows: Array<SeedConversion> = []
        for (let i = 0; i < 28; i++) {
          const n = 20 + (i % 7) * 2 + ((i * 3) % 4)
          daily.push(n)
          for (let k = 0; k < n; k++) rows.push({ customerId: null, at: noonOf(dayFromToday(-28 + i), k), key: "purchase", value: 10, cash: false })
        }
        yield* seedConversions(p.profileId, rows)
        const body = {
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          minimum_detectable_effect: 0.1,
          history_days: 28,
          window: { start: dayFromToday(1), end: dayFromToday(14) }
        }
        const r = yield* post(p.key, "/api/v1/experiments/design", body)
        assert.strictEqual(r.status, 200, r.text)
        const mean = daily.reduce((a, b) => a + b, 0) / daily.length
        const sd = Math.sqrt(daily.reduce((s, x) => s + (x - mean) ** 2, 0) / (daily.length - 1))
        const expected = switchbackDays({ dailyMean: mean, dailySd: sd, minimumEffect: 0.1, effectKind: "relative", alpha: 0.05, power: 0.8 })
        close(r.json.data.baseline.mean, mean, "mean")
        close(r.json.data.baseline.sd, sd, "sd")
        assert.strictEqual(r.json.data.required_days, expected.days)
        assert.ok(expected.days > 14)
        assert.deepStrictEqual(r.json.data.warnings, ["window_too_short"])
        assert.strictEqual(r.json.data.window_days, 14)
        // A create with the same design is accepted with the same warning.
        const created = yield* post(p.key, "/api/v1/experiments", {
          name: "Short switchback",
          kind: "switchback",
          metric: body.metric,
          window: body.window,
          target: { level: "campaign", id: "cmp_1" },
          design: { minimum_detectable_effect: 0.1 }
        })
        assert.strictEqual(created.status, 201, created.text)
        assert.deepStrictEqual(created.json.data.design.warnings, ["window_too_short"])
      }))

    it.effect("audience_holdout: customers per group from the list's conversion rate, equal to sampleSizeTwoProportions", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const members = yield* seedCustomers(p.profileId, 500)
        yield* seedConversions(p.profileId, members.map((id) => ({ customerId: id, at: noonOf(dayFromToday(-90)), key: "payment", value: 50, cash: true })))
        // 50 of 500 customers bought in the last 28 days: a 10 % baseline.
        yield* seedConversions(p.profileId, members.slice(0, 50).map((id, i) => ({ customerId: id, at: noonOf(dayFromToday(-10), i), key: "purchase", value: 30, cash: false })))
        const r = yield* post(p.key, "/api/v1/experiments/design", {
          kind: "audience_holdout",
          metric: { conversion_key: "purchase", measure: "count" },
          minimum_detectable_effect: 0.2,
          holdout_fraction: 0.2,
          history_days: 28
        })
        assert.strictEqual(r.status, 200, r.text)
        const expected = sampleSizeTwoProportions({ baseline: 0.1, minimumEffect: 0.2, effectKind: "relative", alpha: 0.05, power: 0.8, treatmentShare: 0.8 })
        assert.strictEqual(r.json.data.baseline.customers, 500)
        close(r.json.data.baseline.conversion_rate, 0.1, "rate")
        assert.deepStrictEqual(r.json.data.required_sample, expected)
        assert.deepStrictEqual(r.json.data.warnings, expected.total > 500 ? ["list_too_small"] : [])
      }))

    it.effect("pre_post: days from the history's in-time placebos of the campaign's synthetic control, equal to prePostDesign; short window and short history warn", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const noise = createRandom(11)
        const rows: Array<SeedConversion> = []
        const series = { target: [] as Array<number>, d1: [] as Array<number>, d2: [] as Array<number> }
        for (let i = 0; i < 100; i++) {
          const date = dayFromToday(-100 + i)
          const a = 10 + (i % 7) * 2
          const b = 14 + ((i * 3) % 5) * 2
          const t = Math.max(0, Math.round((a + b) / 2 + 2 * noise.normal()))
          series.d1.push(a)
          series.d2.push(b)
          series.target.push(t)
          for (const [campaign, n] of [["cmp_t", t], ["cmp_1", a], ["cmp_2", b]] as const) {
            for (let k = 0; k < n; k++) rows.push({ customerId: null, at: noonOf(date, k), key: "purchase", value: 5, cash: false, campaign })
          }
        }
        yield* seedConversions(p.profileId, rows)
        const body = {
          kind: "pre_post",
          metric: { conversion_key: "purchase", measure: "count" },
          minimum_detectable_effect: 0.15,
          target: { level: "campaign", id: "cmp_t" },
          pre_days: 21,
          history_days: 100,
          window: { start: dayFromToday(1), end: dayFromToday(2) }
        }
        const r = yield* post(p.key, "/api/v1/experiments/design", body)
        assert.strictEqual(r.status, 200, r.text)
        const expected = prePostDesign({ target: series.target, donors: [series.d1, series.d2], preDays: 21, minimumEffect: 0.15, effectKind: "relative" })
        assert.strictEqual(expected._tag, "Design")
        if (expected._tag !== "Design") return
        const d = r.json.data
        assert.include(d.method, "in-time placebos")
        assert.strictEqual(d.required_days, expected.days)
        assert.isAbove(expected.days, 2)
        assert.deepStrictEqual(d.placebo, {
          pre_days: 21,
          donors: 2,
          windows: expected.placebos,
          longest_measured_days: expected.longestMeasured,
          total_error: d.placebo.total_error
        })
        close(d.placebo.total_error, expected.totalError, "placebo error")
        close(d.baseline.mean, expected.dailyMean, "daily mean")
        assert.deepStrictEqual(d.warnings, ["window_too_short"])
        const long = yield* post(p.key, "/api/v1/experiments/design", { ...body, window: { start: dayFromToday(1), end: dayFromToday(1 + expected.days) } })
        assert.deepStrictEqual(long.json.data.warnings, [])
        // 30 days of history: 9 placebo fits of 21 days, fewer than the 10 a length needs.
        const short = yield* post(p.key, "/api/v1/experiments/design", { ...body, history_days: 30 })
        assert.strictEqual(short.status, 200, short.text)
        assert.strictEqual(short.json.data.required_days, null)
        assert.deepStrictEqual(short.json.data.warnings, ["history_too_short"])
        assert.strictEqual(short.json.data.placebo.longest_measured_days, 0)
        // A create with a design stores the same answer (its history the default 180 days).
        const created = yield* post(p.key, "/api/v1/experiments", {
          name: "Pre/post with a design",
          kind: "pre_post",
          metric: body.metric,
          window: body.window,
          target: body.target,
          pre_days: 21,
          design: { minimum_detectable_effect: 0.15 }
        })
        assert.strictEqual(created.status, 201, created.text)
        assert.strictEqual(created.json.data.design.history_days, 180)
        assert.strictEqual(created.json.data.design.required_days, expected.days)
      }))

    it.effect("no history: required null with no_history; bad input is 400 validation_error", () =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const r = yield* post(p.key, "/api/v1/experiments/design", {
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "value" },
          minimum_detectable_effect: 0.1
        })
        assert.strictEqual(r.status, 200, r.text)
        assert.strictEqual(r.json.data.required_days, null)
        assert.deepStrictEqual(r.json.data.warnings, ["no_history"])
        const prePost = yield* post(p.key, "/api/v1/experiments/design", {
          kind: "pre_post",
          metric: { conversion_key: "purchase", measure: "count" },
          minimum_detectable_effect: 0.1,
          target: { level: "campaign", id: "cmp_t" }
        })
        assert.strictEqual(prePost.status, 200, prePost.text)
        assert.strictEqual(prePost.json.data.required_days, null)
        assert.deepStrictEqual(prePost.json.data.warnings, ["no_history"])
        for (
          const bad of [
            { kind: "pre_post" },
            { kind: "pre_post", target: { level: "ad_set", id: "s1" } },
            { kind: "switchback", target: { level: "campaign", id: "c1" } },
            { kind: "switchback", pre_days: 28 },
            { kind: "pre_post", target: { level: "campaign", id: "c1" }, pre_days: 7 }
          ]
        ) {
          const refused = yield* post(p.key, "/api/v1/experiments/design", { metric: { conversion_key: "purchase", measure: "count" }, minimum_detectable_effect: 0.1, ...bad })
          assert.strictEqual(refused.status, 400, `${JSON.stringify(bad)}: ${refused.text}`)
          assert.strictEqual(refused.json.error.code, "validation_error")
        }
        for (const bad of [{ minimum_detectable_effect: 0 }, { minimum_detectable_effect: 0.1, confidence: 1.2 }, { minimum_detectable_effect: 0.1, power: 0.2 }]) {
          const refused = yield* post(p.key, "/api/v1/experiments/design", { kind: "switchback", metric: { conversion_key: "purchase", measure: "count" }, ...bad })
          assert.strictEqual(refused.status, 400, refused.text)
          assert.strictEqual(refused.json.error.code, "validation_error")
        }
      }))
  })
})
