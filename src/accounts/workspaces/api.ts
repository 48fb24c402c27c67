import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PageQuery } from "../../../schema/common.ts"
import {
  DatabaseUnavailable,
  InsufficientScope,
  InvalidState,
  ValidationError,
  workspaceErrors
} from "../../../schema/errors.ts"
import {
  CreateWorkspace,
  McpSettingsBody,
  PiiAccessPage,
  PutMcpSettings,
  ReportsHubBody,
  SetReportingCurrency,
  WorkspaceBody,
  WorkspaceCreated,
  WorkspacePage
} from "../../../schema/workspaces.ts"
import { policy } from "../../http/policy.ts"

/**
 * Workspace-grain routes: refused to API keys, open to sessions, MCP user tokens and the
 * OAuth app that created the workspace. Role checks happen in the service. Decision 0020.
 */
const read = policy({ scopes: [], auth: ["session", "user_token", "app_client"], idempotency: "none", grain: "workspace" })

/** Writes a user token may make only with `workspaces:write` (from `mcp:write`). */
const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["workspaces:write"], auth: ["session", "user_token", "app_client"], idempotency, grain: "workspace" })

/** DELETE: the owner's session or user token; an app cannot archive a workspace ("driven by membership"). */
const ownerWrite = policy({ scopes: ["workspaces:write"], auth: ["session", "user_token"], idempotency: "none", grain: "workspace" })

/** PUT mcp-settings: never a user token (absent from its security scheme). */
const settingsWrite = policy({ scopes: [], auth: ["session", "app_client"], idempotency: "none", grain: "workspace" })

const workspace = { workspaceId: Schema.String }

export const WorkspacesApi = HttpApiGroup.make("workspaces")
  .add(
    HttpApiEndpoint.get("listWorkspaces", "/workspaces", {
      query: PageQuery,
      success: WorkspacePage,
      error: [InsufficientScope.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Live workspaces the person is an active member of, or that the calling app created")
      .annotateMerge(read),
    HttpApiEndpoint.post("createWorkspace", "/workspaces", {
      payload: CreateWorkspace,
      success: WorkspaceCreated,
      error: [InsufficientScope.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Create a workspace: the person becomes its owner; an app creates a bare workspace")
      .annotateMerge(write("optional")),
    HttpApiEndpoint.delete("archiveWorkspace", "/workspaces/:workspaceId", {
      params: workspace,
      success: WorkspaceBody,
      error: [...workspaceErrors, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Archive a workspace (owner only); 409 invalid_state while it holds a live profile")
      .annotateMerge(ownerWrite),
    HttpApiEndpoint.patch("setReportingCurrency", "/workspaces/:workspaceId/reporting-currency", {
      params: workspace,
      payload: SetReportingCurrency,
      success: WorkspaceBody,
      error: [...workspaceErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Change the reporting currency (ISO-4217); an ad-account connect never overrides it")
      .annotateMerge(write("none")),
    HttpApiEndpoint.get("getMcpSettings", "/workspaces/:workspaceId/mcp-settings", {
      params: workspace,
      success: McpSettingsBody,
      error: workspaceErrors
    })
      .annotate(OpenApi.Summary, "The workspace's controls over MCP user tokens")
      .annotateMerge(read),
    HttpApiEndpoint.put("putMcpSettings", "/workspaces/:workspaceId/mcp-settings", {
      params: workspace,
      payload: PutMcpSettings,
      success: McpSettingsBody,
      error: [...workspaceErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Replace the MCP settings (owner or admin session, or the creating app; never a user token)")
      .annotateMerge(settingsWrite),
    HttpApiEndpoint.get("listPiiAccess", "/workspaces/:workspaceId/pii-access-log", {
      params: workspace,
      query: PageQuery,
      success: PiiAccessPage,
      error: [...workspaceErrors, ValidationError.wire]
    })
      .annotate(OpenApi.Summary, "Who read person data: newest first, the last 365 days (owner or admin)")
      .annotateMerge(read),
    HttpApiEndpoint.get("reportsHub", "/workspaces/:workspaceId/reports/hub", {
      params: workspace,
      success: ReportsHubBody,
      error: workspaceErrors
    })
      .annotate(OpenApi.Summary, "The reports hub: the caller's capabilities (can_edit: bulk schedule, can_apply: bulk generate)")
      .annotateMerge(read)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Partner provisioning: workspaces")
