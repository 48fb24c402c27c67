/**
 * Experiments over HTTP (decision 0122): reads and the design need `analytics:read`; create,
 * start and stop change what is delivered and need `campaigns:apply` (the ad actions' scope)
 * with the attribution entitlement, and take an optional `Idempotency-Key`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CreateExperiment,
  DesignBody,
  DesignRequest,
  ExperimentBody,
  ExperimentCreated,
  ExperimentIdParams,
  ExperimentPage,
  ExperimentResultsBody,
  ExperimentsQuery,
  StopExperiment
} from "../../schema/experiments.ts"
import {
  AdplatformConnectionRequired,
  AdplatformWritePermissionMissing,
  EntitlementRequired,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  InvalidParameter,
  InvalidState,
  profileErrors,
  ServiceUnavailable,
  ValidationError
} from "../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

const read = policy({ scopes: ["analytics:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
const write = policy({
  scopes: ["campaigns:apply"],
  auth: PROFILE_PRINCIPALS,
  grain: "profile",
  idempotency: "optional",
  entitlement: "svc_attribution"
})

const writeErrors = [...profileErrors, EntitlementRequired.wire, IdempotencyKeyConflict.wire, IdempotencyKeyInFlight.wire] as const
const entityErrors = [...profileErrors, InvalidState.wire, ServiceUnavailable.wire] as const

export const ExperimentsApi = HttpApiGroup.make("experiments")
  .add(
    HttpApiEndpoint.post("createExperiment", "/experiments", {
      payload: CreateExperiment,
      success: ExperimentCreated,
      error: [...writeErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Create an experiment as a draft: audience_holdout, switchback or pre_post")
      .annotate(
        OpenApi.Description,
        "`audience_holdout` needs `holdout_fraction` (0.01 to 0.5) and no `target`, and may name the campaign (or ad " +
          "set) delivering to the audience as `spend_target` (its spend gives the results' `incremental_roas`); `switchback` needs a `target` " +
          "(campaign or ad set) and gets a seeded schedule of whole days on and off in `config.schedule`; `pre_post` " +
          "needs a campaign `target` and fits `pre_days` (default 28) before the window. A `design` is computed from the " +
          "profile's history and stored; a window that cannot reach it is accepted with `window_too_short` in " +
          "`design.warnings`. Any other mismatch is 400 `validation_error` and nothing is written."
      )
      .annotateMerge(write),
    HttpApiEndpoint.get("listExperiments", "/experiments", {
      query: ExperimentsQuery,
      success: ExperimentPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "The profile's experiments, oldest first, paged by cursor")
      .annotate(OpenApi.Description, "Every experiment of the profile in any state, oldest first; `limit` 1 to 100 (default 50), `cursor` from the previous page.")
      .annotateMerge(read),
    HttpApiEndpoint.post("designExperiment", "/experiments/design", {
      payload: DesignRequest,
      success: DesignBody,
      error: [...profileErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Power analysis from the profile's history: customers per group or days needed; writes nothing")
      .annotate(
        OpenApi.Description,
        "For a metric, a minimum detectable effect (relative by default), confidence (default 0.95) and power (default " +
          "0.8): `required_sample` (holdout: customers per group) or `required_days` (switchback, pre_post), from the last " +
          "`history_days` (default the window's length, else 28; pre_post 180) whole days. A pre_post needs its campaign " +
          "`target` (and takes `pre_days`, default 28): at every day of the history the synthetic control is fitted on the " +
          "`pre_days` before it, as the results will be, and the root mean square of these in-time placebo errors of a " +
          "post total of L days gives the fewest L with L × effect ≥ (z₁₋α/₂ + z_power) × error (`placebo` reports them). " +
          "`warnings`: `no_history`, `window_too_short`, `list_too_small`, `history_too_short` (a pre_post whose history " +
          "measures no post window, with at least 10 placebos, long enough to reach the power)."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("getExperiment", "/experiments/:id", {
      params: ExperimentIdParams,
      success: ExperimentBody,
      error: entityErrors
    })
      .annotate(OpenApi.Summary, "One experiment; a running one whose window is over is completed first (window_ended)")
      .annotate(
        OpenApi.Description,
        "The experiment with its state, reason, metric, window, config (a switchback's schedule of days on and off) and " +
          "stored design. Read through the experiment's entity: a running experiment whose last day is over answers " +
          "`completed` with `status_reason: window_ended`. A switchback's `execution`: per schedule day the plan and, once " +
          "applied, when and by which ad action (`action_id`, its ledger entry), the restore, and the ad actions that " +
          "failed (retried by the day tick); an audience_holdout's `exclusion.uploads`: each customer-list upload that " +
          "left its held-out customers out."
      )
      .annotateMerge(read),
    HttpApiEndpoint.post("startExperiment", "/experiments/:id/start", {
      params: ExperimentIdParams,
      success: ExperimentBody,
      error: [...writeErrors, InvalidState.wire, ServiceUnavailable.wire, AdplatformConnectionRequired.wire, AdplatformWritePermissionMissing.wire]
    })
      .annotate(OpenApi.Summary, "Start a draft; 409 invalid_state otherwise (not_draft, overlapping_experiment)")
      .annotate(
        OpenApi.Description,
        "Only a draft starts (else 409 `invalid_state`, `reason: not_draft`). One experiment runs per target (the customer " +
          "list, or a campaign or ad set): another running on it is 409 `invalid_state`, `reason: overlapping_experiment`, " +
          "its id in the message. A switchback pauses and resumes its target through the ad actions: without a usable " +
          "ad-platform connection it is 409 `adplatform_connection_required`, without the manage-ads grant 403 " +
          "`adplatform_write_permission_missing`, and it stays a draft. Starts, stops and results reads of one " +
          "experiment run one after the other."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("stopExperiment", "/experiments/:id/stop", {
      params: ExperimentIdParams,
      payload: StopExperiment,
      success: ExperimentBody,
      error: [...writeErrors, InvalidState.wire, ServiceUnavailable.wire, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Stop a running experiment: window_ended completes it, early_stop or invalidated stop it")
      .annotate(
        OpenApi.Description,
        "`reason: window_ended` completes it once its window's last day is over (before: 409 `invalid_state`, " +
          "`window_not_ended`); `early_stop` and `invalidated` stop it at once. Anything but a running experiment is 409 " +
          "`invalid_state` (`not_running`), nothing changed."
      )
      .annotateMerge(write),
    HttpApiEndpoint.get("experimentResults", "/experiments/:id/results", {
      params: ExperimentIdParams,
      success: ExperimentResultsBody,
      error: entityErrors
    })
      .annotate(OpenApi.Summary, "Lift with its 95 % interval, or insufficient_data with a reason; the method and failed checks")
      .annotate(
        OpenApi.Description,
        "Computed at read over the window's whole days so far (interim while running). A draft is 409 `invalid_state` " +
          "(`experiment_draft`). Holdout: exposed against held-out customers (Newcombe for counts, a seeded bootstrap for " +
          "value) with a sample-ratio check; switchback: OLS of daily outcomes on on/off with day-of-week controls (HC1); " +
          "pre_post: a synthetic control of the other campaigns with its pre-period fit. Incremental ROAS (measure " +
          "`value`): `incremental_roas` is `incremental_value` over `spend`, the target's imported or synced ad spend on the " +
          "treatment days in the profile's currency (switchback: the analysed on days; pre_post: the analysed post days; " +
          "audience_holdout: the analysed days of its optional `spend_target`), its interval the value interval's bounds " +
          "over that spend. Without it `incremental_roas` is null and `incremental_roas_unavailable.reason` says why: " +
          "`no_spend_target`, `spend_unknown`, `fx_rate_missing`, `no_spend_in_treatment`, `metric_is_count` or " +
          "`insufficient_data`."
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Experiments: measured lift (audience holdouts, switchbacks, pre/post)")
