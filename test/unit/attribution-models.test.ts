import { assert, describe, it } from "@effect/vitest"
import {
  apportionWeights,
  attributionPath,
  buildPathStats,
  CHANNELS,
  creditAll,
  creditModel,
  DAY_MS,
  formatShare,
  meetsSvcThreshold,
  MODELS,
  removalEffects,
  shareUnits,
  SVC_MIN_CONVERTING_PATHS,
  SVC_MIN_PATHS,
  TOUCH_KINDS,
  UNITS
} from "../../src/attribution/models/index.ts"
import type {
  ChannelPath,
  ConversionInput,
  CreditModel,
  ModelResult,
  PathStats,
  TouchInput,
  TouchKind
} from "../../src/attribution/models/index.ts"

// ---------------------------------------------------------------------------------------------
// A small seeded generator (mulberry32) so that every run checks the same journeys.

const rng = (seed: number) => {
  let a = seed >>> 0
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1))
  const pick = <A>(values: ReadonlyArray<A>): A => {
    const value = values[int(0, values.length - 1)]
    if (value === undefined) throw new Error("empty pick")
    return value
  }
  const hex = (length: number): string => {
    let out = ""
    for (let i = 0; i < length; i++) out += "0123456789abcdef"[int(0, 15)]
    return out
  }
  const uuid = (): string => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`
  const shuffle = <A>(values: ReadonlyArray<A>): Array<A> => {
    const out = [...values]
    for (let i = out.length - 1; i > 0; i--) {
      const j = int(0, i)
      const tmp = out[i]
      const other = out[j]
      if (tmp === undefined || other === undefined) continue
      out[i] = other
      out[j] = tmp
    }
    return out
  }
  return { next, int, pick, uuid, shuffle }
}
type Rng = ReturnType<typeof rng>

const T0 = Date.UTC(2026, 9, 1, 12, 0, 0)

interface Journey {
  readonly conversion: ConversionInput
  readonly touches: ReadonlyArray<TouchInput>
}

/** A random journey: 0..14 touches of every kind and channel, some after the conversion, some before the window, with time ties and now and then a repeated id. */
const randomJourney = (r: Rng): Journey => {
  const conversionAt = T0 + r.int(0, 365) * DAY_MS + r.int(0, DAY_MS - 1)
  const lookback = r.pick([1, 7, 30, 30, 90, 365, r.int(1, 365)])
  const n = r.int(0, 14)
  const touches: Array<TouchInput> = []
  for (let i = 0; i < n; i++) {
    const previous = touches[r.int(0, Math.max(0, touches.length - 1))]
    const roll = r.next()
    const occurredAt = previous !== undefined && roll < 0.15
      ? previous.occurred_at // a tie on time
      : roll < 0.2
      ? conversionAt // exactly at the conversion
      : roll < 0.25
      ? conversionAt - lookback * DAY_MS // exactly at the window start
      : conversionAt - r.int(-3 * DAY_MS, 400 * DAY_MS)
    const kind: TouchKind = r.pick(TOUCH_KINDS)
    const channel = r.next() < 0.3 ? "direct" : r.pick(CHANNELS)
    const id = previous !== undefined && r.next() < 0.03 ? previous.id : r.uuid()
    touches.push({ id, occurred_at: occurredAt, kind, channel })
  }
  return { conversion: { occurred_at: conversionAt, lookback_window_days: lookback }, touches }
}

/** The path rule, written independently of the implementation. */
const expectedPath = (journey: Journey): Array<TouchInput> => {
  const end = journey.conversion.occurred_at
  const start = end - journey.conversion.lookback_window_days * DAY_MS
  const eligible = journey.touches
    .filter((t) => t.kind !== "outcome" && t.occurred_at >= start && t.occurred_at <= end)
    .sort((a, b) =>
      a.occurred_at !== b.occurred_at
        ? a.occurred_at - b.occurred_at
        : a.id !== b.id
        ? (a.id < b.id ? -1 : 1)
        : a.channel !== b.channel
        ? (a.channel < b.channel ? -1 : 1)
        : a.kind < b.kind
        ? -1
        : a.kind > b.kind
        ? 1
        : 0
    )
  const seen = new Set<string>()
  return eligible.filter((t) => (seen.has(t.id) ? false : (seen.add(t.id), true)))
}

const sumUnits = (result: ModelResult): bigint => result.rows.reduce((sum, row) => sum + shareUnits(row.credit_share), 0n)
const units = (result: ModelResult): Array<number> => result.rows.map((row) => Number(shareUnits(row.credit_share)))
const shares = (result: ModelResult): Array<string> => result.rows.map((row) => row.credit_share)
const byModel = (results: ReadonlyArray<ModelResult>, model: CreditModel): ModelResult => {
  const result = results.find((r) => r.model === model)
  if (result === undefined) throw new Error(`no ${model} result`)
  return result
}

/** Repeats `channels` paths `count` times. */
const repeat = (count: number, channels: ReadonlyArray<string>, converted: boolean): Array<ChannelPath> =>
  Array.from({ length: count }, () => ({ channels, converted }))

/** Statistics over the spec's channels, above the threshold; `referral` never appears (so it carries no effect). */
const richStats = (r: Rng): { paths: Array<ChannelPath>; stats: PathStats } => {
  const seen = CHANNELS.filter((c) => c !== "referral")
  const paths: Array<ChannelPath> = []
  for (let i = 0; i < 1500; i++) {
    const length = r.int(1, 6)
    const channels = Array.from({ length }, () => r.pick(seen))
    const converted = r.next() < (channels.includes("paid_search") ? 0.5 : 0.2)
    paths.push({ channels, converted })
  }
  return { paths, stats: buildPathStats(paths) }
}

const SHARE_PATTERN = /^(0\.\d{10}|1\.0000000000)$/

const touch = (id: string, daysBefore: number, channel: string, kind: TouchKind = "web_touch"): TouchInput => ({
  id,
  occurred_at: T0 - daysBefore * DAY_MS,
  kind,
  channel
})
const conversion: ConversionInput = { occurred_at: T0, lookback_window_days: 30 }

// ---------------------------------------------------------------------------------------------

describe("credit models: properties over random journeys", () => {
  const r = rng(20261015)
  const { stats: rich } = richStats(r)
  const thin = buildPathStats(repeat(50, ["email"], true))
  const journeys = Array.from({ length: 600 }, () => randomJourney(r))

  it("the path is the in-window, non-outcome touches, oldest first, ties by id, each id once", () => {
    let nonEmpty = 0
    let excluded = 0
    for (const journey of journeys) {
      const path = attributionPath(journey.conversion, journey.touches)
      const expected = expectedPath(journey)
      assert.deepStrictEqual(path.touches.map((t) => t.id), expected.map((t) => t.id))
      if (expected.length > 0) nonEmpty++
      excluded += journey.touches.length - expected.length
    }
    // The generator must exercise both sides of the rule.
    assert.isAbove(nonEmpty, 300)
    assert.isAbove(excluded, 1000)
  })

  it("every model: one row per path touch, shares exact and summing to exactly 1, window respected", () => {
    let unattributed = 0
    for (const journey of journeys) {
      const expected = expectedPath(journey)
      for (const stats of [undefined, thin, rich]) {
        const results = creditAll(journey.conversion, journey.touches, stats)
        assert.deepStrictEqual(results.map((x) => x.model), [...MODELS])
        for (const result of results) {
          assert.deepStrictEqual(result.rows.map((row) => row.touch_id), expected.map((t) => t.id), result.model)
          assert.deepStrictEqual(result.rows.map((row) => row.position), expected.map((_, i) => i + 1))
          if (expected.length === 0) {
            assert.strictEqual(result.rows.length, 0)
            continue
          }
          assert.strictEqual(sumUnits(result), BigInt(UNITS), `${result.model} sums to 1`)
          for (const row of result.rows) {
            assert.match(row.credit_share, SHARE_PATTERN)
            const u = shareUnits(row.credit_share)
            assert.isTrue(u >= 0n && u <= BigInt(UNITS))
            assert.strictEqual(row.is_credited, u > 0n)
            assert.strictEqual(row.in_window, true)
          }
        }
        if (expected.length === 0) unattributed++
      }
    }
    assert.isAbove(unattributed, 10)
  })

  it("single-touch models credit exactly one touch: the last, the first, the last non-direct", () => {
    let allDirect = 0
    for (const journey of journeys) {
      const expected = expectedPath(journey)
      if (expected.length === 0) continue
      const results = creditAll(journey.conversion, journey.touches)
      for (const model of ["last_touch", "first_touch", "last_non_direct"] as const) {
        const credited = byModel(results, model).rows.filter((row) => row.is_credited)
        assert.strictEqual(credited.length, 1, model)
        assert.strictEqual(credited[0]?.credit_share, "1.0000000000")
      }
      assert.strictEqual(byModel(results, "last_touch").rows.find((x) => x.is_credited)?.touch_id, expected.at(-1)?.id)
      assert.strictEqual(byModel(results, "first_touch").rows.find((x) => x.is_credited)?.touch_id, expected[0]?.id)
      const nonDirect = expected.filter((t) => t.channel !== "direct").at(-1)
      const lnd = byModel(results, "last_non_direct")
      if (nonDirect === undefined) {
        allDirect++
        assert.strictEqual(lnd.rows.find((x) => x.is_credited)?.touch_id, expected.at(-1)?.id)
        assert.strictEqual(lnd.fallback, "last_touch")
        assert.strictEqual(lnd.fallback_reason, "all_direct")
      } else {
        assert.strictEqual(lnd.rows.find((x) => x.is_credited)?.touch_id, nonDirect.id)
        assert.strictEqual(lnd.fallback, null)
      }
    }
    assert.isAbove(allDirect, 5)
  })

  it("linear is even to one unit; time_decay never gives an earlier touch more (beyond one unit of rounding)", () => {
    for (const journey of journeys) {
      const results = creditAll(journey.conversion, journey.touches)
      const lin = units(byModel(results, "linear"))
      if (lin.length === 0) continue
      assert.isAtMost(Math.max(...lin) - Math.min(...lin), 1)
      assert.isTrue(lin.every((u) => u > 0))
      const decay = units(byModel(results, "time_decay"))
      for (let i = 1; i < decay.length; i++) assert.isAtMost(decay[i - 1] ?? 0, (decay[i] ?? 0) + 1)
    }
  })

  it("svc_model: falls back without enough data and says so; otherwise credits by channel", () => {
    let served = 0
    let noSignal = 0
    for (const journey of journeys) {
      const path = expectedPath(journey)
      for (const stats of [undefined, thin]) {
        const results = creditAll(journey.conversion, journey.touches, stats)
        const svc = byModel(results, "svc_model")
        assert.strictEqual(svc.fallback, "time_decay")
        assert.strictEqual(svc.fallback_reason, "insufficient_data")
        assert.deepStrictEqual(svc.rows, byModel(results, "time_decay").rows)
      }
      if (path.length === 0) continue
      const results = creditAll(journey.conversion, journey.touches, rich)
      const svc = byModel(results, "svc_model")
      if (path.every((t) => t.channel === "referral")) {
        noSignal++
        assert.strictEqual(svc.fallback_reason, "no_channel_signal")
        assert.deepStrictEqual(svc.rows, byModel(results, "time_decay").rows)
        continue
      }
      served++
      assert.strictEqual(svc.fallback, null)
      assert.strictEqual(svc.fallback_reason, null)
      // Touches of one channel share alike (to one unit); an unseen channel gets nothing.
      const perChannel = new Map<string, Array<number>>()
      svc.rows.forEach((row, i) => {
        const channel = path[i]?.channel ?? ""
        perChannel.set(channel, [...(perChannel.get(channel) ?? []), Number(shareUnits(row.credit_share))])
        if (channel === "referral") assert.strictEqual(row.is_credited, false)
      })
      for (const list of perChannel.values()) assert.isAtMost(Math.max(...list) - Math.min(...list), 1)
    }
    assert.isAbove(served, 300)
    assert.isAbove(noSignal, 0)
  })

  it("deterministic: the same result whatever the order of the touches", () => {
    for (const journey of journeys) {
      for (const stats of [undefined, rich]) {
        const reference = creditAll(journey.conversion, journey.touches, stats)
        assert.deepStrictEqual(creditAll(journey.conversion, [...journey.touches].reverse(), stats), reference)
        assert.deepStrictEqual(creditAll(journey.conversion, r.shuffle(journey.touches), stats), reference)
      }
    }
  })

  it("deterministic: path statistics and removal effects do not depend on the order of the paths", () => {
    const r2 = rng(7)
    const { paths, stats } = richStats(r2)
    const shuffled = buildPathStats(r2.shuffle(paths))
    assert.deepStrictEqual(shuffled, stats)
    const a = removalEffects(stats)
    const b = removalEffects(shuffled)
    assert.deepStrictEqual([...a.normalized], [...b.normalized])
    const total = [...a.normalized.values()].reduce((s, v) => s + v, 0)
    assert.closeTo(total, 1, 1e-12)
    assert.strictEqual(a.normalized.get("referral"), undefined)
  })
})

// ---------------------------------------------------------------------------------------------

describe("path rule on a hand-built journey", () => {
  it("window bounds are inclusive, later touches, older touches and outcome touches are left out", () => {
    const touches: Array<TouchInput> = [
      touch("t-before-window", 30.0001, "email"),
      touch("t-window-start", 30, "paid_search"),
      touch("t-outcome", 5, "direct", "outcome"),
      touch("t-mid", 5, "organic_search", "organic_interaction"),
      touch("t-at-conversion", 0, "direct"),
      touch("t-after", -0.0001, "paid_social")
    ]
    const path = attributionPath(conversion, touches)
    assert.deepStrictEqual(path.touches.map((t) => t.id), ["t-window-start", "t-mid", "t-at-conversion"])
    assert.strictEqual(path.window_start, T0 - 30 * DAY_MS)
  })

  it("ties on time go by id; a repeated id is kept once", () => {
    const touches = [touch("b", 2, "email"), touch("a", 2, "referral"), touch("c", 1, "email"), touch("a", 2, "referral")]
    const results = creditAll(conversion, touches)
    assert.deepStrictEqual(byModel(results, "linear").rows.map((x) => [x.touch_id, x.position]), [["a", 1], ["b", 2], [
      "c",
      3
    ]])
    assert.strictEqual(byModel(results, "first_touch").rows.find((x) => x.is_credited)?.touch_id, "a")
  })

  it("no touch in the window: every model has no rows (unattributed)", () => {
    const touches = [touch("old", 31, "email"), touch("outcome", 1, "direct", "outcome"), touch("later", -1, "email")]
    const results = creditAll(conversion, touches)
    assert.deepStrictEqual(results.map((x) => [x.model, x.rows.length]), MODELS.map((m) => [m, 0]))
    assert.strictEqual(byModel(results, "svc_model").fallback_reason, "insufficient_data")
  })

  it("invalid input is a RangeError, not a silent credit", () => {
    assert.throws(() => attributionPath({ occurred_at: Number.NaN, lookback_window_days: 30 }, []), RangeError)
    assert.throws(() => attributionPath({ occurred_at: T0, lookback_window_days: 0 }, []), RangeError)
    assert.throws(() => attributionPath(conversion, [{ ...touch("x", 1, "email"), occurred_at: Number.NaN }]), RangeError)
  })
})

describe("hand-computed journeys per model", () => {
  const journey = [touch("t1", 10, "paid_search"), touch("t2", 3, "email"), touch("t3", 1, "direct")]

  it("last_touch", () => {
    const result = creditModel("last_touch", conversion, journey)
    assert.deepStrictEqual(shares(result), ["0.0000000000", "0.0000000000", "1.0000000000"])
    assert.deepStrictEqual(result.rows.map((x) => [x.is_credited, x.in_window]), [[false, true], [false, true], [true, true]])
  })

  it("first_touch", () => {
    assert.deepStrictEqual(shares(creditModel("first_touch", conversion, journey)), [
      "1.0000000000",
      "0.0000000000",
      "0.0000000000"
    ])
  })

  it("last_non_direct skips the direct touch; all direct falls back to the last touch and says so", () => {
    const result = creditModel("last_non_direct", conversion, journey)
    assert.deepStrictEqual(shares(result), ["0.0000000000", "1.0000000000", "0.0000000000"])
    assert.strictEqual(result.fallback, null)
    const allDirect = creditModel("last_non_direct", conversion, [touch("d1", 4, "direct"), touch("d2", 2, "direct")])
    assert.deepStrictEqual(shares(allDirect), ["0.0000000000", "1.0000000000"])
    assert.strictEqual(allDirect.fallback, "last_touch")
    assert.strictEqual(allDirect.fallback_reason, "all_direct")
  })

  it("linear: thirds put the spare unit on the last touch; sevenths spread four spare units over the last four", () => {
    assert.deepStrictEqual(shares(creditModel("linear", conversion, journey)), [
      "0.3333333333",
      "0.3333333333",
      "0.3333333334"
    ])
    const four = [0, 1, 2, 3].map((i) => touch(`q${i}`, 4 - i, "email"))
    assert.deepStrictEqual(shares(creditModel("linear", conversion, four)), Array(4).fill("0.2500000000"))
    const seven = [0, 1, 2, 3, 4, 5, 6].map((i) => touch(`s${i}`, 7 - i, "email"))
    assert.deepStrictEqual(shares(creditModel("linear", conversion, seven)), [
      "0.1428571428",
      "0.1428571428",
      "0.1428571428",
      "0.1428571429",
      "0.1428571429",
      "0.1428571429",
      "0.1428571429"
    ])
  })

  it("time_decay, touches 10, 3 and 1 days before: weights 2^(-10/7), 2^(-3/7), 2^(-1/7)", () => {
    // 2^(-10/7) = 0.371498572284237…, 2^(-3/7) = 0.742997144568474…, 2^(-1/7) = 0.905723664263907…
    // sum 2.020219381116618…; exact shares 0.18389021299206…, 0.36778042598413…, 0.44832936102379…
    // floors 1838902129 + 3677804259 + 4483293610 = 9999999998 units; the two spare units go to
    // the largest dropped fractions (.92 and .84), not to the .23.
    const result = creditModel("time_decay", conversion, journey)
    assert.deepStrictEqual(shares(result), ["0.1838902130", "0.3677804260", "0.4483293610"])
    assert.deepStrictEqual(result.rows.map((x) => x.is_credited), [true, true, true])
  })

  it("time_decay, touches 14, 7 and 0 days before: shares 1/7, 2/7, 4/7", () => {
    // Weights 1/4, 1/2, 1: exact 1428571428.571…, 2857142857.142…, 5714285714.285… units;
    // one spare unit, to the largest fraction (.571, the oldest touch).
    const touches = [touch("a", 14, "email"), touch("b", 7, "email"), touch("c", 0, "email")]
    assert.deepStrictEqual(shares(creditModel("time_decay", conversion, touches)), [
      "0.1428571429",
      "0.2857142857",
      "0.5714285714"
    ])
  })

  it("a single touch takes the whole credit under every model", () => {
    const results = creditAll(conversion, [touch("only", 12, "referral")])
    for (const result of results) assert.deepStrictEqual(shares(result), ["1.0000000000"], result.model)
  })
})

describe("svc_model on hand-built path sets", () => {
  // Paths: [paid_social, email] converts, [paid_social] does not, [email] converts.
  // From paid_social: 1 move to email, 1 to null; from email: 2 to conversion.
  // x(email) = 1, x(paid_social) = 1/2; P = (2 × 1/2 + 1 × 1) / 3 = 2/3.
  // Without paid_social: P = (0 + 1) / 3 = 1/3, effect 1 - (1/3)/(2/3) = 1/2.
  // Without email: x(paid_social) = 0, P = 0, effect 1. Normalized: 1/3 and 2/3.
  const tiny: Array<ChannelPath> = [
    { channels: ["paid_social", "email"], converted: true },
    { channels: ["paid_social"], converted: false },
    { channels: ["email"], converted: true }
  ]

  it("buildPathStats counts the transitions (repeats collapsed, empty paths skipped)", () => {
    const stats = buildPathStats([...tiny, { channels: ["email", "email"], converted: false }, { channels: [], converted: true }])
    assert.deepStrictEqual(stats, {
      converting_paths: 2,
      total_paths: 4,
      channels: ["email", "paid_social"],
      start: [2, 2],
      transitions: [[0, 0], [1, 0]],
      conversions: [2, 0],
      nulls: [1, 1]
    })
  })

  it("removal effects by hand", () => {
    const effects = removalEffects(buildPathStats(tiny))
    assert.closeTo(effects.conversion_probability, 2 / 3, 1e-15)
    assert.closeTo(effects.raw.get("paid_social") ?? -1, 1 / 2, 1e-15)
    assert.closeTo(effects.raw.get("email") ?? -1, 1, 1e-15)
    assert.closeTo(effects.normalized.get("paid_social") ?? -1, 1 / 3, 1e-15)
    assert.closeTo(effects.normalized.get("email") ?? -1, 2 / 3, 1e-15)
  })

  it("removal effects with a cycle", () => {
    // [paid_search, email, paid_search] converts, [email] does not. From paid_search: 1 to email,
    // 1 to conversion; from email: 1 to paid_search, 1 to null. x(ps) = (x(e) + 1)/2, x(e) = x(ps)/2,
    // so x(ps) = 2/3, x(e) = 1/3, P = (2/3 + 1/3)/2 = 1/2. Without paid_search: P = 0, effect 1.
    // Without email: x(ps) = 1/2, P = 1/4, effect 1/2. Normalized: 2/3 and 1/3.
    const effects = removalEffects(
      buildPathStats([
        { channels: ["paid_search", "email", "paid_search"], converted: true },
        { channels: ["email"], converted: false }
      ])
    )
    assert.closeTo(effects.conversion_probability, 1 / 2, 1e-15)
    assert.closeTo(effects.normalized.get("paid_search") ?? -1, 2 / 3, 1e-15)
    assert.closeTo(effects.normalized.get("email") ?? -1, 1 / 3, 1e-15)
  })

  it("nothing converts: every effect is zero", () => {
    const effects = removalEffects(buildPathStats(repeat(3, ["email", "referral"], false)))
    assert.strictEqual(effects.conversion_probability, 0)
    assert.deepStrictEqual([...effects.normalized.values()], [0, 0])
  })

  // The same path set, 334 times over: 668 converting of 1002 paths, above the threshold, same effects.
  const scaled = buildPathStats(tiny.flatMap((p) => repeat(334, p.channels, p.converted)))

  it("credit per touch: the channel's effect split over its touches, normalized over the path", () => {
    assert.isTrue(meetsSvcThreshold(scaled))
    const two = creditModel("svc_model", conversion, [touch("ps", 5, "paid_social"), touch("em", 1, "email")], scaled)
    assert.strictEqual(two.fallback, null)
    // 1/3 and 2/3: 3333333333.33… and 6666666666.66…; the spare unit to the larger fraction.
    assert.deepStrictEqual(shares(two), ["0.3333333333", "0.6666666667"])
    // email twice: 2/3 split in two, so three equal thirds; the spare unit to the last position.
    const three = creditModel(
      "svc_model",
      conversion,
      [touch("e1", 6, "email"), touch("ps", 5, "paid_social"), touch("e2", 1, "email")],
      scaled
    )
    assert.deepStrictEqual(shares(three), ["0.3333333333", "0.3333333333", "0.3333333334"])
    // A channel the statistics never saw is a zero-weight position: on the path, not credited.
    const unseen = creditModel("svc_model", conversion, [touch("r", 3, "referral"), touch("em", 1, "email")], scaled)
    assert.deepStrictEqual(unseen.rows.map((x) => [x.credit_share, x.is_credited, x.in_window]), [
      ["0.0000000000", false, true],
      ["1.0000000000", true, true]
    ])
    // Only unseen channels: no signal, time_decay, and the result says so.
    const none = creditModel("svc_model", conversion, [touch("r1", 7, "referral"), touch("r2", 0, "referral")], scaled)
    assert.strictEqual(none.fallback, "time_decay")
    assert.strictEqual(none.fallback_reason, "no_channel_signal")
    assert.deepStrictEqual(shares(none), ["0.3333333333", "0.6666666667"])
  })

  it("minimum-data threshold: 200 converting paths and 1000 paths overall", () => {
    assert.strictEqual(SVC_MIN_CONVERTING_PATHS, 200)
    assert.strictEqual(SVC_MIN_PATHS, 1000)
    // [paid_social, email] converting c times, [paid_social] not converting m times. With 200 and 800:
    // x(email) = 1, x(ps) = 200/1000, P = 0.2; removing either channel leaves P = 0: effects 1 and 1.
    const stats = (c: number, m: number) =>
      buildPathStats([...repeat(c, ["paid_social", "email"], true), ...repeat(m, ["paid_social"], false)])
    const journey2 = [touch("ps", 14, "paid_social"), touch("em", 0, "email")]
    const at = stats(200, 800)
    assert.deepStrictEqual([at.converting_paths, at.total_paths], [200, 1000])
    const served = creditModel("svc_model", conversion, journey2, at)
    assert.deepStrictEqual([served.fallback, served.fallback_reason], [null, null])
    assert.deepStrictEqual(shares(served), ["0.5000000000", "0.5000000000"])
    for (const [c, m] of [[199, 801], [200, 799]] as const) {
      const below = creditModel("svc_model", conversion, journey2, stats(c, m))
      assert.strictEqual(below.fallback, "time_decay", `${c}/${c + m}`)
      assert.strictEqual(below.fallback_reason, "insufficient_data")
      // time_decay over 14 days and 0 days: weights 1/4 and 1, shares 1/5 and 4/5.
      assert.deepStrictEqual(shares(below), ["0.2000000000", "0.8000000000"])
    }
    const none = creditModel("svc_model", conversion, journey2)
    assert.deepStrictEqual([none.fallback, none.fallback_reason, shares(none)], [
      "time_decay",
      "insufficient_data",
      ["0.2000000000", "0.8000000000"]
    ])
  })
})

describe("exact shares", () => {
  it("format and parse agree", () => {
    for (const u of [0, 1, 9, 1_000_000_000, 3_333_333_334, UNITS - 1, UNITS]) {
      assert.strictEqual(shareUnits(formatShare(u)), BigInt(u))
    }
    assert.strictEqual(formatShare(1), "0.0000000001")
    assert.strictEqual(formatShare(UNITS), "1.0000000000")
  })

  it("weights: no positive weight is no answer; a zero weight never gets a spare unit", () => {
    assert.strictEqual(apportionWeights([0, 0]), null)
    assert.strictEqual(apportionWeights([]), null)
    assert.deepStrictEqual(apportionWeights([0, 1, 1, 1, 0]), [0, 3333333333, 3333333333, 3333333334, 0])
    const r = rng(99)
    for (let k = 0; k < 2000; k++) {
      const weights = Array.from({ length: r.int(1, 30) }, () => (r.next() < 0.3 ? 0 : r.next() * 10 ** r.int(-20, 5)))
      const result = apportionWeights(weights)
      if (weights.every((w) => w === 0)) {
        assert.strictEqual(result, null)
        continue
      }
      assert.isNotNull(result)
      const list = result ?? []
      assert.strictEqual(list.reduce((s, u) => s + u, 0), UNITS)
      const max = Math.max(...weights)
      const total = weights.reduce((s, w) => s + w / max, 0)
      weights.forEach((w, i) => {
        if (w === 0) assert.strictEqual(list[i], 0)
        // Within one unit of the exact proportional share.
        assert.isAtMost(Math.abs((list[i] ?? 0) - (w / max / total) * UNITS), 1 + 1e-3)
      })
    }
  })
})
