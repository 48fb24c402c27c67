/**
 * Ad actions on the wire (api-endpoints.md "Ad actions", api-concepts.md "Action ledger entry"
 * and the "Ad, ad set, campaign status" table; decisions 0068-0070). Budgets are integer minor
 * units of the ad account's currency; ids in paths are the ad platform's own ids.
 */
import { Schema } from "effect"

export const PlatformIdParams = {
  id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)).annotate({
    description: "The ad platform's own id of the ad, ad set or campaign (as `platform_id` shows it)"
  })
}
export const ActionIdParams = {
  action_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)).annotate({
    description: "The `action_id` of an ad-action ledger entry, as the write answered it"
  })
}

export const AppliedByBasis = Schema.Literals(["applied_by", "person", "app_shadow_owner"])
export type AppliedByBasis = typeof AppliedByBasis.Type

export const ObjectStatus = Schema.Literals(["active", "paused", "archived", "deleted"])

/** What the ad platform showed just before the write. */
export const PreState = Schema.Struct({
  status: ObjectStatus,
  daily_budget_minor: Schema.NullOr(Schema.Int),
  lifetime_budget_minor: Schema.NullOr(Schema.Int)
})
export type PreState = typeof PreState.Type

/** A call that undoes an action (the campaign resume, or the rollback route). */
export const UndoCall = Schema.Struct({ method: Schema.Literal("POST"), path: Schema.String })

/** A URL-tag change (or its rollback) moves the ad from one creative to another. */
export const CreativeChange = Schema.Struct({
  /** The creative the ad carried before the call. */
  previous_creative_id: Schema.NullOr(Schema.String),
  /** The creative the call put the ad on; null when nothing was written. */
  creative_id: Schema.NullOr(Schema.String)
})

/** One action ledger entry, as every ad-action write answers it. */
export const ActionEntry = Schema.Struct({
  action_id: Schema.String,
  level: Schema.Literals(["ad", "ad_set", "campaign"]),
  object_id: Schema.String,
  /** `url_tags`: the ad's URL tags were set (a new creative, decision 0088). */
  action: Schema.Literals(["pause", "resume", "budget", "rollback", "url_tags"]),
  /** `applied`: written; `no_change`: already so, nothing written; `not_reversible`: refused rollback. */
  outcome: Schema.Literals(["applied", "no_change", "not_reversible"]),
  /** The object's status after the call, as the service left it. */
  status: ObjectStatus,
  affected_ads_count: Schema.NullOr(Schema.Int),
  rollback_of: Schema.NullOr(Schema.String),
  reason_code: Schema.NullOr(Schema.Literal("state_drifted")),
  applied_by_basis: Schema.NullOr(AppliedByBasis),
  pre_state: PreState,
  undo: Schema.NullOr(UndoCall),
  /** Present on URL-tag changes and their rollbacks only. */
  creative: Schema.optionalKey(CreativeChange),
  created_at: Schema.String
})
export type ActionEntry = typeof ActionEntry.Type

/** What a pause, resume or rollback answers: the ledger entry in `data` (api-concepts.md, Conventions). */
export const ActionEntryBody = Schema.Struct({ data: ActionEntry })

const Minor = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(1_000_000_000_000))

/** Exactly one of the two budget fields (the handler says which is missing or doubled). */
export const BudgetChange = Schema.Struct({
  new_daily_budget_minor: Schema.optionalKey(Minor),
  new_lifetime_budget_minor: Schema.optionalKey(Minor),
  /** The person on record (a user id); see decision 0069 for the defaults. */
  applied_by: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100)))
})
export type BudgetChange = typeof BudgetChange.Type

export const BudgetAnswer = Schema.Struct({
  ...ActionEntry.fields,
  budget_type: Schema.Literals(["daily", "lifetime"]),
  previous_budget_minor: Schema.Int,
  budget_minor: Schema.Int,
  applied_by: Schema.String
})
export type BudgetAnswer = typeof BudgetAnswer.Type

export const BudgetAnswerBody = Schema.Struct({ data: BudgetAnswer })

export const ActionAvailability = Schema.Struct({
  available: Schema.Boolean,
  /** Why not, when not available (`already_paused`, `not_active`, `archived`, `no_campaign_budget`, ...); null when available. */
  reason: Schema.NullOr(Schema.String)
})

export const CampaignStatus = Schema.Struct({
  campaign_id: Schema.String,
  name: Schema.String,
  status: ObjectStatus,
  daily_budget_minor: Schema.NullOr(Schema.Int),
  lifetime_budget_minor: Schema.NullOr(Schema.Int),
  /** Active ads a pause would stop. */
  ads_a_pause_would_stop: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String })),
  /** Spend per day of the last 7 days (account time zone), null when the platform could not be read for it. */
  recent_daily_spend: Schema.NullOr(Schema.Array(Schema.Struct({ date: Schema.String, spend_minor: Schema.Int }))),
  actions: Schema.Struct({ pause: ActionAvailability, resume: ActionAvailability, budget: ActionAvailability }),
  /** Derive the Idempotency-Key of a follow-up write from it; it changes when the live state changes (decision 0070). */
  confirm_token: Schema.String
})
export type CampaignStatus = typeof CampaignStatus.Type

export const CampaignStatusBody = Schema.Struct({ data: CampaignStatus })
