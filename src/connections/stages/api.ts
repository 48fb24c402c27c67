/**
 * `GET /api/v1/connections/{provider}/stages` (routes.tsv, Connections; decision 0060): the
 * connected CRM's pipeline stages with the suggested and current outcome mapping of each.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PipelineStagesBody, StagesQuery } from "../../../schema/connections-stages.ts"
import {
  AdplatformUnavailable,
  DatabaseUnavailable,
  InvalidParameter,
  InvalidRequest,
  InvalidState,
  NotFound,
  RateLimitExceeded
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

export const ConnectionStagesApi = HttpApiGroup.make("connectionStages")
  .add(
    HttpApiEndpoint.get("listPipelineStages", "/connections/:provider/stages", {
      params: { provider: Schema.String },
      query: StagesQuery,
      success: PipelineStagesBody,
      error: [
        NotFound.wire,
        InvalidParameter.wire,
        InvalidRequest.wire,
        InvalidState.wire,
        RateLimitExceeded.wire,
        AdplatformUnavailable.wire,
        DatabaseUnavailable.wire
      ]
    })
      .annotate(
        OpenApi.Summary,
        "The connected CRM's pipeline stages (?locale=en|es): per stage the suggested outcome, the current mapping and whether it is writable"
      )
      .annotate(
        OpenApi.Description,
        "For the `crm` provider only (any other provider is 404). Stages are read live from the CRM. A stage is mapped " +
          "through the outcome-definition routes: a definition whose `event_names` lists the stage's `event_name` " +
          "(`crm.stage.<stage id>`) owns it and `current.source` is `user` (the outcome is a `pipeline_stage` definition's " +
          "`event_key`, or an `event` definition's `conversion_key`); otherwise the suggestion is in force (`suggested`), " +
          "or, with none, nothing is recorded (`engine_default`). Suggestions are among `outcomes` (the keys of " +
          "`GET /api/v1/profile/outcome-definitions`): a won stage a payment or sale-like key, an appointment stage an " +
          "appointment-like key. `can_write` says whether the caller holds `goals:write`; a stage's `writable` also is " +
          "false on `lost` stages. `status`: `not_connected` (`next_step` `connect_crm`), `reconnect_required` " +
          "(`reconnect_crm`; also when the CRM says the grant is dead during this read), `unmapped` (a won stage records " +
          "nothing; `map_stages`) or `ready`. A throttled CRM is 429 `rate_limit_exceeded` with `Retry-After`; an " +
          "unreachable or refusing one 502 `adplatform_unavailable` with `provider: crm`; a grant lacking the pipelines " +
          "permission 409 `invalid_state` (`permission_missing`). `locale` other than `en` or `es` is 400 " +
          "`invalid_parameter`. Decision 0060."
      )
      .annotateMerge(policy({
        scopes: ["connections:read", "analytics:read"],
        scopeMode: "any",
        auth: PROFILE_PRINCIPALS,
        idempotency: "none",
        grain: "profile"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "CRM pipeline stages")
