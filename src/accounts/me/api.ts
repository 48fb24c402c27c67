import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DatabaseUnavailable, Unauthorized } from "../../../schema/errors.ts"
import { MeBody, MyProfilesBody } from "../../../schema/me.ts"
import { policy } from "../../http/policy.ts"

/** The `/api/v1/me` subtree: never reachable with a user token. */
export const MeApi = HttpApiGroup.make("me")
  .add(
    HttpApiEndpoint.get("getMe", "/me", { success: MeBody, error: [Unauthorized.wire, DatabaseUnavailable.wire] })
      .annotate(OpenApi.Summary, "Who this credential is; for an app, return_url_supported lists its return origins")
      .annotateMerge(policy({ scopes: [], auth: ["app_client", "session", "api_key"], idempotency: "none", grain: "none" })),
    HttpApiEndpoint.get("listMyProfiles", "/me/profiles", { success: MyProfilesBody, error: [Unauthorized.wire, DatabaseUnavailable.wire] })
      .annotate(
        OpenApi.Summary,
        "The profiles the signed-in person reaches, with their workspace, their role there and the scopes a call with ?profile_id= would hold"
      )
      .annotateMerge(policy({ scopes: [], auth: ["session"], idempotency: "none", grain: "none" }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "The caller")
