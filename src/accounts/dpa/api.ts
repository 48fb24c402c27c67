import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AcceptAgreement,
  AppDpaBody,
  AppDpaChanged,
  ProfileAgreementsBody,
  ProfileAgreementsChanged
} from "../../../schema/dpa.ts"
import {
  DatabaseUnavailable,
  InsufficientScope,
  InvalidState,
  NotFound,
  Unauthorized,
  ValidationError
} from "../../../schema/errors.ts"
import { policy } from "../../http/policy.ts"

/**
 * Accepting and withdrawing is a person's act in the console: session only. An API key, a user
 * token or an app credential is refused by the policy (403 `insufficient_scope`). The profile
 * sits in the path, so the grain is not `profile` (which names it with `?profile_id=`).
 */
const consoleOnly = policy({ scopes: [], auth: ["session"], idempotency: "optional", grain: "none" })
const consoleRead = policy({ scopes: [], auth: ["session"], idempotency: "none", grain: "none" })
const profileRead = policy({ scopes: [], auth: ["session", "api_key", "app_client"], idempotency: "none", grain: "none" })

const app = { appId: Schema.String }
const profile = { profileId: Schema.String }

const readErrors = [Unauthorized.wire, InsufficientScope.wire, NotFound.wire, DatabaseUnavailable.wire]
const acceptErrors = [...readErrors, ValidationError.wire]
const withdrawErrors = [...readErrors, InvalidState.wire]

/** The DPA status table (app level and profile level) and the profile's BAA. Decision 0024. */
export const DpaApi = HttpApiGroup.make("dpa")
  .add(
    HttpApiEndpoint.get("getAppDpa", "/oauth-apps/:appId/dpa", { params: app, success: AppDpaBody, error: readErrors })
      .annotate(OpenApi.Summary, "An OAuth app's DPA, for the owner or admin of its owner workspace")
      .annotateMerge(consoleRead),
    HttpApiEndpoint.post("acceptAppDpa", "/oauth-apps/:appId/dpa/accept", {
      params: app,
      payload: AcceptAgreement,
      success: AppDpaChanged,
      error: acceptErrors
    })
      .annotate(
        OpenApi.Summary,
        "Accept the DPA for the app: every profile it provisioned, and every later one, reads accepted"
      )
      .annotateMerge(consoleOnly),
    HttpApiEndpoint.post("withdrawAppDpa", "/oauth-apps/:appId/dpa/withdraw", {
      params: app,
      success: AppDpaChanged,
      error: withdrawErrors
    })
      .annotate(OpenApi.Summary, "Withdraw the app's DPA: inherited profiles return to withdrawn")
      .annotateMerge(consoleOnly),
    HttpApiEndpoint.get("getProfileAgreements", "/profiles/:profileId/dpa", {
      params: profile,
      success: ProfileAgreementsBody,
      error: readErrors
    })
      .annotate(OpenApi.Summary, "A profile's effective DPA (own or inherited from its provisioning app), its BAA and export hold")
      .annotateMerge(profileRead),
    HttpApiEndpoint.post("acceptProfileDpa", "/profiles/:profileId/dpa/accept", {
      params: profile,
      payload: AcceptAgreement,
      success: ProfileAgreementsChanged,
      error: acceptErrors
    })
      .annotate(OpenApi.Summary, "The profile's own owner or admin accepts its DPA")
      .annotateMerge(consoleOnly),
    HttpApiEndpoint.post("withdrawProfileDpa", "/profiles/:profileId/dpa/withdraw", {
      params: profile,
      success: ProfileAgreementsChanged,
      error: withdrawErrors
    })
      .annotate(OpenApi.Summary, "Withdraw the profile's own DPA acceptance")
      .annotateMerge(consoleOnly),
    HttpApiEndpoint.post("acceptProfileBaa", "/profiles/:profileId/baa/accept", {
      params: profile,
      payload: AcceptAgreement,
      success: ProfileAgreementsChanged,
      error: acceptErrors
    })
      .annotate(OpenApi.Summary, "The profile's own owner or admin accepts its BAA (needed for hipaa exports)")
      .annotateMerge(consoleOnly),
    HttpApiEndpoint.post("withdrawProfileBaa", "/profiles/:profileId/baa/withdraw", {
      params: profile,
      success: ProfileAgreementsChanged,
      error: withdrawErrors
    })
      .annotate(OpenApi.Summary, "Withdraw the profile's BAA acceptance")
      .annotateMerge(consoleOnly)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Data-processing and business-associate agreements")
