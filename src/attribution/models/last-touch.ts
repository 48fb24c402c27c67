import { singleTouchResult, unattributed } from "./path.ts"
import type { AttributionPath, ModelResult } from "./types.ts"

/** `last_touch`: the whole credit to the last touch on the path (the latest; ties on time: the larger id). */
export const lastTouch = (path: AttributionPath): ModelResult =>
  path.touches.length === 0
    ? unattributed("last_touch")
    : singleTouchResult("last_touch", path, path.touches.length - 1, null, null)
