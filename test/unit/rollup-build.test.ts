/**
 * The in-memory rollup builder (decision 0045) on hand-computed cases. The API property tests
 * compare whole reads with direct recomputations; these pin the arithmetic and the counting rules.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  buildRollupRows,
  type ConversionFact,
  type CreditFact,
  fromUnits,
  ROLLUP_DIMENSIONS,
  type TouchFact,
  toUnits
} from "../../src/analytics/rollups/build.ts"

const P = "00000000-0000-0000-0000-000000000001"
const DAY = "2026-06-01"

const touch = (id: string, values: Partial<Record<(typeof ROLLUP_DIMENSIONS)[number], string>>): TouchFact => ({
  id,
  values: ROLLUP_DIMENSIONS.map((name) => values[name] ?? "")
})

const conversion = (id: string, options: Partial<ConversionFact> = {}): ConversionFact => ({
  id,
  profileId: P,
  day: DAY,
  conversionKey: "sale",
  currency: "EUR",
  counted: true,
  cash: true,
  firstPayment: false,
  net: "10.000000",
  ...options
})

describe("rollup-build", () => {
  it("fixed-point units round-trip exactly", () => {
    assert.strictEqual(toUnits("0.3333333333", 10), 3333333333n)
    assert.strictEqual(toUnits("12", 6), 12000000n)
    assert.strictEqual(toUnits("-1.5", 6), -1500000n)
    assert.strictEqual(toUnits(".25", 2), 25n)
    assert.strictEqual(fromUnits(3333333333n, 10), "0.3333333333")
    assert.strictEqual(fromUnits(-1500000n, 6), "-1.500000")
    assert.strictEqual(fromUnits(5n, 6), "0.000005")
    assert.strictEqual(fromUnits(toUnits("123456789012.123456", 6) * 3n, 6), "370370367036.370368")
    assert.throws(() => toUnits("0.1234567", 6))
  })

  it("a conversion credited to two touches with one value counts once there, with both shares", () => {
    const touches = [touch("t1", { channel: "email", country: "ES" }), touch("t2", { channel: "email", country: "FR" })]
    const credits: Array<CreditFact> = [
      { conversionId: "c1", model: "linear", touchId: "t1", share: "0.5000000000" },
      { conversionId: "c1", model: "linear", touchId: "t2", share: "0.5000000000" }
    ]
    const rows = buildRollupRows({ models: ["linear"], conversions: [conversion("c1")], credits, touches, touchTuples: [] })
    const email = rows.creditDays.find((row) => row.dimension === "channel" && row.value === "email")
    assert.deepStrictEqual(
      email && { conversions: email.conversions, credited: email.creditedConversions, revenue: email.creditedRevenue },
      { conversions: 1, credited: "1.0000000000", revenue: "10.0000000000000000" }
    )
    const spain = rows.creditDays.find((row) => row.dimension === "country" && row.value === "ES")
    assert.deepStrictEqual(
      spain && { conversions: spain.conversions, credited: spain.creditedConversions, revenue: spain.creditedRevenue },
      { conversions: 1, credited: "0.5000000000", revenue: "5.0000000000000000" }
    )
    // One row per (dimension, value) seen: 11 dimensions, country has two values.
    assert.strictEqual(rows.creditDays.length, ROLLUP_DIMENSIONS.length + 1)
  })

  it("a refunded conversion adds revenue net of the refund but no counts; an uncredited one is unattributed", () => {
    const touches = [touch("t1", { channel: "paid_search", campaign: "c-1", ad_set: "s-1", ad: "a-1" })]
    const credits: Array<CreditFact> = [{ conversionId: "c1", model: "last_touch", touchId: "t1", share: "1" }]
    const rows = buildRollupRows({
      models: ["last_touch"],
      conversions: [conversion("c1", { counted: false, net: "4.000000" }), conversion("c2", { firstPayment: true })],
      credits,
      touches,
      touchTuples: []
    })
    const [day] = rows.conversionDays
    assert.deepStrictEqual(
      day && {
        conversions: day.conversions,
        first: day.firstPayments,
        revenue: day.revenue,
        attributed: day.attributedConversions,
        credited: day.creditedConversions
      },
      { conversions: 1, first: 1, revenue: "14.000000", attributed: 0, credited: "0.0000000000" }
    )
    // Ad level: the refunded conversion is the ad's (no count), the other the remainder.
    const adLevel = rows.campaignDays.filter((row) => row.level === "ad")
    const ad = adLevel.find((row) => row.platformId === "a-1")
    const remainder = adLevel.find((row) => row.platformId === "")
    assert.deepStrictEqual(ad && [ad.conversions, ad.creditedRevenue, ad.outcomeValue], [0, "4.0000000000000000", "0.000000"])
    assert.deepStrictEqual(remainder && [remainder.conversions, remainder.creditedConversions, remainder.outcomeValue], [
      1,
      "1.0000000000",
      "10.000000"
    ])
  })

  it("touch tuples add up per dimension value", () => {
    const rows = buildRollupRows({
      models: [],
      conversions: [],
      credits: [],
      touches: [],
      touchTuples: [
        { profileId: P, day: DAY, values: touch("x", { channel: "email", device: "mobile" }).values, touches: 3 },
        { profileId: P, day: DAY, values: touch("y", { channel: "direct", device: "mobile" }).values, touches: 2 }
      ]
    })
    const count = (dimension: string, value: string) =>
      rows.touchDays.find((row) => row.dimension === dimension && row.value === value)?.touches
    assert.strictEqual(count("device", "mobile"), 5)
    assert.strictEqual(count("channel", "email"), 3)
    assert.strictEqual(count("country", ""), 5)
  })
})
