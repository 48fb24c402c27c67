/**
 * The creative analysis itself (decision 0071), deterministic: features of the synced creative,
 * performance features of its last 14 days, rule verdicts (each with the thresholds and inputs
 * it read) and learned values withheld with a reason when the data is too thin.
 */
import { createHash } from "node:crypto"
import type {
  CreativeAnalysisResult,
  CreativeFeatures,
  CreativeLearned,
  PerformanceFeatures,
  Verdict
} from "../../../schema/creative-analysis.ts"
import { parseJsonOrUndefined } from "../../platform/json.ts"
import type { AdCreativeRow, AdDayRow, PeerRow, PerformanceTotals } from "./repo.ts"

export const WINDOW_DAYS = 14
/** Impressions below which CTR-based verdicts and learned values are withheld. */
export const MIN_IMPRESSIONS = 1000
/** Peers (ads with MIN_IMPRESSIONS) needed to rank an ad among the profile's. */
export const MIN_PEERS = 3
export const GREETING_MAX = 160
export const GREETING_MIN = 10
/** CTR of the last 3 days under this share of the prior days' CTR: fatigue. */
export const DECAY_WARN = 0.8
export const DECAY_HIGH = 0.6

/** The creative fields the fingerprint covers: a change to any of them is a new creative. */
export const fingerprintOf = (ad: AdCreativeRow): string =>
  createHash("sha256").update(JSON.stringify([
    ad.creative_thumbnail_url,
    ad.destination_type,
    ad.destination_phone_number,
    ad.destination_page_id,
    ad.call_to_action_type,
    ad.greeting,
    ad.greeting_status,
    ad.welcome_message
  ])).digest("hex")

const record = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : {}

export const creativeFeatures = (ad: AdCreativeRow, totals: PerformanceTotals): CreativeFeatures => {
  const welcome = record(ad.welcome_message === null ? null : parseJsonOrUndefined(ad.welcome_message))
  const welcomeGreeting = typeof welcome["greeting"] === "string" ? welcome["greeting"] : null
  const greeting = (ad.greeting ?? welcomeGreeting ?? "").trim()
  const iceBreakers = Array.isArray(welcome["ice_breakers"]) ? welcome["ice_breakers"].length : 0
  const thumbnail = (ad.creative_thumbnail_url ?? "").toLowerCase()
  const mediaType = /\.(mp4|mov|webm|m3u8)(\?|$)|video/.test(thumbnail)
    ? "video" as const
    : /\.(jpe?g|png|gif|webp)(\?|$)|image/.test(thumbnail)
    ? "image" as const
    : "unknown" as const
  return {
    format: ad.destination_type === null ? "website" : "click_to_chat",
    media_type: mediaType,
    has_thumbnail: ad.creative_thumbnail_url !== null,
    call_to_action_type: ad.call_to_action_type,
    has_call_to_action: ad.call_to_action_type !== null && ad.call_to_action_type !== "" && ad.call_to_action_type !== "NO_BUTTON",
    has_greeting: greeting.length > 0,
    greeting_length: [...greeting].length,
    greeting_has_question: greeting.includes("?"),
    has_prefilled_text: typeof welcome["prefilled_text"] === "string" && welcome["prefilled_text"].trim() !== "",
    ice_breakers_count: iceBreakers,
    name_length: [...ad.name].length,
    url_tagged_share: totals.ad_touches === 0 ? null : round(totals.tagged_touches / totals.ad_touches)
  }
}

const round = (value: number, digits = 4) => Number(value.toFixed(digits))
const ratio = (a: number, b: number) => b > 0 ? round(a / b) : null

export const performanceFeatures = (
  window: { readonly since: string; readonly until: string },
  days: ReadonlyArray<AdDayRow>,
  totals: PerformanceTotals
): PerformanceFeatures => {
  const delivered = days.filter((day) => day.impressions > 0)
  const impressions = days.reduce((sum, day) => sum + day.impressions, 0)
  const clicks = days.reduce((sum, day) => sum + day.clicks, 0)
  const spend = days.reduce((sum, day) => sum + Number(day.spend), 0)
  const reported = days.reduce((sum, day) => sum + day.reported_conversions, 0)
  // Fatigue: the last 3 delivering days against the delivering days before them (at least 3).
  const recent = delivered.slice(-3)
  const prior = delivered.slice(0, -3)
  const ctrOf = (rows: ReadonlyArray<AdDayRow>) => {
    const shown = rows.reduce((sum, day) => sum + day.impressions, 0)
    return shown > 0 ? rows.reduce((sum, day) => sum + day.clicks, 0) / shown : null
  }
  const recentCtr = recent.length === 3 ? ctrOf(recent) : null
  const priorCtr = prior.length >= 3 ? ctrOf(prior) : null
  return {
    since: window.since,
    until: window.until,
    days_with_delivery: delivered.length,
    impressions,
    clicks,
    spend: days.length === 0 ? null : spend.toFixed(2),
    currency: days[0]?.currency ?? null,
    attributed_conversions: round(totals.attributed),
    reported_conversions: reported,
    ctr: ratio(clicks, impressions),
    cpc: ratio(spend, clicks),
    cost_per_outcome: totals.attributed > 0 ? round(spend / totals.attributed, 2) : null,
    ctr_recent_over_prior: recentCtr === null || priorCtr === null || priorCtr === 0 ? null : round(recentCtr / priorCtr),
    profile_ctr: ratio(totals.profile_clicks, totals.profile_impressions)
  }
}

const verdict = (
  id: string,
  outcome: Verdict["outcome"],
  message: string,
  thresholds: Verdict["rule"]["thresholds"],
  inputs: Verdict["rule"]["inputs"]
): Verdict => ({ id, outcome, message, rule: { id, thresholds, inputs } })

export const verdicts = (creative: CreativeFeatures, performance: PerformanceFeatures): ReadonlyArray<Verdict> => {
  const out: Array<Verdict> = []
  out.push(
    creative.has_call_to_action
      ? verdict("creative.call_to_action", "pass", "The creative has a call to action.", {}, { call_to_action_type: creative.call_to_action_type })
      : verdict("creative.call_to_action", "fail", "The creative has no call to action button.", {}, { call_to_action_type: creative.call_to_action_type })
  )
  if (creative.format === "click_to_chat") {
    const length = creative.greeting_length
    const thresholds = { min_length: GREETING_MIN, max_length: GREETING_MAX }
    const inputs = { greeting_length: length, has_greeting: creative.has_greeting }
    out.push(
      !creative.has_greeting
        ? verdict("creative.greeting_length", "fail", "The chat ad has no greeting.", thresholds, inputs)
        : length < GREETING_MIN || length > GREETING_MAX
        ? verdict("creative.greeting_length", "warn", `The greeting is ${length} characters; ${GREETING_MIN} to ${GREETING_MAX} read best.`, thresholds, inputs)
        : verdict("creative.greeting_length", "pass", "The greeting length is within the range.", thresholds, inputs)
    )
  }
  out.push(
    creative.url_tagged_share === null
      ? verdict("creative.url_tags", "withheld", "No tracked touch of this ad in the window.", { min_share: 0.9 }, { url_tagged_share: null })
      : creative.url_tagged_share >= 0.9
      ? verdict("creative.url_tags", "pass", "The ad's clicks arrive with UTM tags.", { min_share: 0.9 }, { url_tagged_share: creative.url_tagged_share })
      : verdict("creative.url_tags", "warn", "Part of the ad's clicks arrive without UTM tags.", { min_share: 0.9 }, {
        url_tagged_share: creative.url_tagged_share
      })
  )
  const ctrInputs = { ctr: performance.ctr, profile_ctr: performance.profile_ctr, impressions: performance.impressions }
  const ctrThresholds = { min_impressions: MIN_IMPRESSIONS, warn_below_share_of_profile: 0.5 }
  out.push(
    performance.impressions < MIN_IMPRESSIONS || performance.ctr === null || performance.profile_ctr === null
      ? verdict("performance.ctr_vs_profile", "withheld", `Fewer than ${MIN_IMPRESSIONS} impressions in the window.`, ctrThresholds, ctrInputs)
      : performance.ctr < performance.profile_ctr * 0.5
      ? verdict("performance.ctr_vs_profile", "warn", "The ad's CTR is under half the profile's.", ctrThresholds, ctrInputs)
      : verdict("performance.ctr_vs_profile", "pass", "The ad's CTR is in line with the profile's.", ctrThresholds, ctrInputs)
  )
  const decay = performance.ctr_recent_over_prior
  const decayThresholds = { warn_below: DECAY_WARN, high_below: DECAY_HIGH, min_impressions: MIN_IMPRESSIONS }
  const decayInputs = { ctr_recent_over_prior: decay, days_with_delivery: performance.days_with_delivery, impressions: performance.impressions }
  out.push(
    decay === null || performance.impressions < MIN_IMPRESSIONS
      ? verdict("performance.ctr_decay", "withheld", "At least 6 delivering days and enough impressions are needed.", decayThresholds, decayInputs)
      : decay < DECAY_WARN
      ? verdict("performance.ctr_decay", "warn", "CTR of the last 3 days fell against the days before: the creative is tiring.", decayThresholds, decayInputs)
      : verdict("performance.ctr_decay", "pass", "No CTR decay over the last days.", decayThresholds, decayInputs)
  )
  return out
}

export const learnedValues = (performance: PerformanceFeatures, peers: ReadonlyArray<PeerRow>, adId: string): CreativeLearned => {
  const enough = performance.impressions >= MIN_IMPRESSIONS
  const decay = performance.ctr_recent_over_prior
  const fatigue: CreativeLearned["fatigue_risk_tier"] = !enough
    ? { value: null, status: "withheld", reason: "insufficient_impressions" }
    : decay === null
    ? { value: null, status: "withheld", reason: "insufficient_history" }
    : { value: decay < DECAY_HIGH ? "high" : decay < DECAY_WARN ? "medium" : "low", status: "served", reason: null }
  const others = peers.filter((peer) => peer.ad_platform_id !== adId)
  const likelihood: CreativeLearned["top_performer_likelihood"] = !enough || performance.ctr === null
    ? { value: null, status: "withheld", reason: "insufficient_impressions" }
    : others.length < MIN_PEERS
    ? { value: null, status: "withheld", reason: "insufficient_peers" }
    // The share of the profile's comparable ads this ad's CTR beats (ties count half).
    : {
      value: round(others.reduce((sum, peer) => sum + (peer.ctr < (performance.ctr ?? 0) ? 1 : peer.ctr === performance.ctr ? 0.5 : 0), 0) / others.length),
      status: "served",
      reason: null
    }
  // Days until the CTR halves at the recent rate of decay (3 days per step); none without decay.
  const lifespan: CreativeLearned["expected_lifespan_days"] = fatigue.status !== "served" || decay === null
    ? { value: null, status: fatigue.status === "served" ? "withheld" : fatigue.status, reason: fatigue.reason }
    : decay >= 1
    ? { value: null, status: "not_applicable", reason: "no_decay" }
    : { value: Math.max(1, Math.round((3 * Math.log(0.5)) / Math.log(decay))), status: "served", reason: null }
  return { fatigue_risk_tier: fatigue, top_performer_likelihood: likelihood, expected_lifespan_days: lifespan }
}

export const analyse = (
  ad: AdCreativeRow,
  window: { readonly since: string; readonly until: string },
  days: ReadonlyArray<AdDayRow>,
  totals: PerformanceTotals,
  peers: ReadonlyArray<PeerRow>
): CreativeAnalysisResult => {
  const creative = creativeFeatures(ad, totals)
  const performance = performanceFeatures(window, days, totals)
  return { creative, performance, verdicts: verdicts(creative, performance), learned: learnedValues(performance, peers, ad.platform_id) }
}
