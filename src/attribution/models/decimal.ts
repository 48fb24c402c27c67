/**
 * Exact shares. A share is an integer number of units of 1e-10 (`credit_share numeric(12,10)`);
 * the units of one model's rows always add up to exactly `UNITS` (= 1). Weights may be binary
 * floats, but they are turned into integers once and every sum and division after that is exact
 * integer arithmetic, so no float error reaches a stored string.
 *
 * Rounding rule (largest remainder, Hamilton): every touch gets floor(exact share × 10^10) units;
 * the units left over (fewer than the number of positive-weight touches) go one each to the
 * touches with the largest dropped fraction, ties to the later position (nearer the conversion).
 * A zero-weight position never receives a unit.
 */

/** Decimals of `credit_share`. */
export const SHARE_DECIMALS = 10
/** Units of 1e-10 in a whole share. */
export const UNITS = 10_000_000_000
const UNITS_BIG = 10_000_000_000n

export const ZERO_SHARE = "0.0000000000"
export const ONE_SHARE = "1.0000000000"

/** Weights are scaled so that the largest is 2^52, then rounded to integers (exact in a float64). */
const WEIGHT_SCALE = 2 ** 52

/** Formats units (0..UNITS) as the exact 10-decimal string. */
export const formatShare = (units: number): string => {
  if (units === 0) return ZERO_SHARE
  if (units === UNITS) return ONE_SHARE
  return `0.${String(units).padStart(SHARE_DECIMALS, "0")}`
}

/** Parses a share string with at most 10 decimals back into units (for checks and tests). */
export const shareUnits = (share: string): bigint => {
  const match = /^(\d+)(?:\.(\d{1,10}))?$/.exec(share)
  if (match === null) throw new RangeError(`not a credit share: ${share}`)
  const whole = BigInt(match[1] ?? "0")
  const fraction = BigInt((match[2] ?? "").padEnd(SHARE_DECIMALS, "0"))
  return whole * UNITS_BIG + fraction
}

/**
 * Splits `UNITS` equally over `n` positions: floor(UNITS / n) each, the remainder one unit each
 * to the last positions (the largest-remainder rule with all remainders tied).
 */
export const apportionEqual = (n: number): Array<number> => {
  const base = Math.floor(UNITS / n)
  const extra = UNITS - base * n
  const units = new Array<number>(n)
  for (let i = 0; i < n; i++) units[i] = i >= n - extra ? base + 1 : base
  return units
}

/**
 * Splits `UNITS` over non-negative finite weights in proportion (rounding rule above). Returns
 * null when no weight is positive (the caller falls back). Each weight is first made relative
 * to the largest and quantized to an integer in [0, 2^52]; a weight below 2^-53 of the largest
 * becomes zero (its exact share would be below 1e-15).
 */
export const apportionWeights = (weights: ReadonlyArray<number>): Array<number> | null => {
  const n = weights.length
  let max = 0
  for (let i = 0; i < n; i++) {
    const w = weights[i] ?? 0
    if (w > max) max = w
  }
  if (!(max > 0) || !Number.isFinite(max)) return null
  const quantized = new Array<bigint>(n)
  let total = 0n
  for (let i = 0; i < n; i++) {
    const w = weights[i] ?? 0
    const q = w > 0 ? BigInt(Math.round((w / max) * WEIGHT_SCALE)) : 0n
    quantized[i] = q
    total += q
  }
  const units = new Array<number>(n)
  const remainders = new Array<bigint>(n)
  let given = 0n
  for (let i = 0; i < n; i++) {
    const product = (quantized[i] ?? 0n) * UNITS_BIG
    const base = product / total
    units[i] = Number(base)
    remainders[i] = product - base * total
    given += base
  }
  let left = Number(UNITS_BIG - given)
  if (left === 0) return units
  // The sum of the remainders is exactly left × total and each is below total, so at least
  // `left` remainders are positive: the picks below never land on a zero-weight position.
  const order = new Array<number>(n)
  for (let i = 0; i < n; i++) order[i] = i
  order.sort((a, b) => {
    const ra = remainders[a] ?? 0n
    const rb = remainders[b] ?? 0n
    return ra > rb ? -1 : ra < rb ? 1 : b - a
  })
  for (let k = 0; left > 0; k++, left--) {
    const i = order[k] ?? 0
    units[i] = (units[i] ?? 0) + 1
  }
  return units
}
