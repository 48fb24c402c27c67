import { formatShare, ONE_SHARE, ZERO_SHARE } from "./decimal.ts"
import type {
  AttributionPath,
  ConversionInput,
  CreditModel,
  CreditRow,
  FallbackReason,
  ModelResult,
  TouchInput
} from "./types.ts"
import { DAY_MS } from "./types.ts"

/** Total order on touches: time, then id, then channel and kind (only for repeated ids). */
const compareTouches = (a: TouchInput, b: TouchInput): number =>
  a.occurred_at - b.occurred_at ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) ||
  (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0) ||
  (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)

/**
 * The attribution path of a conversion. A touch is on it when its kind is not `outcome` and
 * `window_start <= occurred_at <= conversion_at` (both ends inclusive), where
 * `window_start = conversion_at - lookback_window_days × 86 400 000`. Touches are ordered oldest
 * first, ties on time broken by id (code-unit order), so the result does not depend on the input
 * order. An id given twice is kept once (its first version in that order).
 *
 * Throws a RangeError on a non-finite time or a window that is not a positive finite number:
 * those are caller bugs (the database cannot hold them), not data to credit around.
 */
export const attributionPath = (conversion: ConversionInput, touches: Iterable<TouchInput>): AttributionPath => {
  const end = conversion.occurred_at
  const days = conversion.lookback_window_days
  if (!Number.isFinite(end)) throw new RangeError("conversion occurred_at must be a finite epoch-ms time")
  if (!(days > 0) || !Number.isFinite(days)) throw new RangeError("lookback_window_days must be a positive number")
  const start = end - days * DAY_MS
  const picked: Array<TouchInput> = []
  for (const touch of touches) {
    if (!Number.isFinite(touch.occurred_at)) throw new RangeError(`touch ${touch.id} occurred_at must be finite`)
    if (touch.kind === "outcome" || touch.occurred_at < start || touch.occurred_at > end) continue
    picked.push(touch)
  }
  if (picked.length > 1) {
    picked.sort(compareTouches)
    const seen = new Set<string>()
    let kept = 0
    for (let i = 0; i < picked.length; i++) {
      const touch = picked[i]
      if (touch === undefined || seen.has(touch.id)) continue
      seen.add(touch.id)
      picked[kept++] = touch
    }
    picked.length = kept
  }
  return { conversion_at: end, window_start: start, touches: picked }
}

/** Result rows where exactly one position (0-based `index`) takes the whole credit. */
export const singleTouchResult = (
  model: CreditModel,
  path: AttributionPath,
  index: number,
  fallback: CreditModel | null,
  fallbackReason: FallbackReason | null
): ModelResult => {
  const touches = path.touches
  const rows = new Array<CreditRow>(touches.length)
  for (let i = 0; i < touches.length; i++) {
    const credited = i === index
    rows[i] = {
      touch_id: touches[i]?.id ?? "",
      position: i + 1,
      credit_share: credited ? ONE_SHARE : ZERO_SHARE,
      is_credited: credited,
      in_window: true
    }
  }
  return { model, rows, fallback, fallback_reason: fallbackReason }
}

/** Result rows from units per position (they must sum to `UNITS`). */
export const unitsResult = (
  model: CreditModel,
  path: AttributionPath,
  units: ReadonlyArray<number>,
  fallback: CreditModel | null,
  fallbackReason: FallbackReason | null
): ModelResult => {
  const touches = path.touches
  const rows = new Array<CreditRow>(touches.length)
  for (let i = 0; i < touches.length; i++) {
    const u = units[i] ?? 0
    rows[i] = {
      touch_id: touches[i]?.id ?? "",
      position: i + 1,
      credit_share: formatShare(u),
      is_credited: u > 0,
      in_window: true
    }
  }
  return { model, rows, fallback, fallback_reason: fallbackReason }
}

/** The result of a model on an empty path: no rows, the conversion is unattributed. */
export const unattributed = (
  model: CreditModel,
  fallback: CreditModel | null = null,
  fallbackReason: FallbackReason | null = null
): ModelResult => ({ model, rows: [], fallback, fallback_reason: fallbackReason })
