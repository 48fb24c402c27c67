import { singleTouchResult, unattributed } from "./path.ts"
import type { AttributionPath, ModelResult } from "./types.ts"

/**
 * `first_touch`: the whole credit to the first touch on the path, i.e. the oldest touch inside
 * the lookback window (not the person's first touch ever); ties on time: the smaller id.
 */
export const firstTouch = (path: AttributionPath): ModelResult =>
  path.touches.length === 0
    ? unattributed("first_touch")
    : singleTouchResult("first_touch", path, 0, null, null)
