import { singleTouchResult, unattributed } from "./path.ts"
import type { AttributionPath, ModelResult } from "./types.ts"
import { DIRECT_CHANNEL } from "./types.ts"

/**
 * `last_non_direct`: the whole credit to the last touch on the path whose channel is not
 * `direct`. When every touch on the path is `direct`, the last touch is credited and the result
 * says so (`fallback: "last_touch"`, `fallback_reason: "all_direct"`), so the conversion stays
 * attributed exactly when `last_touch` attributes it.
 */
export const lastNonDirect = (path: AttributionPath): ModelResult => {
  const touches = path.touches
  if (touches.length === 0) return unattributed("last_non_direct")
  for (let i = touches.length - 1; i >= 0; i--) {
    if (touches[i]?.channel !== DIRECT_CHANNEL) return singleTouchResult("last_non_direct", path, i, null, null)
  }
  return singleTouchResult("last_non_direct", path, touches.length - 1, "last_touch", "all_direct")
}
