/**
 * A switchback's execution (issue 32, decision 0124) against the sandbox ad platform the app
 * serves: the start applies the schedule's day 0 to the target campaign through the ad-action
 * entity and its ledger, the day tick applies a new day once (a repeated tick adds no ledger
 * entry), and the stop puts the target back to its status before the experiment.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { advanceSwitchbacks } from "../../src/experiments/cron.ts"
import { ExperimentsRepo } from "../../src/experiments/repo.ts"
import { adFixture, objectOf, send, WRITE_SCOPES } from "../support/adplatform.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

const ledger = (profileId: string, objectId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ id: string; action: string; state: string; pre_status: string; written_status: string | null; rollback_of: string | null }>`
      SELECT id::text AS id, action, state, pre_status, written_status, rollback_of::text AS rollback_of
      FROM ad_actions WHERE profile_id = ${profileId} AND object_id = ${objectId} ORDER BY created_at, id`)

// The tick also completes other tests' experiments past their window (one database per worker):
// it answers at least this one; the ledger says what it did here.
const tick = advanceSwitchbacks.pipe(Effect.provide(ExperimentsRepo.layer))

layer(serveAppOnOwnPort(), { timeout: "180 seconds", excludeTestServices: true })("switchback execution", (it) => {
  describe("start, day tick, stop", () => {
    it.effect("day 0 off pauses the campaign; the next day on resumes it once; the stop restores it; the ledger has each entry", () =>
      Effect.gen(function*() {
        const f = yield* adFixture("one_account", [...WRITE_SCOPES, "analytics:read"])
        const campaign = `cmp_${f.n}_2`
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "active")
        const created = yield* send(f.key, "POST", "/api/v1/experiments", {
          name: "On/off",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: day(0), end: day(13) },
          target: { level: "campaign", id: campaign }
        })
        assert.strictEqual(created.status, 201, created.text)
        const id: string = created.json.data.id
        const sql = yield* SqlClient
        // Pinned: today (day 0) off, tomorrow on; the drawn schedule is the unit tests' concern.
        const schedule = (created.json.data.config.schedule as ReadonlyArray<{ date: string; on: boolean }>).map((d, i) => ({ date: d.date, on: i % 2 === 1 }))
        yield* sql`UPDATE experiments SET config = jsonb_set(config, '{schedule}', ${JSON.stringify(schedule)}::jsonb) WHERE id = ${id}`

        const started = yield* send(f.key, "POST", `/api/v1/experiments/${id}/start`)
        assert.strictEqual(started.status, 200, started.text)
        assert.strictEqual(started.json.data.status, "running")
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "paused")
        const afterStart = yield* ledger(f.profileId, campaign)
        assert.deepStrictEqual(afterStart.map((r) => [r.action, r.state, r.pre_status, r.written_status]), [["pause", "applied", "active", "paused"]])
        // The read shows the execution: day 0 applied by the ledger's entry, day 1 planned only.
        const read = (yield* send(f.key, "GET", `/api/v1/experiments/${id}`)).json.data
        assert.strictEqual(read.exclusion, null)
        assert.strictEqual(read.execution.pre_status, "active")
        assert.strictEqual(read.execution.days.length, 14)
        const [zero, one] = read.execution.days
        assert.deepStrictEqual({ ...zero, applied_at: null }, { date: day(0), planned: "off", applied_at: null, action_id: afterStart[0]?.id, outcome: zero.outcome })
        assert.isString(zero.outcome)
        assert.ok(Math.abs(Date.parse(zero.applied_at) - Date.now()) < 120_000, zero.applied_at)
        assert.deepStrictEqual(one, { date: day(1), planned: "on", applied_at: null, action_id: null, outcome: null })
        assert.deepStrictEqual([read.execution.restored, read.execution.failures], [null, []])

        // The same day again: nothing new on the platform or in the ledger.
        assert.isAtLeast(yield* tick, 1)
        assert.strictEqual((yield* ledger(f.profileId, campaign)).length, 1)

        // A day later: the window and the recorded day shift back by one, so today is the schedule's day 1 (on).
        const shifted = schedule.map((d, i) => ({ date: day(i - 1), on: d.on }))
        yield* sql`
          UPDATE experiments SET window_start = ${day(-1)}::date, window_end = ${day(12)}::date,
            config = jsonb_set(config, '{schedule}', ${JSON.stringify(shifted)}::jsonb),
            execution = jsonb_set(execution, '{applied,0,date}', ${JSON.stringify(day(-1))}::jsonb)
          WHERE id = ${id}`
        assert.isAtLeast(yield* tick, 1)
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "active")
        assert.isAtLeast(yield* tick, 1)
        yield* tick
        const afterDay = yield* ledger(f.profileId, campaign)
        assert.deepStrictEqual(afterDay.map((r) => [r.action, r.state, r.written_status]), [["pause", "applied", "paused"], ["resume", "applied", "active"]])
        const execution = (yield* sql<{ execution: any }>`SELECT execution FROM experiments WHERE id = ${id}`)[0]?.execution
        assert.deepStrictEqual(execution.applied.map((a: any) => [a.date, a.on, a.action_id]), [
          [day(-1), false, afterDay[0]?.id],
          [day(0), true, afterDay[1]?.id]
        ])
        assert.strictEqual(execution.pre_status, "active")

        // Paused again by the schedule's next day, then stopped: back to active (its status before), once.
        yield* sql`
          UPDATE experiments SET execution = jsonb_set(execution, '{applied,1,date}', ${JSON.stringify(day(-2))}::jsonb),
            config = jsonb_set(config, '{schedule,1,on}', 'false'::jsonb)
          WHERE id = ${id}`
        yield* tick
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "paused")
        const stopped = yield* send(f.key, "POST", `/api/v1/experiments/${id}/stop`, { reason: "early_stop" })
        assert.strictEqual(stopped.status, 200, stopped.text)
        assert.strictEqual(stopped.json.data.status, "stopped")
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "active")
        // Restored: no longer due; a tick changes nothing here (the ledger below has no fifth entry). Its
        // count is not asserted: another file's experiment in this worker's database may be due.
        yield* tick
        const final = yield* ledger(f.profileId, campaign)
        assert.deepStrictEqual(final.map((r) => [r.action, r.state, r.written_status]), [
          ["pause", "applied", "paused"],
          ["resume", "applied", "active"],
          ["pause", "applied", "paused"],
          ["resume", "applied", "active"]
        ])
        const restored = (yield* sql<{ execution: any }>`SELECT execution FROM experiments WHERE id = ${id}`)[0]?.execution.restored
        assert.deepStrictEqual(restored, { action_id: final[3]?.id, status: "active" })
        const ended = (yield* send(f.key, "GET", `/api/v1/experiments/${id}`)).json.data.execution
        assert.deepStrictEqual(ended.restored, { action_id: final[3]?.id, status: "active" })
        assert.deepStrictEqual(ended.failures, [])
      }))

    it.effect("an ad action the platform refuses is a failure in the experiment's execution, retried by the tick; the day stays unapplied", () =>
      Effect.gen(function*() {
        const f = yield* adFixture("one_account", [...WRITE_SCOPES, "analytics:read"])
        const created = yield* send(f.key, "POST", "/api/v1/experiments", {
          name: "On/off of a campaign the platform does not know",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: day(0), end: day(13) },
          target: { level: "campaign", id: `cmp_${f.n}_missing` }
        })
        assert.strictEqual(created.status, 201, created.text)
        const id: string = created.json.data.id
        assert.strictEqual((yield* send(f.key, "POST", `/api/v1/experiments/${id}/start`)).status, 200)
        const read = (yield* send(f.key, "GET", `/api/v1/experiments/${id}`)).json.data.execution
        assert.strictEqual(read.failures.length, 1)
        assert.deepStrictEqual({ ...read.failures[0], at: null, error: null }, { what: "day", date: day(0), error: null, at: null })
        assert.isString(read.failures[0].error)
        assert.deepStrictEqual(read.days[0], { date: day(0), planned: read.days[0].planned, applied_at: null, action_id: null, outcome: null })
        yield* tick
        const again = (yield* send(f.key, "GET", `/api/v1/experiments/${id}`)).json.data.execution
        assert.strictEqual(again.failures.length, 2)
        assert.strictEqual(again.days[0].action_id, null)
        assert.strictEqual((yield* send(f.key, "POST", `/api/v1/experiments/${id}/stop`, { reason: "invalidated" })).status, 200)
      }))

    it.effect("a campaign paused before the experiment stays paused after its stop", () =>
      Effect.gen(function*() {
        const f = yield* adFixture("one_account", [...WRITE_SCOPES, "analytics:read"])
        const campaign = `cmp_${f.n}_2`
        const paused = yield* send(f.key, "POST", `/api/v1/campaigns/${campaign}/pause`)
        assert.strictEqual(paused.status, 200, paused.text)
        const created = yield* send(f.key, "POST", "/api/v1/experiments", {
          name: "On/off",
          kind: "switchback",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: day(0), end: day(13) },
          target: { level: "campaign", id: campaign }
        })
        const id: string = created.json.data.id
        const sql = yield* SqlClient
        const schedule = (created.json.data.config.schedule as ReadonlyArray<{ date: string; on: boolean }>).map((d, i) => ({ date: d.date, on: i % 2 === 0 }))
        yield* sql`UPDATE experiments SET config = jsonb_set(config, '{schedule}', ${JSON.stringify(schedule)}::jsonb) WHERE id = ${id}`
        assert.strictEqual((yield* send(f.key, "POST", `/api/v1/experiments/${id}/start`)).status, 200)
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "active")
        assert.strictEqual((yield* send(f.key, "POST", `/api/v1/experiments/${id}/stop`, { reason: "invalidated" })).status, 200)
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "paused")
        const rows = yield* ledger(f.profileId, campaign)
        assert.deepStrictEqual(rows.map((r) => [r.action, r.state, r.pre_status, r.written_status]), [
          ["pause", "applied", "active", "paused"],
          ["resume", "applied", "paused", "active"],
          ["pause", "applied", "active", "paused"]
        ])
      }))
  })
})
