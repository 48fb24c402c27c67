/**
 * The rollup rows of a set of (profile, day) pairs, computed from the raw facts in memory
 * (decision 0045). Pure: `rollups.ts` reads the facts and writes what this returns.
 *
 * Credit-day and touch-day rows have one slice per (dimension, value); campaign-day rows one per
 * (level, platform id), '' being the remainder. Touch filters are applied by reads (`AnalyticsFragments`, src/analytics/sql/fragments.ts). Each touch's slices are interned once, a
 * conversion's credits are folded per slice in a sparse sum (each slice once per conversion:
 * that is the count distinct), and the accumulators are hash maps: linear in the credit rows,
 * with no sort. (The SQL this replaced let PostgreSQL sort about 40 fanned-out rows per credit
 * row for `count(DISTINCT conversion)`.)
 *
 * Amounts are exact: shares are integers in units of 1e-10 (`numeric(12,10)`), money in units of
 * 1e-6 (`numeric(20,6)`), products in units of 1e-16, as PostgreSQL's numeric would give them.
 */

/** Dimensions in rollup order; the first four are also touch filters. The UTM tags are last (decision 0051). */
export const ROLLUP_DIMENSIONS = [
  "channel", "campaign", "ad_set", "ad", "referrer", "page", "keyword", "country", "device", "browser", "os",
  "utm_campaign", "utm_source", "utm_medium"
] as const
const LEVELS = ["campaign", "ad_set", "ad"] as const
/** Index in ROLLUP_DIMENSIONS of each campaign level's id. */
const LEVEL_DIMENSION = [1, 2, 3] as const

export interface ConversionFact {
  readonly id: string
  readonly profileId: string
  readonly day: string
  readonly conversionKey: string
  readonly currency: string
  /** Not refunded: counted in conversion counts. */
  readonly counted: boolean
  readonly cash: boolean
  readonly firstPayment: boolean
  /** Net cash value (`numeric(20,6)` text); "0" when not cash. */
  readonly net: string
}

export interface CreditFact {
  readonly conversionId: string
  readonly model: string
  readonly touchId: string
  /** `numeric(12,10)` text, > 0 (credited rows only). */
  readonly share: string
}

/** A touch's value per ROLLUP_DIMENSIONS entry ('' = none). */
export interface TouchFact {
  readonly id: string
  readonly values: ReadonlyArray<string>
}

/** A day's touches that agree on every dimension, counted together. */
export interface TouchTuple {
  readonly profileId: string
  readonly day: string
  readonly values: ReadonlyArray<string>
  readonly touches: number
}

export interface ConversionDayRow {
  readonly profileId: string
  readonly model: string
  readonly day: string
  readonly conversionKey: string
  readonly currency: string
  readonly conversions: number
  readonly cashPayments: number
  readonly firstPayments: number
  readonly revenue: string
  readonly attributedConversions: number
  readonly creditedConversions: string
  readonly creditedRevenue: string
}

/** What credit-day and campaign-day rows measure. */
export interface SliceMetrics {
  readonly profileId: string
  readonly model: string
  readonly day: string
  readonly conversionKey: string
  readonly currency: string
  readonly conversions: number
  readonly cashPayments: number
  readonly firstPayments: number
  readonly creditedConversions: string
  readonly creditedRevenue: string
  /** Counted cash value of the conversions the row counts (campaign rows). */
  readonly outcomeValue: string
}

export interface CreditDayRow extends SliceMetrics {
  readonly dimension: string
  readonly value: string
}

export interface CampaignDayRow extends SliceMetrics {
  readonly level: string
  readonly platformId: string
}

export interface TouchDayRow {
  readonly profileId: string
  readonly day: string
  readonly dimension: string
  readonly value: string
  readonly touches: number
}

export interface RollupRows {
  readonly conversionDays: ReadonlyArray<ConversionDayRow>
  readonly creditDays: ReadonlyArray<CreditDayRow>
  readonly campaignDays: ReadonlyArray<CampaignDayRow>
  readonly touchDays: ReadonlyArray<TouchDayRow>
}

const SHARE_SCALE = 10
const MONEY_SCALE = 6
const ONE_SHARE = 10_000_000_000
/** Share sums stay exact as numbers below this; larger sums move into a bigint. */
const SAFE_SUM = 2 ** 52

/** A fixed-point decimal text as an integer count of 10^-scale units. */
export const toUnits = (text: string, scale: number): bigint => {
  const negative = text.startsWith("-")
  const digits = negative ? text.slice(1) : text
  const dot = digits.indexOf(".")
  const whole = dot < 0 ? digits : digits.slice(0, dot)
  const fraction = dot < 0 ? "" : digits.slice(dot + 1)
  if (fraction.length > scale) throw new RangeError(`${text} has more than ${scale} decimals`)
  const units = BigInt((whole === "" ? "0" : whole) + fraction.padEnd(scale, "0"))
  return negative ? -units : units
}

/** An integer count of 10^-scale units as decimal text. */
export const fromUnits = (units: bigint, scale: number): string => {
  const negative = units < 0n
  const digits = (negative ? -units : units).toString().padStart(scale + 1, "0")
  const text = `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`
  return negative ? `-${text}` : text
}

/** A sum of share units, exact whatever its size. */
class ShareSum {
  small = 0
  big = 0n
  add(units: number) {
    this.small += units
    if (this.small >= SAFE_SUM || this.small <= -SAFE_SUM) {
      this.big += BigInt(this.small)
      this.small = 0
    }
  }
  text() {
    return fromUnits(this.big + BigInt(this.small), SHARE_SCALE)
  }
}

class Accumulator {
  conversions = 0
  cashPayments = 0
  firstPayments = 0
  credited = new ShareSum()
  /** Units of 1e-16. */
  revenue = 0n
  /** Units of 1e-6. */
  outcomeValue = 0n
}

interface ConversionState {
  readonly fact: ConversionFact
  readonly netUnits: bigint
  /** Credited touches per model. */
  readonly credits: Map<string, Array<{ readonly touch: TouchFact; readonly share: number }>>
}

/** Interns slice descriptions as small integers, so per-conversion maps are keyed by number. */
class Slices<S> {
  private readonly ids = new Map<string, number>()
  readonly described: Array<S> = []
  id(key: string, describe: () => S): number {
    let id = this.ids.get(key)
    if (id === undefined) {
      id = this.described.length
      this.ids.set(key, id)
      this.described.push(describe())
    }
    return id
  }
}

interface DimensionSlice {
  readonly dimension: string
  readonly value: string
}

interface CampaignSlice {
  readonly level: string
  readonly platformId: string
  /** Index of the level in LEVELS. */
  readonly levelIndex: number
}

/** The (dimension, value) slices of one attribute tuple. */
const dimensionSlicesOf = (slices: Slices<DimensionSlice>, values: ReadonlyArray<string>): Array<number> =>
  ROLLUP_DIMENSIONS.map((dimension, d) => {
    const value = values[d] ?? ""
    return slices.id(`${dimension}\u0000${value}`, () => ({ dimension, value }))
  })

const groupKey = (fact: ConversionFact, model: string) =>
  `${fact.profileId}\u0000${fact.day}\u0000${model}\u0000${fact.conversionKey}\u0000${fact.currency}`

/** What one (profile, day, model, key, currency) group accumulates, in every table. */
interface Group {
  readonly fact: ConversionFact
  readonly model: string
  readonly total: Accumulator
  /** Counted conversions with a credited touch. */
  attributed: number
  /** Every conversion's net (units of 1e-6), refunded or not. */
  revenue: bigint
  readonly credit: Map<number, Accumulator>
  readonly campaign: Map<number, Accumulator>
}

const accumulatorAt = (accumulators: Map<number, Accumulator>, slice: number): Accumulator => {
  let acc = accumulators.get(slice)
  if (acc === undefined) {
    acc = new Accumulator()
    accumulators.set(slice, acc)
  }
  return acc
}

/** Sums by small integer id, cleared in O(ids touched): one per conversion and model. */
class SparseSums {
  private readonly sums: Array<number> = []
  private readonly seen: Array<number> = []
  private generation = 0
  readonly touched: Array<number> = []
  clear() {
    this.generation++
    this.touched.length = 0
  }
  add(id: number, value: number) {
    if (this.seen[id] !== this.generation) {
      this.seen[id] = this.generation
      this.sums[id] = 0
      this.touched.push(id)
    }
    this.sums[id] = (this.sums[id] ?? 0) + value
  }
  /** undefined when nothing was added under `id` since the last clear. */
  get(id: number): number | undefined {
    return this.seen[id] === this.generation ? this.sums[id] : undefined
  }
}

/** Adds one conversion's weight `share` (units) to an accumulator; `counts` = it is counted there. */
const contribute = (acc: Accumulator, state: ConversionState, share: number, counts: boolean) => {
  const { fact } = state
  if (fact.counted) {
    acc.credited.add(share)
    if (counts) {
      acc.conversions++
      if (fact.cash) {
        acc.cashPayments++
        acc.outcomeValue += state.netUnits
        if (fact.firstPayment) acc.firstPayments++
      }
    }
  }
  if (state.netUnits !== 0n && share !== 0) acc.revenue += BigInt(share) * state.netUnits
}

const sliceRows = <S, D>(
  groups: Iterable<Group>,
  accumulatorsOf: (group: Group) => Map<number, Accumulator>,
  slices: Slices<S>,
  describe: (slice: S) => D
): Array<SliceMetrics & D> => {
  const rows: Array<SliceMetrics & D> = []
  for (const group of groups) {
    const { fact, model } = group
    for (const [id, acc] of accumulatorsOf(group)) {
      rows.push({
        profileId: fact.profileId,
        model,
        day: fact.day,
        conversionKey: fact.conversionKey,
        currency: fact.currency,
        conversions: acc.conversions,
        cashPayments: acc.cashPayments,
        firstPayments: acc.firstPayments,
        creditedConversions: acc.credited.text(),
        creditedRevenue: fromUnits(acc.revenue, SHARE_SCALE + MONEY_SCALE),
        outcomeValue: fromUnits(acc.outcomeValue, MONEY_SCALE),
        ...describe(slices.described[id]!)
      })
    }
  }
  return rows
}

/**
 * The rollup rows of the given facts: `conversions` of the days, their credited `credits` (every
 * model), the credited `touches` (by id) and the days' `touchTuples`. Conversions and tuples carry
 * their (profile, day); rows come out per (profile, day).
 */
export const buildRollupRows = (input: {
  readonly models: ReadonlyArray<string>
  readonly conversions: ReadonlyArray<ConversionFact>
  readonly credits: ReadonlyArray<CreditFact>
  readonly touches: ReadonlyArray<TouchFact>
  readonly touchTuples: ReadonlyArray<TouchTuple>
}): RollupRows => {
  const touchById = new Map(input.touches.map((touch) => [touch.id, touch]))
  const states = new Map<string, ConversionState>()
  for (const fact of input.conversions) {
    states.set(fact.id, { fact, netUnits: toUnits(fact.net, MONEY_SCALE), credits: new Map() })
  }
  for (const credit of input.credits) {
    const state = states.get(credit.conversionId)
    const touch = touchById.get(credit.touchId)
    if (state === undefined || touch === undefined) continue
    let list = state.credits.get(credit.model)
    if (list === undefined) {
      list = []
      state.credits.set(credit.model, list)
    }
    list.push({ touch, share: Number(toUnits(credit.share, SHARE_SCALE)) })
  }

  const dimensionSlices = new Slices<DimensionSlice>()
  const campaignSlices = new Slices<CampaignSlice>()
  // Touches and tuples that agree on every value share one list of slice ids.
  const slicesByValues = new Map<string, Array<number>>()
  const dimensionSlicesOfValues = (values: ReadonlyArray<string>) => {
    const key = values.join("\u0000")
    let ids = slicesByValues.get(key)
    if (ids === undefined) {
      ids = dimensionSlicesOf(dimensionSlices, values)
      slicesByValues.set(key, ids)
    }
    return ids
  }
  const touchDimensionSlices = new Map<TouchFact, Array<number>>()
  const dimensionSlicesOfTouch = (touch: TouchFact) => {
    let ids = touchDimensionSlices.get(touch)
    if (ids === undefined) {
      ids = dimensionSlicesOfValues(touch.values)
      touchDimensionSlices.set(touch, ids)
    }
    return ids
  }
  const campaignSliceId = (levelIndex: number, platformId: string) => {
    const level = LEVELS[levelIndex]!
    return campaignSlices.id(`${level}\u0000${platformId}`, () => ({ level, platformId, levelIndex }))
  }
  /** Per touch, its slice at each level (its id there, or '' for none). */
  const touchCampaignSlices = new Map<TouchFact, Array<number>>()
  const campaignSlicesOf = (touch: TouchFact): Array<number> => {
    let ids = touchCampaignSlices.get(touch)
    if (ids === undefined) {
      ids = LEVELS.map((_, l) => campaignSliceId(l, touch.values[LEVEL_DIMENSION[l]!] ?? ""))
      touchCampaignSlices.set(touch, ids)
    }
    return ids
  }
  const remainderSlices = LEVELS.map((_, l) => campaignSliceId(l, ""))

  const groups = new Map<string, Group>()
  // Per conversion and model: share per dimension slice (each slice once: the count distinct),
  // per campaign entity, and per level the share that went to touches with an id there.
  const perSlice = new SparseSums()
  const perEntity = new SparseSums()
  const perLevelEntity = new SparseSums()

  for (const state of states.values()) {
    const { fact } = state
    for (const model of input.models) {
      const credits = state.credits.get(model) ?? []
      let total = 0
      perSlice.clear()
      perEntity.clear()
      perLevelEntity.clear()
      for (const { touch, share } of credits) {
        total += share
        for (const id of dimensionSlicesOfTouch(touch)) perSlice.add(id, share)
        for (const id of campaignSlicesOf(touch)) {
          const slice = campaignSlices.described[id]!
          if (slice.platformId !== "") {
            perLevelEntity.add(slice.levelIndex, share)
            perEntity.add(id, share)
          }
        }
      }

      const key = groupKey(fact, model)
      let group = groups.get(key)
      if (group === undefined) {
        group = { fact, model, total: new Accumulator(), attributed: 0, revenue: 0n, credit: new Map(), campaign: new Map() }
        groups.set(key, group)
      }
      contribute(group.total, state, total, true)
      // Revenue is every conversion's net, refunded or not (a refund already lowered its net).
      group.revenue += state.netUnits
      if (fact.counted && credits.length > 0) group.attributed++

      for (const id of perSlice.touched) contribute(accumulatorAt(group.credit, id), state, perSlice.get(id) ?? 0, true)

      for (const id of perEntity.touched) contribute(accumulatorAt(group.campaign, id), state, perEntity.get(id) ?? 0, true)
      // The remainder: every conversion weighs 1 at each level; what no entity took.
      remainderSlices.forEach((slice, l) => {
        const entity = perLevelEntity.get(l)
        contribute(accumulatorAt(group.campaign, slice), state, ONE_SHARE - (entity ?? 0), entity === undefined)
      })
    }
  }

  const conversionDays: Array<ConversionDayRow> = []
  for (const { fact, model, total: acc, attributed, revenue } of groups.values()) {
    conversionDays.push({
      profileId: fact.profileId,
      model,
      day: fact.day,
      conversionKey: fact.conversionKey,
      currency: fact.currency,
      conversions: acc.conversions,
      cashPayments: acc.cashPayments,
      firstPayments: acc.firstPayments,
      revenue: fromUnits(revenue, MONEY_SCALE),
      attributedConversions: attributed,
      creditedConversions: acc.credited.text(),
      creditedRevenue: fromUnits(acc.revenue, SHARE_SCALE + MONEY_SCALE)
    })
  }

  const touchCounts = new Map<string, { readonly tuple: TouchTuple; readonly slices: Map<number, number> }>()
  for (const tuple of input.touchTuples) {
    const dayKey = `${tuple.profileId}\u0000${tuple.day}`
    let entry = touchCounts.get(dayKey)
    if (entry === undefined) {
      entry = { tuple, slices: new Map() }
      touchCounts.set(dayKey, entry)
    }
    for (const id of dimensionSlicesOfValues(tuple.values)) entry.slices.set(id, (entry.slices.get(id) ?? 0) + tuple.touches)
  }
  const touchDays: Array<TouchDayRow> = []
  for (const { tuple, slices } of touchCounts.values()) {
    for (const [id, touches] of slices) touchDays.push({ profileId: tuple.profileId, day: tuple.day, ...dimensionSlices.described[id]!, touches })
  }

  return {
    conversionDays,
    creditDays: sliceRows(groups.values(), (group) => group.credit, dimensionSlices, (slice) => slice),
    campaignDays: sliceRows(groups.values(), (group) => group.campaign, campaignSlices, (slice) => ({
      level: slice.level,
      platformId: slice.platformId
    })),
    touchDays
  }
}
