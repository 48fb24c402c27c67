/** Operator surface: OAuth apps and commerce apps (`/api/v1/admin/*`, `SVC_ADMIN_TOKEN`). */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, RedirectUri, Uuid, WebOrigin } from "./common.ts"

export const ProfileResolution = Schema.Literals(["email", "external_ref"])
export const RateTier = Schema.Literals(["standard", "elevated", "internal"])
export const DpaStatus = Schema.Literals(["not_accepted", "accepted", "withdrawn"])

const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const RedirectUris = Schema.Array(RedirectUri).check(Schema.isMinLength(1), Schema.isMaxLength(20))
const ReturnOrigins = Schema.Array(WebOrigin).check(Schema.isMaxLength(20))

export const CreateOAuthApp = Schema.Struct({
  name: Name,
  redirect_uris: RedirectUris,
  allowed_return_origins: Schema.optionalKey(ReturnOrigins),
  profile_resolution: Schema.optionalKey(ProfileResolution),
  rate_tier: Schema.optionalKey(RateTier),
  owner_workspace_id: Schema.optionalKey(Schema.NullOr(Uuid))
})
export type CreateOAuthApp = typeof CreateOAuthApp.Type

export const UpdateOAuthApp = Schema.Struct({
  name: Schema.optionalKey(Name),
  redirect_uris: Schema.optionalKey(RedirectUris),
  allowed_return_origins: Schema.optionalKey(ReturnOrigins),
  profile_resolution: Schema.optionalKey(ProfileResolution),
  rate_tier: Schema.optionalKey(RateTier),
  owner_workspace_id: Schema.optionalKey(Schema.NullOr(Uuid))
})
export type UpdateOAuthApp = typeof UpdateOAuthApp.Type

/** An app's settings as every read shows them: never the secret hash nor a signing secret. */
export const OAuthApp = Schema.Struct({
  id: Uuid,
  name: Schema.String,
  client_id: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  allowed_return_origins: Schema.Array(Schema.String),
  effective_return_origins: Schema.Array(Schema.String),
  profile_resolution: ProfileResolution,
  rate_tier: RateTier,
  owner_workspace_id: Schema.NullOr(Uuid),
  dpa_status: DpaStatus,
  dpa_version: Schema.NullOr(Schema.String),
  dpa_accepted_at: Schema.NullOr(Schema.String),
  dpa_accepted_by: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "OAuthApp" })
export type OAuthApp = typeof OAuthApp.Type

/** Create answers the settings plus both secrets, shown this once. */
export const CreatedOAuthApp = Schema.Struct({
  data: Schema.Struct({ ...OAuthApp.fields, client_secret: Schema.String, jwt_secret: Schema.String })
}).pipe(HttpApiSchema.status(201))

export const OAuthAppBody = Schema.Struct({ data: OAuthApp })
export const OAuthAppPage = Page(OAuthApp)

export const RotatedClientSecret = Schema.Struct({
  data: Schema.Struct({ id: Uuid, client_id: Schema.String, client_secret: Schema.String })
})
export const RotatedJwtSecret = Schema.Struct({ data: Schema.Struct({ id: Uuid, jwt_secret: Schema.String }) })
export const DeletedOAuthApp = Schema.Struct({
  data: Schema.Struct({ id: Uuid, deleted: Schema.Literal(true), revoked_keys: Schema.Int })
})

/** A merchant's custom-distribution commerce app: its credentials and OAuth scopes. */
export const CreateCommerceApp = Schema.Struct({
  shop: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9-]{0,60}$/, { message: "Expected the store handle" })),
  name: Name,
  client_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  client_secret: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500)),
  scopes: Schema.Array(Schema.String.check(Schema.isPattern(/^[a-z_]+$/))).check(Schema.isMaxLength(50))
})
export type CreateCommerceApp = typeof CreateCommerceApp.Type

export const CommerceApp = Schema.Struct({
  id: Uuid,
  shop: Schema.String,
  name: Schema.String,
  client_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "CommerceApp" })
export type CommerceApp = typeof CommerceApp.Type

export const CommerceAppCreated = Schema.Struct({ data: CommerceApp }).pipe(HttpApiSchema.status(201))
export const CommerceAppList = Schema.Struct({ data: Schema.Array(CommerceApp) })
export const CommerceAppDisabled = Schema.Struct({
  data: Schema.Struct({ id: Uuid, disabled: Schema.Literal(true) })
})

/** `PATCH /api/v1/admin/workspaces/{id}`: the workspace's healthcare-agency flag (S5.3). */
export const UpdateWorkspaceFlags = Schema.Struct({ is_healthcare_agency: Schema.Boolean })
export type UpdateWorkspaceFlags = typeof UpdateWorkspaceFlags.Type

export const WorkspaceFlags = Schema.Struct({
  workspace_id: Uuid,
  is_healthcare_agency: Schema.Boolean,
  /** Whether the flag moved. */
  changed: Schema.Boolean,
  /** Delegated keys carrying customers:read or visitors:read revoked by this call (0 when turned off). */
  revoked_keys: Schema.Int
}).annotate({ identifier: "WorkspaceFlags" })
export type WorkspaceFlags = typeof WorkspaceFlags.Type

export const WorkspaceFlagsBody = Schema.Struct({ data: WorkspaceFlags })
