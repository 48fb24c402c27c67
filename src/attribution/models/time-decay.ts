import { apportionWeights } from "./decimal.ts"
import { unattributed, unitsResult } from "./path.ts"
import type { AttributionPath, CreditModel, FallbackReason, ModelResult } from "./types.ts"
import { DAY_MS } from "./types.ts"

/** Half-life of `time_decay`, in days. */
export const TIME_DECAY_HALF_LIFE_DAYS = 7
const HALF_LIFE_MS = TIME_DECAY_HALF_LIFE_DAYS * DAY_MS

/**
 * The `time_decay` weight of each path touch: 2^(-Δt / 7 days) with Δt the time from the touch
 * to the conversion (a touch at the conversion weighs 1, one a week earlier 1/2). Computed
 * relative to the latest path touch, 2^(-(t_last - t) / 7 days), which differs from the stated
 * weight by a common factor only (same shares) and cannot underflow for the newest touch.
 */
export const timeDecayWeights = (path: AttributionPath): Array<number> => {
  const touches = path.touches
  const n = touches.length
  const weights = new Array<number>(n)
  const last = touches[n - 1]?.occurred_at ?? path.conversion_at
  for (let i = 0; i < n; i++) {
    weights[i] = Math.pow(2, -((last - (touches[i]?.occurred_at ?? last)) / HALF_LIFE_MS))
  }
  return weights
}

/** Time-decay rows under another model's name (`svc_model` falling back). */
export const timeDecayAs = (
  model: CreditModel,
  path: AttributionPath,
  fallback: CreditModel | null,
  fallbackReason: FallbackReason | null
): ModelResult => {
  if (path.touches.length === 0) return unattributed(model, fallback, fallbackReason)
  // The newest touch weighs exactly 1, so a positive weight always exists.
  const units = apportionWeights(timeDecayWeights(path)) ?? []
  return unitsResult(model, path, units, fallback, fallbackReason)
}

/** `time_decay`: credit in proportion to 2^(-Δt / 7 days), shares exact to 1e-10 (decimal.ts). */
export const timeDecay = (path: AttributionPath): ModelResult => timeDecayAs("time_decay", path, null, null)
