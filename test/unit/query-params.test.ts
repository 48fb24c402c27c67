/** The contract's query-parameter schemas (`schema/query.ts`): patterns say exactly what decodes. */
import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { CALENDAR_DATE_PATTERN, DATE_OR_DATE_TIME_PATTERN, isCalendarDate, isIsoDateTime } from "../../schema/dates.ts"
import { integerRangePattern, IntegerParam } from "../../schema/query.ts"

describe("integerRangePattern", () => {
  it("matches exactly the canonical integers min..max", () => {
    for (const min of [0, 1] as const) {
      for (const max of [1, 5, 9, 10, 90, 99, 100, 101, 200, 366, 1000, 1_000_000]) {
        const pattern = new RegExp(integerRangePattern(min, max), "u")
        const top = Math.min(max * 2 + 20, 3000)
        for (let n = 0; n <= top; n++) assert.strictEqual(pattern.test(String(n)), n >= min && n <= max, `${min}..${max}: ${n}`)
        for (const other of ["", "-1", "+1", "01", "1.0", "1e1", " 1", "1 ", "0x1", String(max + 1)]) {
          assert.isFalse(pattern.test(other), `${min}..${max}: ${JSON.stringify(other)}`)
        }
        assert.isTrue(pattern.test(String(max)))
      }
    }
  })
})

describe("IntegerParam", () => {
  it("decodes what its published pattern accepts, to a number, and refuses the rest", () => {
    const limit = Schema.decodeUnknownResult(IntegerParam({ min: 1, max: 200, default: 50, description: "1 to 200" }))
    assert.deepStrictEqual(limit("200"), Result.succeed(200))
    assert.deepStrictEqual(limit("7"), Result.succeed(7))
    for (const refused of ["0", "201", "1.5", "+5", "05", "", "ten"]) assert.isTrue(Result.isFailure(limit(refused)), refused)
  })
})

describe("date patterns", () => {
  it("say exactly what isCalendarDate and isIsoDateTime accept, leap days included", () => {
    const date = new RegExp(CALENDAR_DATE_PATTERN, "u")
    const either = new RegExp(DATE_OR_DATE_TIME_PATTERN, "u")
    const years = [0, 1, 4, 99, 100, 300, 400, 1900, 1996, 2000, 2023, 2024, 2100, 2400, 9996, 9999]
    for (const year of years) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          const text = `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`
          assert.strictEqual(date.test(text), isCalendarDate(text), text)
          assert.strictEqual(either.test(text), isCalendarDate(text), text)
          for (const time of ["T14:20Z", "T23:59:59.123456+14:00", "T00:00:00-05:30"]) {
            assert.strictEqual(either.test(text + time), isIsoDateTime(text + time), text + time)
          }
        }
      }
    }
    for (const other of ["2026-1-01", "26-01-01", "2026-01-01T24:00Z", "2026-01-01T10:00", "2026-01-01T10:00:00.1234567Z", "2026-01-01 10:00Z"]) {
      assert.isFalse(either.test(other), other)
      assert.isFalse(isCalendarDate(other) || isIsoDateTime(other), other)
    }
  })
})
