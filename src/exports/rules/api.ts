/** Export rules over HTTP (routes.tsv "Conversion sync"; decision 0074). */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { EntitlementRequired, InvalidParameter, InvalidState, profileErrors, ValidationError, wireUnprocessable } from "../../../schema/errors.ts"
import { CreateRule, RuleCreated, RuleEnvelope, RuleIdParams, RulePage, RulesQuery, UpdateRule } from "../../../schema/exports.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["exports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency, entitlement: "svc_attribution" })
const OVERRIDES =
  "`platform_event_name_overrides` keys: `adplatform_capi` (the website event name) and `adplatform_capi_messaging` (one of the " +
  "platform's messaging names such as `LeadSubmitted`, `QualifiedLead`, `Purchase`, or null to keep the rule off that lane); any " +
  "other key or messaging name is 422 `validation_error`."

export const ExportRulesApi = HttpApiGroup.make("exportRules")
  .add(
    HttpApiEndpoint.get("listRules", "/exports/rules", { query: RulesQuery, success: RulePage, error: [...profileErrors, InvalidParameter.wire] })
      .annotate(OpenApi.Summary, "The profile's export rules, oldest first (keyset cursor)")
      .annotate(OpenApi.Description, "One rule per conversion key: which destinations it reaches (null: all) and the platform's event names.")
      .annotateMerge(policy({ scopes: ["exports:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.post("createRule", "/exports/rules", {
      payload: CreateRule,
      success: RuleCreated,
      error: [...profileErrors, ValidationError.wire, wireUnprocessable, InvalidState.wire, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "Create the export rule of a conversion key")
      .annotate(OpenApi.Description, `${OVERRIDES} A second rule for the same conversion key is 409 \`invalid_state\`.`)
      .annotateMerge(write("optional")),
    HttpApiEndpoint.patch("updateRule", "/exports/rules/:id", {
      params: RuleIdParams,
      payload: UpdateRule,
      success: RuleEnvelope,
      error: [...profileErrors, ValidationError.wire, wireUnprocessable, EntitlementRequired.wire]
    })
      .annotate(OpenApi.Summary, "Edit an export rule: destinations, event-name overrides, enabled")
      .annotate(OpenApi.Description, `${OVERRIDES} Sent overrides replace the stored ones whole.`)
      .annotateMerge(write("none"))
  )
  .prefix("/api/v1")
