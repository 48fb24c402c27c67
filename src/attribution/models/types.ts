/**
 * Inputs and outputs of the credit models (docs/decisions/0028-credit-models.md).
 *
 * Everything here is plain data: no Effect services, no SQL, no I/O. The replay worker, the
 * live recompute and the benchmarks call the same functions. Field names follow the database
 * columns (`touches`, `attribution_credits` in migrations/0009_outcomes.ts).
 */

/** The six credit models, in the order the spec lists them (and `creditAll` returns them). */
export const MODELS = ["last_touch", "first_touch", "last_non_direct", "linear", "time_decay", "svc_model"] as const
export type CreditModel = typeof MODELS[number]

/** Touch kinds (`touches.kind`). `outcome` touches are shown on a journey but are never creditable. */
export const TOUCH_KINDS = ["web_touch", "synthetic", "organic_interaction", "inherited", "proxy_click", "outcome"] as const
export type TouchKind = typeof TOUCH_KINDS[number]

/**
 * The channels channel classification produces. Models take `channel` as a plain string (the
 * column is `text`): only `last_non_direct` gives a value a meaning (`direct` is skipped) and
 * `svc_model` uses channels as opaque state labels, so an unforeseen value never breaks a credit.
 */
export const CHANNELS = [
  "paid_search",
  "paid_social",
  "organic_search",
  "organic_social",
  "referral",
  "email",
  "messaging",
  "direct"
] as const
export type Channel = typeof CHANNELS[number]

/** The channel `last_non_direct` skips. */
export const DIRECT_CHANNEL = "direct"

export const DAY_MS = 86_400_000

/** The conversion being credited. */
export interface ConversionInput {
  /** Epoch milliseconds. */
  readonly occurred_at: number
  /** The conversion definition's `lookback_window_days` (1..365 in the database; any positive finite number here). */
  readonly lookback_window_days: number
}

/** A candidate touch of the converting person (every touch may be passed; the path rule picks). */
export interface TouchInput {
  /** `touches.id`; unique per conversion (a repeated id is kept once, see `attributionPath`). */
  readonly id: string
  /** Epoch milliseconds. */
  readonly occurred_at: number
  readonly kind: TouchKind
  /** `touches.channel`; also the Markov state `svc_model` uses. */
  readonly channel: string
}

/**
 * The attribution path of one conversion: the creditable touches at or before the conversion
 * and inside its lookback window, oldest first (ties on time broken by id). Built once by
 * `attributionPath` and shared by every model.
 */
export interface AttributionPath {
  readonly conversion_at: number
  /** Inclusive lower bound: `conversion_at - lookback_window_days * DAY_MS`. */
  readonly window_start: number
  readonly touches: ReadonlyArray<TouchInput>
}

/** One `attribution_credits` row (without `conversion_id` and `model`, which the caller knows). */
export interface CreditRow {
  readonly touch_id: string
  /** 1-based position on the path, 1 = the oldest touch in the window. */
  readonly position: number
  /** Exact decimal with 10 decimals ("0.2500000000"); the shares of one model sum to exactly "1.0000000000". */
  readonly credit_share: string
  /** `credit_share` is not zero. */
  readonly is_credited: boolean
  /** Always true: rows exist only for touches on the path (zero-weight positions included). */
  readonly in_window: boolean
}

/** Why a model used another model's rule for this conversion. */
export type FallbackReason =
  /** `last_non_direct`: every touch on the path is `direct`; the last touch is credited. */
  | "all_direct"
  /** `svc_model`: no path statistics, or fewer than the minimum-data threshold. */
  | "insufficient_data"
  /** `svc_model`: none of the path's channels carries a removal effect (unseen in the statistics). */
  | "no_channel_signal"

export interface ModelResult {
  readonly model: CreditModel
  /** One row per path touch; empty when no creditable touch is in the window (unattributed). */
  readonly rows: ReadonlyArray<CreditRow>
  /** The model whose rule produced `rows` when it is not `model`'s own rule; null otherwise. */
  readonly fallback: CreditModel | null
  readonly fallback_reason: FallbackReason | null
}

/** A channel path of the profile, for `buildPathStats`: the channels of a journey in order, and whether it converted. */
export interface ChannelPath {
  readonly channels: ReadonlyArray<string>
  readonly converted: boolean
}

/**
 * First-order Markov transition counts over channel paths (`buildPathStats`). Plain, JSON-safe
 * data, so a profile's statistics can be stored and reloaded. Channel index `i` refers to
 * `channels[i]`; `channels` is sorted (code-unit order), so equal inputs give equal statistics.
 */
export interface PathStats {
  /** Non-empty converting paths counted. */
  readonly converting_paths: number
  /** Non-empty paths counted (converting and not). */
  readonly total_paths: number
  readonly channels: ReadonlyArray<string>
  /** `start[i]`: paths whose first channel is `channels[i]`. */
  readonly start: ReadonlyArray<number>
  /** `transitions[i][j]`: moves from `channels[i]` to a different `channels[j]` (repeats are collapsed). */
  readonly transitions: ReadonlyArray<ReadonlyArray<number>>
  /** `conversions[i]`: converting paths whose last channel is `channels[i]`. */
  readonly conversions: ReadonlyArray<number>
  /** `nulls[i]`: non-converting paths whose last channel is `channels[i]`. */
  readonly nulls: ReadonlyArray<number>
}

/** Removal effects of a `PathStats` (`removalEffects`). */
export interface RemovalEffects {
  /** Probability of reaching conversion from the start state. */
  readonly conversion_probability: number
  /** `1 - P(conversion without the channel) / P(conversion)`, in [0, 1]. */
  readonly raw: ReadonlyMap<string, number>
  /** `raw` divided by the sum of `raw` over every channel (all zero when that sum is zero). */
  readonly normalized: ReadonlyMap<string, number>
}
