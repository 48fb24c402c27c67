/**
 * Recommendations (decision 0072): generated from the profile's analytics, each with the rule it
 * came from (`rule: {id, thresholds, inputs}`), its target and the proposed action.
 */
import { Schema } from "effect"
import { ActionEntry } from "./ad-actions.ts"
import { Page, PageQuery } from "./common.ts"
import { Rule } from "./creative-analysis.ts"

export const RecommendationStatus = Schema.Literals(["open", "dismissed", "applied", "expired"])
export type RecommendationStatus = typeof RecommendationStatus.Type

export const Recommendation = Schema.Struct({
  id: Schema.String,
  status: RecommendationStatus,
  rule: Rule,
  target: Schema.Struct({
    level: Schema.Literals(["campaign", "ad_set", "ad"]),
    /** The ad platform's own id. */
    platform_id: Schema.String,
    name: Schema.NullOr(Schema.String)
  }),
  action: Schema.Struct({
    /** `pause` the target, or set its daily `budget`. */
    type: Schema.Literals(["pause", "budget"]),
    /** Minor units of the ad account's currency; set for `budget` (within +/-50 % of the previous). */
    previous_daily_budget_minor: Schema.NullOr(Schema.Int),
    new_daily_budget_minor: Schema.NullOr(Schema.Int)
  }),
  /** The ad action that applied it (status `applied`). */
  action_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  dismissed_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Recommendation" })
export type Recommendation = typeof Recommendation.Type

export const RecommendationsQuery = {
  ...PageQuery,
  status: Schema.optionalKey(RecommendationStatus.annotate({ description: "Only recommendations in this status" }))
}

export const RecommendationPage = Page(Recommendation)
export type RecommendationPage = typeof RecommendationPage.Type

export const RecommendationBody = Schema.Struct({ data: Recommendation }).annotate({ identifier: "RecommendationBody" })
export type RecommendationBody = typeof RecommendationBody.Type

export const RecommendationParams = { id: Schema.String.annotate({ description: "The recommendation id" }) }

/** The apply body: the person on record (decision 0069; defaults in decision 0087). */
export const ApplyRecommendation = Schema.Struct({
  applied_by: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100)).annotate({
    description: "The user id of the workspace owner or admin on record; defaults as decision 0087 says"
  }))
}).annotate({ identifier: "ApplyRecommendation" })
export type ApplyRecommendation = typeof ApplyRecommendation.Type

/** The applied recommendation and the ad-action ledger entry that applied it (roll back with its `action_id`). */
export const RecommendationApplied = Schema.Struct({
  data: Schema.Struct({ recommendation: Recommendation, action: ActionEntry })
}).annotate({ identifier: "RecommendationApplied" })
export type RecommendationApplied = typeof RecommendationApplied.Type
