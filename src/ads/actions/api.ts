/**
 * Ad actions over HTTP (routes.tsv "Ad actions"; api-endpoints.md rules 1-4): writes need
 * `campaigns:apply`, an `Idempotency-Key` (required) and, on an app-provisioned profile, the
 * attribution add-on; the campaign status read needs `campaigns:read`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ActionEntryBody, ActionIdParams, BudgetAnswerBody, BudgetChange, CampaignStatusBody, PlatformIdParams } from "../../../schema/ad-actions.ts"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  AdsetNotEditable,
  BudgetChangeOutOfBounds,
  CampaignNotEditable,
  CampaignNotPausable,
  CampaignNotResumable,
  EntitlementRequired,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  ServiceUnavailable,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const apply = policy({
  scopes: ["campaigns:apply"],
  auth: PROFILE_PRINCIPALS,
  idempotency: "required",
  grain: "profile",
  entitlement: "svc_attribution"
})
const read = policy({ scopes: ["campaigns:read"], auth: PROFILE_PRINCIPALS, idempotency: "none", grain: "profile" })

const platformErrors = [
  ...profileErrors,
  AdplatformConnectionRequired.wire,
  AdplatformWritePermissionMissing.wire,
  AdplatformUnavailable.wire,
  RateLimitExceeded.wire,
  ServiceUnavailable.wire
] as const
const writeErrors = [
  ...platformErrors,
  EntitlementRequired.wire,
  IdempotencyKeyConflict.wire,
  IdempotencyKeyInFlight.wire,
  ValidationError.wire,
  InvalidState.wire
] as const
/**
 * Every write answers the same catalogue: the entity that runs them is shared (one error
 * schema), and a rollback can end in any refusal of the write it undoes.
 */
export const actionErrors = [
  ...writeErrors,
  BudgetChangeOutOfBounds.wire,
  wireUnprocessable,
  AdsetNotEditable.wire,
  CampaignNotEditable.wire,
  CampaignNotPausable.wire,
  CampaignNotResumable.wire
] as const

export const AdActionsApi = HttpApiGroup.make("adActions")
  .add(
    HttpApiEndpoint.post("pauseAd", "/ads/:id/pause", { params: PlatformIdParams, success: ActionEntryBody, error: actionErrors })
      .annotate(OpenApi.Summary, "Pause an ad (its ad platform id); already paused answers outcome no_change with no write")
      .annotate(
        OpenApi.Description,
        "Pauses the ad on the ad platform and answers the ledger entry (`action_id`, `pre_state`, the undo " +
          "call). An ad already paused answers `outcome: no_change` and nothing is written; an archived or " +
          "deleted ad is 409 `invalid_state`. Refused before any write: no usable ad-platform connection (409 " +
          "`adplatform_connection_required`, whatever the id), an ad the connection does not show on the profile's " +
          "accounts (404), no manage-ads grant (403 `adplatform_write_permission_missing`)."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.post("resumeAd", "/ads/:id/resume", { params: PlatformIdParams, success: ActionEntryBody, error: actionErrors })
      .annotate(OpenApi.Summary, "Resume an ad; already active answers outcome no_change; archived or deleted is 409 invalid_state")
      .annotate(
        OpenApi.Description,
        "Resumes the ad; an active ad answers `outcome: no_change` with no write; an archived or deleted ad " +
          "is 409 `invalid_state`. Same refusals and ledger entry as the pause."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.post("adSetBudget", "/adsets/:id/budget", {
      params: PlatformIdParams,
      payload: BudgetChange,
      success: BudgetAnswerBody,
      error: actionErrors
    })
      .annotate(OpenApi.Summary, "Change an ad set's daily or lifetime budget: +/-50 % of the live budget, floor 100, a person on record")
      .annotate(
        OpenApi.Description,
        "Send exactly one of `new_daily_budget_minor` and `new_lifetime_budget_minor` (minor units of the ad " +
          "account's currency). The live budget is read first: outside +/-50 % of it or below 100 is 422 " +
          "`budget_change_out_of_bounds` and nothing is sent; an ad set whose campaign owns the budget, or a " +
          "field that is not the ad set's budget type, is 409 `invalid_state`; an archived or deleted ad set " +
          "(or campaign) is 409 `adset_not_editable`; a budget the platform refuses under its own minimum is " +
          "422 `validation_error`. `applied_by` names the person on record (decision 0069). Writes to one ad " +
          "set run one after the other."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.get("campaignStatus", "/campaigns/:id/status", { params: PlatformIdParams, success: CampaignStatusBody, error: [...platformErrors, ...actionErrors] })
      .annotate(
        OpenApi.Summary,
        "Live status, ads a pause would stop, budget, recent daily spend, each action's availability, and a confirm_token"
      )
      .annotate(
        OpenApi.Description,
        "Derive the Idempotency-Key of the follow-up write from `confirm_token` (for instance `<confirm_token>:pause`): it " +
          "changes when the campaign's live state changes, so a confirmation given on a stale view is a new request."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("pauseCampaign", "/campaigns/:id/pause", {
      params: PlatformIdParams,
      success: ActionEntryBody,
      error: actionErrors
    })
      .annotate(OpenApi.Summary, "Pause a campaign in one write; answers affected_ads_count, action_id and the undo call")
      .annotate(
        OpenApi.Description,
        "One status write on the campaign; `affected_ads_count` counts the active ads in active ad sets it " +
          "stops; `undo` is the campaign resume. A paused campaign answers `outcome: no_change`; an archived " +
          "or deleted one is 409 `campaign_not_pausable`."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.post("resumeCampaign", "/campaigns/:id/resume", {
      params: PlatformIdParams,
      success: ActionEntryBody,
      error: actionErrors
    })
      .annotate(OpenApi.Summary, "Resume a campaign (no_change when active); after a service pause it is that pause's undo (rollback_of)")
      .annotate(
        OpenApi.Description,
        "Sets the campaign active. After a pause made through the service, the entry's `rollback_of` names " +
          "that pause; ads paused on their own stay paused. An active campaign answers `outcome: no_change`; " +
          "an archived or deleted one is 409 `campaign_not_resumable`."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.post("campaignBudget", "/campaigns/:id/budget", {
      params: PlatformIdParams,
      payload: BudgetChange,
      success: BudgetAnswerBody,
      error: actionErrors
    })
      .annotate(OpenApi.Summary, "Change a campaign's own (campaign-level) daily or lifetime budget: +/-50 %, floor 100, a person on record")
      .annotate(
        OpenApi.Description,
        "Only a campaign that owns its budget (campaign-level budget) can change it: otherwise, or when " +
          "archived or deleted, 409 `campaign_not_editable`. Same bounds, person on record and ledger entry as " +
          "the ad-set budget."
      )
      .annotateMerge(apply),
    HttpApiEndpoint.post("rollbackAction", "/conversion-sync/actions/:action_id/rollback", {
      params: ActionIdParams,
      success: ActionEntryBody,
      error: actionErrors
    })
      .annotate(
        OpenApi.Summary,
        "Restore an ad action's pre-state while the object still carries what it wrote; else outcome not_reversible (state_drifted), nothing written"
      )
      .annotate(
        OpenApi.Description,
        "Reads the object live: when it still carries what the ledger row wrote (status or budget), the row's `pre_state` is " +
          "written back and a `rollback` entry with `rollback_of` is answered; otherwise the answer is 200 `outcome: not_reversible` " +
          "with `reason_code: state_drifted` and nothing is written. Only an applied pause, resume or budget change can be rolled " +
          "back (else 409 `invalid_state`)."
      )
      .annotateMerge(apply)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Ad actions: pause, resume, budgets, rollback")
