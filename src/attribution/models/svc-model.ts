/**
 * `svc_model`: the service's data-driven model, a first-order Markov chain over channel paths
 * with removal effects (docs/decisions/0028-credit-models.md).
 *
 * States: start, one per channel, conversion and null (absorbing). Every observed path
 * `c1 … ck` contributes start→c1, c_i→c_{i+1} (consecutive repeats of a channel collapsed: a
 * self-loop never changes an absorption probability) and ck→conversion or ck→null. Transition
 * probabilities are the observed frequencies. The removal effect of a channel is
 * `1 - P(conversion | channel removed) / P(conversion)`, where removing a channel sends every path
 * reaching it to null; the normalized effects sum to 1 over the channels.
 *
 * For one conversion a touch weighs its channel's normalized effect divided by the number of
 * touches of that channel on the path; the weights are normalized over the path and rounded
 * exactly (decimal.ts). Below the minimum-data threshold the model uses `time_decay` and says so.
 */
import { apportionWeights } from "./decimal.ts"
import { unattributed, unitsResult } from "./path.ts"
import { timeDecayAs } from "./time-decay.ts"
import type { AttributionPath, ChannelPath, ModelResult, PathStats, RemovalEffects } from "./types.ts"

/** Minimum non-empty converting paths before `svc_model` serves its own credit. */
export const SVC_MIN_CONVERTING_PATHS = 200
/** Minimum non-empty paths overall (converting and not) before `svc_model` serves its own credit. */
export const SVC_MIN_PATHS = 1000

/** Whether the statistics reach the minimum-data threshold. */
export const meetsSvcThreshold = (stats: PathStats | undefined): stats is PathStats =>
  stats !== undefined && stats.converting_paths >= SVC_MIN_CONVERTING_PATHS && stats.total_paths >= SVC_MIN_PATHS

/**
 * Counts transitions over the profile's channel paths (converting and not). Empty paths carry no
 * channel and are skipped (not counted toward the threshold either). The result does not depend
 * on the order of the paths: channels are sorted and everything else is a count.
 */
export const buildPathStats = (paths: Iterable<ChannelPath>): PathStats => {
  const index = new Map<string, number>()
  const names: Array<string> = []
  const start: Array<number> = []
  const conversions: Array<number> = []
  const nulls: Array<number> = []
  // moves[from] maps a next channel's id to its count.
  const moves: Array<Map<number, number>> = []
  const idOf = (channel: string): number => {
    let id = index.get(channel)
    if (id === undefined) {
      id = names.length
      index.set(channel, id)
      names.push(channel)
      start.push(0)
      conversions.push(0)
      nulls.push(0)
      moves.push(new Map())
    }
    return id
  }
  let convertingPaths = 0
  let totalPaths = 0
  for (const path of paths) {
    const channels = path.channels
    if (channels.length === 0) continue
    totalPaths++
    if (path.converted) convertingPaths++
    let previous = -1
    for (const channel of channels) {
      const id = idOf(channel)
      if (previous === -1) start[id] = (start[id] ?? 0) + 1
      else if (previous !== id) {
        const next = moves[previous]
        if (next !== undefined) next.set(id, (next.get(id) ?? 0) + 1)
      }
      previous = id
    }
    if (path.converted) conversions[previous] = (conversions[previous] ?? 0) + 1
    else nulls[previous] = (nulls[previous] ?? 0) + 1
  }
  // Re-index by sorted channel name so the statistics are independent of the paths' order.
  const sorted = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const k = sorted.length
  const rank = new Array<number>(k)
  for (let r = 0; r < k; r++) rank[index.get(sorted[r] ?? "") ?? 0] = r
  const reorder = (values: ReadonlyArray<number>): Array<number> => {
    const out = new Array<number>(k).fill(0)
    for (let id = 0; id < k; id++) out[rank[id] ?? 0] = values[id] ?? 0
    return out
  }
  const transitions: Array<Array<number>> = []
  for (let r = 0; r < k; r++) transitions.push(new Array<number>(k).fill(0))
  for (let id = 0; id < k; id++) {
    const row = transitions[rank[id] ?? 0]
    const next = moves[id]
    if (row === undefined || next === undefined) continue
    for (const [to, count] of next) row[rank[to] ?? 0] = count
  }
  return {
    converting_paths: convertingPaths,
    total_paths: totalPaths,
    channels: sorted,
    start: reorder(start),
    transitions,
    conversions: reorder(conversions),
    nulls: reorder(nulls)
  }
}

/**
 * P(conversion) from the start state, with the channel at `removed` (or none, -1) sending its
 * paths to null. Solves (D - T) x = c by Gaussian elimination, where D holds each channel's
 * outgoing count; the matrix is diagonally dominant, so no pivoting is needed. A channel without
 * outgoing transitions (only in a hand-built statistics object) is treated as removed.
 */
const conversionProbability = (stats: PathStats, removed: number): number => {
  const k = stats.channels.length
  let startTotal = 0
  for (let i = 0; i < k; i++) startTotal += stats.start[i] ?? 0
  if (startTotal === 0) return 0
  const a: Array<Float64Array> = []
  const b = new Float64Array(k)
  for (let i = 0; i < k; i++) {
    const row = new Float64Array(k)
    const counts = stats.transitions[i]
    let out = (stats.conversions[i] ?? 0) + (stats.nulls[i] ?? 0)
    for (let j = 0; j < k; j++) if (j !== i) out += counts?.[j] ?? 0
    if (i === removed || out === 0) {
      row[i] = 1
      b[i] = 0
    } else {
      for (let j = 0; j < k; j++) if (j !== i) row[j] = -(counts?.[j] ?? 0)
      row[i] = out
      b[i] = stats.conversions[i] ?? 0
    }
    a.push(row)
  }
  for (let p = 0; p < k; p++) {
    const pivotRow = a[p] ?? new Float64Array(k)
    const pivot = pivotRow[p] ?? 1
    for (let r = p + 1; r < k; r++) {
      const row = a[r] ?? new Float64Array(k)
      const factor = (row[p] ?? 0) / pivot
      if (factor === 0) continue
      for (let j = p; j < k; j++) row[j] = (row[j] ?? 0) - factor * (pivotRow[j] ?? 0)
      b[r] = (b[r] ?? 0) - factor * (b[p] ?? 0)
    }
  }
  const x = new Float64Array(k)
  for (let i = k - 1; i >= 0; i--) {
    const row = a[i] ?? new Float64Array(k)
    let sum = b[i] ?? 0
    for (let j = i + 1; j < k; j++) sum -= (row[j] ?? 0) * (x[j] ?? 0)
    x[i] = sum / (row[i] ?? 1)
  }
  let p = 0
  for (let i = 0; i < k; i++) p += (stats.start[i] ?? 0) * (x[i] ?? 0)
  return p / startTotal
}

const memo = new WeakMap<PathStats, RemovalEffects>()

/**
 * Each channel's removal effect, raw and normalized to sum to 1 over the channels (all zero when
 * nothing converts). Memoized per statistics object, which callers must not mutate.
 */
export const removalEffects = (stats: PathStats): RemovalEffects => {
  const cached = memo.get(stats)
  if (cached !== undefined) return cached
  const k = stats.channels.length
  const base = conversionProbability(stats, -1)
  const rawValues = new Array<number>(k).fill(0)
  let sum = 0
  if (base > 0) {
    for (let c = 0; c < k; c++) {
      const effect = 1 - conversionProbability(stats, c) / base
      const clamped = effect > 0 ? (effect < 1 ? effect : 1) : 0
      rawValues[c] = clamped
      sum += clamped
    }
  }
  const raw = new Map<string, number>()
  const normalized = new Map<string, number>()
  for (let c = 0; c < k; c++) {
    const channel = stats.channels[c] ?? ""
    const value = rawValues[c] ?? 0
    raw.set(channel, value)
    normalized.set(channel, sum > 0 ? value / sum : 0)
  }
  const effects: RemovalEffects = { conversion_probability: base, raw, normalized }
  memo.set(stats, effects)
  return effects
}

/**
 * `svc_model` credit for one path. Without statistics, or below the threshold
 * (SVC_MIN_CONVERTING_PATHS converting and SVC_MIN_PATHS paths overall), the rows are
 * `time_decay`'s with `fallback: "time_decay"`, `fallback_reason: "insufficient_data"`. When no
 * channel of the path carries a removal effect (none seen in the statistics, or all zero), the
 * rows are `time_decay`'s with `fallback_reason: "no_channel_signal"`.
 */
export const svcModel = (path: AttributionPath, stats?: PathStats): ModelResult => {
  if (!meetsSvcThreshold(stats)) return timeDecayAs("svc_model", path, "time_decay", "insufficient_data")
  const touches = path.touches
  const n = touches.length
  if (n === 0) return unattributed("svc_model")
  const effects = removalEffects(stats).normalized
  const perChannel = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    const channel = touches[i]?.channel ?? ""
    perChannel.set(channel, (perChannel.get(channel) ?? 0) + 1)
  }
  const weights = new Array<number>(n)
  for (let i = 0; i < n; i++) {
    const channel = touches[i]?.channel ?? ""
    weights[i] = (effects.get(channel) ?? 0) / (perChannel.get(channel) ?? 1)
  }
  const units = apportionWeights(weights)
  if (units === null) return timeDecayAs("svc_model", path, "time_decay", "no_channel_signal")
  return unitsResult("svc_model", path, units, null, null)
}
