/**
 * Creative analysis of one ad (decision 0071): the job a POST queues and a GET polls, the features
 * computed from the creative and its recent performance, rule verdicts with `rule: {id,
 * thresholds, inputs}` and learned values as `{value, status, reason}`.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** A rule's inputs and thresholds: numbers, strings, booleans or null (an input that was not measurable). */
const RuleValue = Schema.NullOr(Schema.Union([Schema.Number, Schema.String, Schema.Boolean]))

/** What a verdict or a recommendation was decided on: the rule, its thresholds and the inputs it read. */
export const Rule = Schema.Struct({
  id: Schema.String,
  thresholds: Schema.Record(Schema.String, RuleValue),
  inputs: Schema.Record(Schema.String, RuleValue)
}).annotate({ identifier: "Rule" })
export type Rule = typeof Rule.Type

export const LearnedValueStatus = Schema.Literals(["served", "withheld", "not_applicable"])

/** `value` is meaningful only when `status` is `served`; `reason` says why it is not. */
const learned = <S extends Schema.Top>(value: S, identifier: string) =>
  Schema.Struct({ value: Schema.NullOr(value), status: LearnedValueStatus, reason: Schema.NullOr(Schema.String) })
    .annotate({ identifier })

export const CreativeAnalysisStatus = Schema.Literals(["queued", "running", "succeeded", "failed"])
export type CreativeAnalysisStatus = typeof CreativeAnalysisStatus.Type

export const CreativeFeatures = Schema.Struct({
  /** `click_to_chat` (the ad opens a conversation) or `website`. */
  format: Schema.Literals(["click_to_chat", "website"]),
  /** `image` or `video` when the thumbnail URL says so, else `unknown`. */
  media_type: Schema.Literals(["image", "video", "unknown"]),
  has_thumbnail: Schema.Boolean,
  call_to_action_type: Schema.NullOr(Schema.String),
  has_call_to_action: Schema.Boolean,
  has_greeting: Schema.Boolean,
  /** Characters of the greeting (or the welcome message's greeting), 0 when none. */
  greeting_length: Schema.Int,
  greeting_has_question: Schema.Boolean,
  has_prefilled_text: Schema.Boolean,
  ice_breakers_count: Schema.Int,
  name_length: Schema.Int,
  /** Share of the ad's tracked touches in the window that carry a `utm_source` (null: no touch). */
  url_tagged_share: Schema.NullOr(Schema.Number)
}).annotate({ identifier: "CreativeFeatures" })
export type CreativeFeatures = typeof CreativeFeatures.Type

export const PerformanceFeatures = Schema.Struct({
  /** The window read, YYYY-MM-DD inclusive (UTC days). */
  since: Schema.String,
  until: Schema.String,
  days_with_delivery: Schema.Int,
  impressions: Schema.Int,
  clicks: Schema.Int,
  /** Spend in the ad account's currency, a decimal string; null when no day was synced. */
  spend: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  /** Conversions credited to the ad (last-touch), and the platform's own count. */
  attributed_conversions: Schema.Number,
  reported_conversions: Schema.Int,
  ctr: Schema.NullOr(Schema.Number),
  cpc: Schema.NullOr(Schema.Number),
  cost_per_outcome: Schema.NullOr(Schema.Number),
  /** CTR of the last 3 days with delivery over the CTR of the days before (null: too little data). */
  ctr_recent_over_prior: Schema.NullOr(Schema.Number),
  /** The profile's CTR over the same window, every ad together. */
  profile_ctr: Schema.NullOr(Schema.Number)
}).annotate({ identifier: "PerformanceFeatures" })
export type PerformanceFeatures = typeof PerformanceFeatures.Type

export const Verdict = Schema.Struct({
  id: Schema.String,
  /** `pass`, `warn`, `fail`, or `withheld` when the inputs are insufficient. */
  outcome: Schema.Literals(["pass", "warn", "fail", "withheld"]),
  message: Schema.String,
  rule: Rule
}).annotate({ identifier: "CreativeVerdict" })
export type Verdict = typeof Verdict.Type

export const CreativeLearned = Schema.Struct({
  fatigue_risk_tier: learned(Schema.Literals(["low", "medium", "high"]), "LearnedFatigueRiskTier"),
  top_performer_likelihood: learned(Schema.Number, "LearnedTopPerformerLikelihood"),
  expected_lifespan_days: learned(Schema.Int, "LearnedExpectedLifespanDays")
}).annotate({ identifier: "CreativeLearned" })
export type CreativeLearned = typeof CreativeLearned.Type

export const CreativeAnalysisResult = Schema.Struct({
  creative: CreativeFeatures,
  performance: PerformanceFeatures,
  verdicts: Schema.Array(Verdict),
  learned: CreativeLearned
}).annotate({ identifier: "CreativeAnalysisResult" })
export type CreativeAnalysisResult = typeof CreativeAnalysisResult.Type

export const CreativeAnalysisJob = Schema.Struct({
  job_id: Schema.String,
  /** The ad platform's own ad id. */
  ad_id: Schema.String,
  status: CreativeAnalysisStatus,
  /** Hash of the creative fields the job was queued for. */
  creative_fingerprint: Schema.String,
  attempts: Schema.Int,
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  /** Set once `status` is `succeeded`. */
  result: Schema.NullOr(CreativeAnalysisResult)
}).annotate({ identifier: "CreativeAnalysisJob" })
export type CreativeAnalysisJob = typeof CreativeAnalysisJob.Type

/** 202: queued, or the job of the same creative from the last 24 hours (`meta.deduplicated`). */
export const CreativeAnalysisQueued = Schema.Struct({
  data: CreativeAnalysisJob,
  meta: Schema.Struct({ deduplicated: Schema.Boolean })
}).annotate({ identifier: "CreativeAnalysisQueued" }).pipe(HttpApiSchema.status(202))
export type CreativeAnalysisQueued = typeof CreativeAnalysisQueued.Type

export const CreativeAnalysisBody = Schema.Struct({ data: CreativeAnalysisJob }).annotate({ identifier: "CreativeAnalysisBody" })
export type CreativeAnalysisBody = typeof CreativeAnalysisBody.Type

export const AdIdParams = { id: Schema.String.annotate({ description: "The ad platform's own ad id" }) }
