import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CommerceAppCreated,
  CommerceAppDisabled,
  CommerceAppList,
  CreateCommerceApp,
  CreatedOAuthApp,
  CreateOAuthApp,
  DeletedOAuthApp,
  OAuthAppBody,
  OAuthAppPage,
  RotatedClientSecret,
  RotatedJwtSecret,
  UpdateOAuthApp,
  UpdateWorkspaceFlags,
  WorkspaceFlagsBody
} from "../../../schema/admin.ts"
import { PageQuery } from "../../../schema/common.ts"
import { InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import { policy } from "../../http/policy.ts"

const operator = (idempotency: "optional" | "none") =>
  policy({ scopes: [], auth: ["operator"], idempotency, grain: "none" })

const id = { id: Schema.String }

/** Operator surface (`Authorization: Bearer $SVC_ADMIN_TOKEN`). Secrets appear only at create and rotate. */
export const AdminApi = HttpApiGroup.make("admin")
  .add(
    // Answers carrying a secret are never stored for idempotent replay.
    HttpApiEndpoint.post("createOAuthApp", "/oauth-apps", {
      payload: CreateOAuthApp,
      success: CreatedOAuthApp,
      error: ValidationError.wire
    }).annotate(OpenApi.Summary, "Register an OAuth app; the client secret and JWT secret are shown once")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.get("listOAuthApps", "/oauth-apps", { query: PageQuery, success: OAuthAppPage })
      .annotate(OpenApi.Summary, "List OAuth apps").annotateMerge(operator("none")),
    HttpApiEndpoint.get("getOAuthApp", "/oauth-apps/:id", { params: id, success: OAuthAppBody, error: NotFound.wire })
      .annotate(OpenApi.Summary, "Read an OAuth app's settings").annotateMerge(operator("none")),
    HttpApiEndpoint.patch("updateOAuthApp", "/oauth-apps/:id", {
      params: id,
      payload: UpdateOAuthApp,
      success: OAuthAppBody,
      error: [NotFound.wire, ValidationError.wire]
    }).annotate(OpenApi.Summary, "Change an OAuth app's settings (profile_resolution, owner_workspace_id, ...)")
      .annotateMerge(operator("optional")),
    HttpApiEndpoint.delete("deleteOAuthApp", "/oauth-apps/:id", {
      params: id,
      success: DeletedOAuthApp,
      error: NotFound.wire
    }).annotate(OpenApi.Summary, "Delete an OAuth app: its grants and the keys minted for it are revoked")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.post("rotateClientSecret", "/oauth-apps/:id/rotate-client-secret", {
      params: id,
      success: RotatedClientSecret,
      error: NotFound.wire
    }).annotate(OpenApi.Summary, "New client secret, shown once; the old one stops at once")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.post("rotateJwtSecret", "/oauth-apps/:id/rotate-jwt-secret", {
      params: id,
      success: RotatedJwtSecret,
      error: NotFound.wire
    }).annotate(OpenApi.Summary, "New id_token_hint signing secret, shown once; independent of the client secret")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.get("listCommerceApps", "/commerce-apps", { success: CommerceAppList })
      .annotate(OpenApi.Summary, "List registered commerce apps").annotateMerge(operator("none")),
    HttpApiEndpoint.post("createCommerceApp", "/commerce-apps", {
      payload: CreateCommerceApp,
      success: CommerceAppCreated,
      error: [InvalidState.wire, ValidationError.wire]
    }).annotate(OpenApi.Summary, "Register a merchant's custom-distribution commerce app and its OAuth scopes")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.delete("deleteCommerceApp", "/commerce-apps/:id", {
      params: id,
      success: CommerceAppDisabled,
      error: NotFound.wire
    }).annotate(OpenApi.Summary, "Kill switch: the commerce app stops being used at once")
      .annotateMerge(operator("none")),
    HttpApiEndpoint.patch("updateWorkspace", "/workspaces/:workspaceId", {
      params: { workspaceId: Schema.String },
      payload: UpdateWorkspaceFlags,
      success: WorkspaceFlagsBody,
      error: [NotFound.wire, ValidationError.wire]
    }).annotate(
      OpenApi.Summary,
      "Set a workspace's is_healthcare_agency flag; turning it on revokes delegated keys with customers:read or visitors:read"
    ).annotateMerge(operator("optional"))
  )
  .prefix("/api/v1/admin")
  .annotate(OpenApi.Description, "Operator surface")
