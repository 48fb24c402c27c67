/** `GET /api/v1/me`: who the credential is. */
import { Schema } from "effect"
import { ProfileRole, WorkspaceRole } from "./members.ts"

export const Me = Schema.Union([
  Schema.Struct({
    kind: Schema.Literal("app_client"),
    app: Schema.Struct({ id: Schema.String, client_id: Schema.String, name: Schema.String, rate_tier: Schema.String }),
    /** Origins a hand-off `return_url` may use: the app's effective return origins. */
    return_url_supported: Schema.Array(Schema.String)
  }),
  Schema.Struct({
    kind: Schema.Literal("api_key"),
    key: Schema.Struct({
      id: Schema.String,
      profile_id: Schema.String,
      workspace_id: Schema.String,
      scopes: Schema.Array(Schema.String),
      rate_limit_per_minute: Schema.Int,
      oauth_app_id: Schema.NullOr(Schema.String)
    })
  }),
  Schema.Struct({
    kind: Schema.Literal("session"),
    user: Schema.Struct({
      id: Schema.String,
      email: Schema.String,
      first_name: Schema.NullOr(Schema.String),
      last_name: Schema.NullOr(Schema.String)
    })
  })
]).annotate({ identifier: "Me" })
export type Me = typeof Me.Type

export const MeBody = Schema.Struct({ data: Me })

/**
 * `GET /api/v1/me/profiles`: the live profiles a signed-in person reaches (issue 33; the
 * console's profile switcher), each with what the person may do there. `scopes` is what a
 * profile-grain call with `?profile_id=` would be allowed: a client hides what it cannot use.
 */
export const MyProfile = Schema.Struct({
  profile_id: Schema.String,
  name: Schema.String,
  workspace_id: Schema.String,
  workspace_name: Schema.String,
  currency: Schema.NullOr(Schema.String),
  time_zone: Schema.String,
  workspace_role: WorkspaceRole,
  profile_role: Schema.NullOr(ProfileRole),
  scopes: Schema.Array(Schema.String)
}).annotate({ identifier: "MyProfile" })
export type MyProfile = typeof MyProfile.Type

export const MyProfilesBody = Schema.Struct({ data: Schema.Array(MyProfile) })
