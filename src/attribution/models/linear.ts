import { apportionEqual } from "./decimal.ts"
import { unattributed, unitsResult } from "./path.ts"
import type { AttributionPath, ModelResult } from "./types.ts"

/**
 * `linear`: equal credit to every touch on the path. With n touches each gets floor(10^10 / n)
 * units of 1e-10 and the remainder goes one unit each to the last positions (three touches:
 * 0.3333333333, 0.3333333333, 0.3333333334).
 */
export const linear = (path: AttributionPath): ModelResult =>
  path.touches.length === 0
    ? unattributed("linear")
    : unitsResult("linear", path, apportionEqual(path.touches.length), null, null)
