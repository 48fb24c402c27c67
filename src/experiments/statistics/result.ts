/**
 * The two answers every analysis gives: an estimate that always carries its interval, or a
 * plain statement that the data do not support one (issue 32: never a lift without its interval,
 * and "not enough data" is an answer, not an error).
 *
 * Malformed input (a negative count, more conversions than customers, a date that is not
 * `YYYY-MM-DD`) is a caller's bug, not missing data: those functions throw a RangeError, as
 * src/attribution/models does.
 */

/** A two-sided interval at `level` (0.95 unless a caller asks otherwise). */
export interface Interval {
  readonly lower: number
  readonly upper: number
  readonly level: number
}

/** A point estimate with its interval; analyses add their own fields beside these. */
export interface Estimate extends Interval {
  readonly _tag: "Estimate"
  readonly estimate: number
}

export interface InsufficientData {
  readonly _tag: "InsufficientData"
  readonly reason: string
}

/** An analysis' answer: `A` is an Estimate, possibly with more fields. */
export type Estimated<A extends Estimate = Estimate> = A | InsufficientData

export const DEFAULT_LEVEL = 0.95

export const insufficient = (reason: string): InsufficientData => ({ _tag: "InsufficientData", reason })

export const estimate = (value: number, lower: number, upper: number, level: number): Estimate => ({
  _tag: "Estimate",
  estimate: value,
  lower,
  upper,
  level
})

/** Throws unless 0 < level < 1: shared by every function that takes a confidence level. */
export const checkLevel = (level: number): void => {
  if (!(level > 0 && level < 1)) throw new RangeError(`confidence level must be in (0, 1), got ${level}`)
}
