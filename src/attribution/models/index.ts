/**
 * The credit models as pure functions (docs/decisions/0028-credit-models.md). No I/O: the
 * replay worker, the live recompute and benchmarks call these directly.
 */
import { firstTouch } from "./first-touch.ts"
import { lastNonDirect } from "./last-non-direct.ts"
import { lastTouch } from "./last-touch.ts"
import { linear } from "./linear.ts"
import { attributionPath } from "./path.ts"
import { svcModel } from "./svc-model.ts"
import { timeDecay } from "./time-decay.ts"
import type { AttributionPath, ConversionInput, CreditModel, ModelResult, PathStats, TouchInput } from "./types.ts"

export * from "./types.ts"
export { apportionEqual, apportionWeights, formatShare, ONE_SHARE, SHARE_DECIMALS, shareUnits, UNITS, ZERO_SHARE } from "./decimal.ts"
export { attributionPath } from "./path.ts"
export { firstTouch, lastNonDirect, lastTouch, linear, svcModel, timeDecay }
export { TIME_DECAY_HALF_LIFE_DAYS, timeDecayWeights } from "./time-decay.ts"
export { buildPathStats, meetsSvcThreshold, removalEffects, SVC_MIN_CONVERTING_PATHS, SVC_MIN_PATHS } from "./svc-model.ts"

/** Credits a prepared path under one model. `stats` matters to `svc_model` only. */
export const creditPath = (model: CreditModel, path: AttributionPath, stats?: PathStats): ModelResult => {
  switch (model) {
    case "last_touch":
      return lastTouch(path)
    case "first_touch":
      return firstTouch(path)
    case "last_non_direct":
      return lastNonDirect(path)
    case "linear":
      return linear(path)
    case "time_decay":
      return timeDecay(path)
    case "svc_model":
      return svcModel(path, stats)
  }
}

/** Credits one conversion under one model. */
export const creditModel = (
  model: CreditModel,
  conversion: ConversionInput,
  touches: Iterable<TouchInput>,
  stats?: PathStats
): ModelResult => creditPath(model, attributionPath(conversion, touches), stats)

/**
 * Credits one conversion under all six models (in `MODELS` order), building the path once.
 * Every result has the same rows' touches and positions; an empty path gives empty rows under
 * every model (the conversion is unattributed). `stats` is the profile's `buildPathStats` result
 * for `svc_model`; without it `svc_model` falls back to `time_decay` and says so.
 */
export const creditAll = (
  conversion: ConversionInput,
  touches: Iterable<TouchInput>,
  stats?: PathStats
): ReadonlyArray<ModelResult> => {
  const path = attributionPath(conversion, touches)
  return [
    lastTouch(path),
    firstTouch(path),
    lastNonDirect(path),
    linear(path),
    timeDecay(path),
    svcModel(path, stats)
  ]
}
