import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { PageQuery } from "../../../schema/common.ts"
import { DatabaseUnavailable, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import { MemberCreated, MemberPage, MemberReconciled, PutMember, RemovedMember } from "../../../schema/members.ts"
import { policy } from "../../http/policy.ts"

const appCredential = policy({ scopes: [], auth: ["app_client"], idempotency: "none", grain: "app" })

/** Workspace members of a workspace the app provisioned, with the OAuth-app client credential over HTTP Basic. */
export const MembersApi = HttpApiGroup.make("members")
  .add(
    HttpApiEndpoint.get("listMembers", "/workspaces/:workspaceId/members", {
      params: { workspaceId: Schema.String },
      query: PageQuery,
      success: MemberPage,
      error: [NotFound.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The team: active members with their workspace role and profile access")
      .annotateMerge(appCredential),
    HttpApiEndpoint.put("putMember", "/workspaces/:workspaceId/members", {
      params: { workspaceId: Schema.String },
      payload: PutMember,
      success: [MemberCreated, MemberReconciled],
      error: [NotFound.wire, ValidationError.wire, InvalidState.wire, DatabaseUnavailable.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Reconcile one person's membership by email: 201 on the first reconcile, 200 afterwards; idempotent"
      )
      .annotateMerge(appCredential),
    HttpApiEndpoint.delete("removeMember", "/workspaces/:workspaceId/members/:userId", {
      params: { workspaceId: Schema.String, userId: Schema.String },
      success: RemovedMember,
      error: [NotFound.wire, InvalidState.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Remove a member (soft: rows kept); removed: false when there was nothing to remove")
      .annotateMerge(appCredential)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Partner provisioning: workspace members")
