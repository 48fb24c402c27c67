/**
 * What src/experiments/analysis.ts adds to the statistics core: the holdout split (stable, at its
 * fraction), the switchback schedule (balanced pairs, whole window, seeded by the salt), and the
 * answers' shape (an interval or insufficient_data, never both, checks named).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { daysOf, heldOut, holdoutResults, switchbackResults, switchbackSchedule, unitHash } from "../../src/experiments/analysis.ts"

const ids = (n: number) => Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)

describe("holdout split", () => {
  it("holds out the asked share of a list (within 4 standard errors) and the same customers every time", () => {
    for (const fraction of [0.01, 0.1, 0.25, 0.5]) {
      const list = ids(40_000)
      const held = list.filter((id) => heldOut("salt-a", id, fraction)).length
      const se = Math.sqrt(list.length * fraction * (1 - fraction))
      assert.isBelow(Math.abs(held - list.length * fraction), 4 * se, `fraction ${fraction}: ${held}`)
      assert.deepStrictEqual(list.filter((id) => heldOut("salt-a", id, fraction)).length, held)
    }
  })

  it("a larger fraction keeps everyone a smaller one held out; another salt draws another split", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.double({ min: 0.01, max: 0.25, noNaN: true }), (id, fraction) => {
        if (heldOut("s", id, fraction)) assert.isTrue(heldOut("s", id, fraction * 2))
        const u = unitHash("s", id)
        assert.isTrue(u >= 0 && u < 1)
      }),
      { seed: 32, numRuns: 500 }
    )
    const list = ids(2000)
    const a = list.filter((id) => heldOut("salt-a", id, 0.2))
    const b = list.filter((id) => heldOut("salt-b", id, 0.2))
    assert.isBelow(a.filter((id) => b.includes(id)).length, a.length / 2)
  })
})

describe("switchback schedule", () => {
  it("covers every day of the window once, one on and one off in each pair, the same for the same salt", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 120 }), (salt, length) => {
        const end = new Date(Date.UTC(2026, 11, 1) + (length - 1) * 86_400_000).toISOString().slice(0, 10)
        const schedule = switchbackSchedule(salt, "2026-12-01", end)
        assert.deepStrictEqual(schedule.map((d) => d.date), daysOf("2026-12-01", end))
        for (let i = 0; i + 1 < schedule.length; i += 2) assert.notStrictEqual(schedule[i]?.on, schedule[i + 1]?.on)
        assert.deepStrictEqual(switchbackSchedule(salt, "2026-12-01", end), schedule)
      }),
      { seed: 32, numRuns: 200 }
    )
  })

  it("is randomised: the first day of a pair is on about half the time", () => {
    const schedule = switchbackSchedule("salt-c", "2026-01-01", "2026-12-31")
    const firsts = schedule.filter((_, i) => i % 2 === 0)
    const on = firsts.filter((d) => d.on).length
    assert.isBelow(Math.abs(on - firsts.length / 2), 4 * Math.sqrt(firsts.length / 4))
  })
})

describe("answers", () => {
  it("a holdout without enough converting customers answers insufficient_data and no lift, with the failed check named", () => {
    const list = ids(100)
    const r = holdoutResults({ conversion_key: "purchase", measure: "count" }, 0.2, "s", list, new Map([[list[0] ?? "", { conversions: 1, value: 5 }]]))
    assert.strictEqual(r.absolute_lift, null)
    assert.strictEqual(r.incremental_conversions, null)
    assert.isString(r.insufficient_data?.reason)
    assert.include(r.failed_checks, "too_few_outcomes")
    assert.strictEqual(r.treatment.size + r.control.size, 100)
  })

  it("a switchback shorter than two weeks answers insufficient_data", () => {
    const schedule = switchbackSchedule("s", "2026-12-01", "2026-12-10")
    const r = switchbackResults({ conversion_key: "purchase", measure: "count" }, schedule, { start: "2026-12-01", end: "2026-12-10" }, new Map())
    assert.strictEqual(r.absolute_lift, null)
    assert.deepStrictEqual(r.insufficient_data, { reason: "10 days, fewer than the 14 needed" })
  })
})
