import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DatabaseUnavailable, ValidationError } from "../../../schema/errors.ts"
import { QuickstartCreated, QuickstartRequest } from "../../../schema/people.ts"
import { policy } from "../../http/policy.ts"

/** The operator's quickstart (decision 0053); what `npm run cli -- quickstart` calls while the service runs. */
export const OnboardingApi = HttpApiGroup.make("onboarding")
  .add(
    HttpApiEndpoint.post("quickstart", "/quickstart", {
      payload: QuickstartRequest,
      success: QuickstartCreated,
      error: [ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A ready account: person, workspace, profile, tracking key, purchase definition and a new API key")
      .annotate(
        OpenApi.Description,
        "Finds and reuses the person (default you@example.com), their Quickstart workspace and profile, its tracking key " +
          "(this service's origin allowed) and the `purchase` definition; mints a new API key each call (shown once; earlier " +
          "ones stay valid). `sign_in_url` is a one-time set-password link."
      )
      .annotateMerge(policy({ scopes: [], auth: ["operator"], idempotency: "none", grain: "none" }))
  )
  .prefix("/api/v1/admin")
  .annotate(OpenApi.Description, "Operator surface: quickstart")
