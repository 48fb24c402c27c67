/**
 * Experiments' days (decision 0135) and pre/post incremental ROAS (decision 0128), end to end:
 * the real app and handlers on the test database, outcomes seeded by SQL.
 *
 * - A profile in America/Los_Angeles: outcomes in the evening there are the next day in UTC; its
 *   switchback days, results and design history are its local days, a DST day 25 hours long.
 * - A pre/post on a value metric with the target's spend: incremental ROAS with the exact shape,
 *   and "not enough data" as an answer (no lift, no ROAS, the reason).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, callAs } from "../support/app.ts"
import { analyticsApp, seedAnalyticsProfile } from "../support/analytics.ts"
import {
  dayFromToday,
  noonOf,
  PRE_POST_DAYS,
  prePostBody,
  prePostCampaigns,
  prePostDay,
  seedAdConnection,
  seedConversions,
  type SeedConversion,
  spendRows
} from "../support/experiments.ts"
import { analyseSwitchback, dateOf, dayNumber, switchbackDays, syntheticControl } from "../../src/experiments/statistics/index.ts"

const SCOPES = ["analytics:read", "campaigns:apply"]
const LA = "America/Los_Angeles"

const post = (key: string, path: string, body?: unknown) =>
  call(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${actual} != ${expected}`)

/** Today in Los Angeles, from the platform's own zone rules (not the service's code). */
const laToday = () => new Date().toLocaleDateString("en-CA", { timeZone: LA })

/** Hours Los Angeles is behind UTC on a date (8, or 7 in summer time), from the platform's zone rules. */
const laHoursBehind = (date: string) => {
  const name = new Intl.DateTimeFormat("en-US", { timeZone: LA, timeZoneName: "shortOffset" })
    .formatToParts(Date.parse(`${date}T12:00:00Z`)).find((part) => part.type === "timeZoneName")?.value ?? ""
  return -Number(name.replace("GMT", ""))
}

/** Fixed per-day counts with a weekly shape and an on-day lift, whole numbers. */
const countFor = (i: number, on: boolean) => 6 + (i % 7) * 2 + ((i * 5) % 3) + (on ? 5 : 0)

layer(analyticsApp, { timeout: "300 seconds", excludeTestServices: true })("experiments' days and pre/post ROAS", (it) => {
  describe("local days of the profile's time zone (decision 0135)", () => {
    /** A switchback on a Los Angeles profile; answers the created experiment. */
    const laSwitchback = (start: string, end: string) =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES, { timeZone: LA })
        yield* seedAdConnection(p.profileId)
        const created = yield* post(p.key, "/api/v1/experiments", {
          name: "Switchback in Los Angeles",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start, end },
          target: { level: "campaign", id: "cmp_la" }
        })
        assert.strictEqual(created.status, 201, created.text)
        return { p, e: created.json.data, schedule: created.json.data.config.schedule as ReadonlyArray<{ date: string; on: boolean }> }
      })

    it.effect("outcomes in a Los Angeles evening (the next day in UTC) count on their local day in results and design", () =>
      Effect.gen(function*() {
        const today = laToday()
        const start = dateOf(dayNumber(today) - 29)
        const end = dateOf(dayNumber(today) - 2)
        const { p, e, schedule } = yield* laSwitchback(start, end)
        assert.strictEqual(schedule.length, 28)
        // Each local day's outcomes at 19:30 there (PST, UTC-8 in this season's dates, or PDT UTC-7):
        // 02:30 or 03:30 UTC of the next day. UTC days would move every one of them a day later.
        const rows: Array<SeedConversion> = []
        const days = schedule.map((d, i) => {
          const outcomes = countFor(i, d.on)
          const at = new Date(Date.parse(`${d.date}T19:30:00Z`) + laHoursBehind(d.date) * 3_600_000)
          assert.notStrictEqual(at.toISOString().slice(0, 10), d.date, "an evening that is the next day in UTC")
          for (let k = 0; k < outcomes; k++) rows.push({ customerId: null, at: new Date(at.getTime() + k * 60_000).toISOString(), key: "purchase", value: 10, cash: false })
          return { date: d.date, on: d.on, outcomes }
        })
        yield* seedConversions(p.profileId, rows)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const response = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(response.status, 200, response.text)
        const r = response.json.data
        assert.deepStrictEqual(r.analysed, { start, end })
        const sum = (on: boolean) => days.filter((d) => d.on === on).reduce((s, d) => s + d.outcomes, 0)
        assert.deepStrictEqual(r.treatment, { size: 14, conversions: sum(true), value: 10 * sum(true) })
        assert.deepStrictEqual(r.control, { size: 14, conversions: sum(false), value: 10 * sum(false) })
        const expected = analyseSwitchback(days, { standardErrors: "hc1" })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        close(r.absolute_lift.estimate, expected.estimate, "estimate")
        close(r.absolute_lift.lower, expected.lower, "lower")
        close(r.absolute_lift.upper, expected.upper, "upper")

        // The design's history: the last 28 whole local days (yesterday back), each day's own count.
        const design = yield* post(p.key, "/api/v1/experiments/design", {
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          minimum_detectable_effect: 0.3,
          history_days: 28
        })
        assert.strictEqual(design.status, 200, design.text)
        const history: Array<number> = []
        for (let d = dayNumber(today) - 28; d <= dayNumber(today) - 1; d++) history.push(days.find((x) => x.date === dateOf(d))?.outcomes ?? 0)
        const mean = history.reduce((a, b) => a + b, 0) / history.length
        const sd = Math.sqrt(history.reduce((s, x) => s + (x - mean) ** 2, 0) / (history.length - 1))
        close(design.json.data.baseline.mean, mean, "history mean")
        close(design.json.data.baseline.sd, sd, "history sd")
        assert.strictEqual(
          design.json.data.required_days,
          switchbackDays({ dailyMean: mean, dailySd: sd, minimumEffect: 0.3, effectKind: "relative", alpha: 0.05, power: 0.8 }).days
        )
      }))

    it.effect("the DST day (2026-11-01 in Los Angeles, 25 hours) holds its outcomes from 00:30 PDT to 23:30 PST", () =>
      Effect.gen(function*() {
        const start = "2026-10-19"
        const end = "2026-11-15"
        const { p, e, schedule } = yield* laSwitchback(start, end)
        // Local 00:30 and 23:30 of each day in UTC: PDT (UTC-7) until 02:00 on 2026-11-01, PST (UTC-8) after.
        const utcOf = (date: string, time: "00:30" | "23:30") => {
          const offset = date < "2026-11-01" || (date === "2026-11-01" && time === "00:30") ? 7 : 8
          return new Date(Date.parse(`${date}T${time}:00Z`) + offset * 3_600_000).toISOString()
        }
        assert.strictEqual(utcOf("2026-11-01", "00:30"), "2026-11-01T07:30:00.000Z")
        assert.strictEqual(utcOf("2026-11-01", "23:30"), "2026-11-02T07:30:00.000Z")
        const rows: Array<SeedConversion> = []
        const days = schedule.map((d, i) => {
          const outcomes = countFor(i, d.on)
          // Half at the first half hour of the local day, half at its last (an odd count: one more early).
          for (let k = 0; k < outcomes; k++) {
            const at = new Date(Date.parse(utcOf(d.date, k % 2 === 0 ? "00:30" : "23:30")) + Math.floor(k / 2) * 60_000 * (k % 2 === 0 ? 1 : -1))
            rows.push({ customerId: null, at: at.toISOString(), key: "purchase", value: 10, cash: false })
          }
          return { date: d.date, on: d.on, outcomes }
        })
        yield* seedConversions(p.profileId, rows)
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const response = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(response.status, 200, response.text)
        const r = response.json.data
        assert.deepStrictEqual(r.analysed, { start, end })
        const sum = (on: boolean) => days.filter((d) => d.on === on).reduce((s, d) => s + d.outcomes, 0)
        assert.strictEqual(r.treatment.conversions, sum(true))
        assert.strictEqual(r.control.conversions, sum(false))
        const expected = analyseSwitchback(days, { standardErrors: "hc1" })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        close(r.absolute_lift.estimate, expected.estimate, "estimate")
        close(r.absolute_lift.lower, expected.lower, "lower")
        close(r.absolute_lift.upper, expected.upper, "upper")
        // A fixed UTC-7 or UTC-8 day would put the DST day's last outcomes on its neighbour: not equal.
        const dst = days.find((d) => d.date === "2026-11-01")
        assert.ok(dst !== undefined && dst.outcomes > 1)
      }))
  })

  describe("pre/post incremental ROAS (decision 0128)", () => {
    /**
     * A pre/post on the value of `purchase` for cmp_t: 28 pre days and 14 post days of credited
     * value, 5 per unit (cmp_t +10 units a day after the change), or only the last `seededDays`.
     */
    const prePostValue = (seededDays: number) =>
      Effect.gen(function*() {
        const p = yield* seedAnalyticsProfile(SCOPES)
        const created = yield* post(p.key, "/api/v1/experiments", prePostBody("value"))
        assert.strictEqual(created.status, 201, created.text)
        const e = created.json.data
        const rows: Array<SeedConversion> = []
        const target: Array<number> = []
        const d1: Array<number> = []
        const d2: Array<number> = []
        for (let i = 0; i < PRE_POST_DAYS; i++) {
          const date = dayFromToday(-PRE_POST_DAYS + i)
          const day = i >= PRE_POST_DAYS - seededDays ? prePostDay(i) : { a: 0, b: 0, t: 0 }
          d1.push(5 * day.a)
          d2.push(5 * day.b)
          target.push(5 * day.t)
          // The metric is value: one credited conversion a day per campaign carries the day's value.
          for (const [campaign, n] of prePostCampaigns(day)) {
            if (n > 0) rows.push({ customerId: null, at: noonOf(date), key: "purchase", value: 5 * n, cash: false, campaign })
          }
        }
        yield* seedConversions(p.profileId, rows)
        // 200 a day on cmp_t in the post days; a pre day's spend is not the treatment's.
        yield* spendRows(p.profileId, "cmp_t", [[dayFromToday(-20), 999], ...Array.from({ length: 14 }, (_, i) => [dayFromToday(-14 + i), 200] as const)])
        assert.strictEqual((yield* post(p.key, `/api/v1/experiments/${e.id}/start`)).status, 200)
        const response = yield* callAs(p.key, "GET", `/api/v1/experiments/${e.id}/results`)
        assert.strictEqual(response.status, 200, response.text)
        return { r: response.json.data, e, start: dayFromToday(-14), end: dayFromToday(-1), target, donors: [d1, d2] }
      })

    const RESULT_KEYS = [
      "absolute_lift", "analysed", "checks", "control", "experiment_id", "failed_checks", "fit", "incremental_conversions",
      "incremental_roas", "incremental_roas_unavailable", "incremental_value", "insufficient_data", "kind", "method", "metric",
      "relative_lift", "spend", "status", "treatment", "window"
    ]

    it.effect("incremental value over the target's spend on the post days, the interval the value's bounds over it", () =>
      Effect.gen(function*() {
        const { r, e, start, end, target, donors } = yield* prePostValue(42)
        const expected = syntheticControl({ target, donors, preDays: 28 })
        assert.strictEqual(expected._tag, "Estimate")
        if (expected._tag !== "Estimate") return
        assert.deepStrictEqual(Object.keys(r).sort(), RESULT_KEYS)
        assert.strictEqual(r.experiment_id, e.id)
        assert.strictEqual(r.kind, "pre_post")
        assert.strictEqual(r.status, "completed")
        assert.deepStrictEqual(r.metric, { conversion_key: "purchase", measure: "value" })
        assert.deepStrictEqual(r.window, { start, end })
        assert.deepStrictEqual(r.analysed, { start, end })
        assert.deepStrictEqual(r.spend, { amount: 2800, currency: null, days: 14 })
        assert.strictEqual(r.incremental_roas_unavailable, null)
        assert.strictEqual(r.incremental_conversions, null)
        assert.deepStrictEqual(Object.keys(r.incremental_value).sort(), ["estimate", "level", "lower", "upper"])
        close(r.incremental_value.estimate, expected.estimate, "incremental value")
        close(r.incremental_value.lower, expected.lower, "incremental value lower")
        close(r.incremental_value.upper, expected.upper, "incremental value upper")
        assert.deepStrictEqual(Object.keys(r.incremental_roas).sort(), ["estimate", "level", "lower", "upper"])
        close(r.incremental_roas.estimate, expected.estimate / 2800, "roas")
        close(r.incremental_roas.lower, expected.lower / 2800, "roas lower")
        close(r.incremental_roas.upper, expected.upper / 2800, "roas upper")
        assert.strictEqual(r.incremental_roas.level, 0.95)
        // +10 units of 5 a day against 200 a day of spend: about 0.25.
        assert.ok(Math.abs(r.incremental_roas.estimate - 0.25) < 0.05, JSON.stringify(r.incremental_roas))
        assert.ok(r.incremental_roas.lower > 0)
        assert.strictEqual(r.insufficient_data, null)
        assert.deepStrictEqual(r.checks.map((c: any) => [c.name, c.passed]), [["pre_period_fit", true]])
        assert.deepStrictEqual(r.failed_checks, [])
        assert.deepStrictEqual(r.fit.pre_days, 28)
        assert.deepStrictEqual(r.fit.donors, 2)
      }))

    it.effect("not enough data: a pre-period without outcomes gives no lift and no ROAS, the reason said; spend still shown", () =>
      Effect.gen(function*() {
        // Outcomes in the 14 post days only (every campaign launched with the change): no donor has a
        // pre-period to be weighted on, so no counterfactual.
        const { r, target, donors } = yield* prePostValue(14)
        const expected = syntheticControl({ target, donors: donors.filter((d) => d.slice(0, 28).some((x) => x !== 0)), preDays: 28 })
        assert.strictEqual(expected._tag, "InsufficientData")
        if (expected._tag !== "InsufficientData") return
        assert.strictEqual(expected.reason, "no donor series")
        assert.deepStrictEqual(Object.keys(r).sort(), RESULT_KEYS)
        assert.deepStrictEqual(r.insufficient_data, { reason: expected.reason })
        // The post days' actual value beside no counterfactual: figures, never a lift.
        assert.deepStrictEqual(r.treatment, { size: 14, conversions: 0, value: target.slice(28).reduce((x, y) => x + y, 0) })
        assert.deepStrictEqual(r.control, { size: 14, conversions: 0, value: 0 })
        assert.strictEqual(r.absolute_lift, null)
        assert.strictEqual(r.relative_lift, null)
        assert.strictEqual(r.incremental_value, null)
        assert.strictEqual(r.incremental_conversions, null)
        assert.strictEqual(r.incremental_roas, null)
        assert.deepStrictEqual(r.incremental_roas_unavailable, { reason: "insufficient_data" })
        assert.deepStrictEqual(r.spend, { amount: 2800, currency: null, days: 14 })
        assert.deepStrictEqual(r.checks, [{ name: "pre_period_fit", passed: false, detail: expected.reason }])
        assert.deepStrictEqual(r.failed_checks, ["pre_period_fit"])
        assert.strictEqual(r.fit, null)
      }))
  })
})
