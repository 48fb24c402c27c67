/**
 * The pure parts of reports (decisions 0085, 0086): CSV quoting and formula defusing, the PDF's
 * structure, relative ranges and scheduled slots in a zone with DST.
 */
import { assert, describe, it } from "@effect/vitest"
import { toCsv } from "../../src/analytics/reports/csv.ts"
import { pdfString, toPdf } from "../../src/analytics/reports/pdf.ts"
import { nextSlot, resolveRange, todayIn, zonedInstant } from "../../src/analytics/reports/schedule.ts"

describe("reports rendering", () => {
  it("CSV: CRLF records, quotes doubled, commas and line breaks quoted, formula-like text defused, numbers kept", () => {
    const csv = toCsv([{
      section: "breakdown:channel",
      title: "x",
      columns: ["channel", "touches", "credited_revenue"],
      rows: [["=SUM(A1)", "3", "-12.5"], ["a,\"b\"\nc", "0", ""], ["@home", "1", "+1"], ["-x", "2", "7"]]
    }])
    assert.strictEqual(
      csv,
      "section,key,metric,value\r\n" +
        "breakdown:channel,'=SUM(A1),touches,3\r\nbreakdown:channel,'=SUM(A1),credited_revenue,-12.5\r\n" +
        "breakdown:channel,\"a,\"\"b\"\"\nc\",touches,0\r\nbreakdown:channel,\"a,\"\"b\"\"\nc\",credited_revenue,\r\n" +
        "breakdown:channel,'@home,touches,1\r\nbreakdown:channel,'@home,credited_revenue,'+1\r\n" +
        "breakdown:channel,'-x,touches,2\r\nbreakdown:channel,'-x,credited_revenue,7\r\n"
    )
  })

  it("PDF: escapes, exact xref offsets, one page per 40-odd rows", () => {
    assert.strictEqual(pdfString("a(b)\\c€"), "(a\\(b\\)\\\\c?)")
    const rows = Array.from({ length: 100 }, (_, i) => [`2026-01-${String(i).padStart(2, "0")}`, String(i)])
    const text = Buffer.from(toPdf("Title", "sub", [{ section: "timeseries", title: "Per day", columns: ["date", "n"], rows }])).toString("latin1")
    const startxref = Number(/startxref\n(\d+)\n/.exec(text)?.[1])
    assert.strictEqual(text.slice(startxref, startxref + 5), "xref\n")
    const lines = text.slice(startxref).split("\n")
    const count = Number(lines[1]?.split(" ")[1])
    for (let id = 1; id < count; id++) {
      const offset = Number(lines[2 + id]?.slice(0, 10))
      assert.isTrue(text.startsWith(`${id} 0 obj\n`, offset), `object ${id}`)
    }
    const pages = Number(/\/Type \/Pages \/Kids \[[^\]]*\] \/Count (\d+)/.exec(text)?.[1])
    assert.isAbove(pages, 1)
    assert.strictEqual(count, 5 + 2 * pages)
  })

  it("ranges resolve from the profile's today", () => {
    assert.deepStrictEqual(resolveRange("last_7_days", "2026-03-10"), { start: "2026-03-04", end: "2026-03-10" })
    assert.deepStrictEqual(resolveRange("month_to_date", "2026-03-10"), { start: "2026-03-01", end: "2026-03-10" })
    assert.deepStrictEqual(resolveRange("last_month", "2026-03-10"), { start: "2026-02-01", end: "2026-02-28" })
    assert.deepStrictEqual(resolveRange("yesterday", "2026-03-01"), { start: "2026-02-28", end: "2026-02-28" })
    assert.strictEqual(todayIn("Asia/Tokyo", new Date("2026-03-10T20:00:00Z")), "2026-03-11")
  })

  it("slots are at the hour of the zone, across a DST change", () => {
    const zone = "America/New_York"
    // 2026-03-08 is the spring-forward day in New York: 9:00 is UTC-4 after it, UTC-5 before.
    assert.strictEqual(zonedInstant(zone, "2026-03-07", 9).toISOString(), "2026-03-07T14:00:00.000Z")
    assert.strictEqual(zonedInstant(zone, "2026-03-09", 9).toISOString(), "2026-03-09T13:00:00.000Z")
    const daily = { frequency: "daily", hour: 9, weekday: null, day_of_month: null } as const
    assert.strictEqual(nextSlot(daily, zone, new Date("2026-03-07T14:00:00Z")).toISOString(), "2026-03-08T13:00:00.000Z")
    const weekly = { frequency: "weekly", hour: 7, weekday: "monday", day_of_month: null } as const
    assert.strictEqual(nextSlot(weekly, "UTC", new Date("2026-03-10T00:00:00Z")).toISOString(), "2026-03-16T07:00:00.000Z")
    const monthly = { frequency: "monthly", hour: 0, weekday: null, day_of_month: 28 } as const
    assert.strictEqual(nextSlot(monthly, "Europe/Madrid", new Date("2026-02-28T00:00:00Z")).toISOString(), "2026-03-27T23:00:00.000Z")
  })
})
