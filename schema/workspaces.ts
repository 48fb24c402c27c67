/**
 * Workspaces contract (`/api/v1/workspaces` and its workspace-level settings): creating and
 * listing workspaces, the reporting currency, the MCP settings, the PII access log and the
 * reports hub's capabilities. Decision 0020.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { CurrencyCode, Page } from "./common.ts"

export const Workspace = Schema.Struct({
  workspace_id: Schema.String,
  name: Schema.String,
  /** ISO-4217; null until set by a create call, a PATCH, or the first connected ad account. */
  reporting_currency: Schema.NullOr(Schema.String),
  is_healthcare_agency: Schema.Boolean,
  archived: Schema.Boolean,
  created_at: Schema.String
}).annotate({ identifier: "Workspace" })
export type Workspace = typeof Workspace.Type

export const WorkspacePage = Page(Workspace)

export const CreateWorkspace = Schema.Struct({
  name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  reporting_currency: Schema.optionalKey(CurrencyCode)
})
export type CreateWorkspace = typeof CreateWorkspace.Type

export const WorkspaceCreated = Schema.Struct({ data: Workspace }).pipe(HttpApiSchema.status(201))
export const WorkspaceBody = Schema.Struct({ data: Workspace })

export const SetReportingCurrency = Schema.Struct({ reporting_currency: CurrencyCode })
export type SetReportingCurrency = typeof SetReportingCurrency.Type

/**
 * What MCP user tokens see of person data in this workspace:
 *
 * | value | meaning |
 * |---|---|
 * | `redacted` (default) | names, emails and phone numbers are masked in MCP answers |
 * | `full` | person data is answered in full to tokens holding `mcp:read_pii` |
 */
export const PiiMode = Schema.Literals(["redacted", "full"])
export type PiiMode = typeof PiiMode.Type

export const PutMcpSettings = Schema.Struct({
  pii_mode: PiiMode,
  /** Whether MCP user tokens may write (exports, goals, attribution and report writes) in this workspace. */
  mcp_writeback_enabled: Schema.Boolean
})
export type PutMcpSettings = typeof PutMcpSettings.Type

export const McpSettings = Schema.Struct({
  workspace_id: Schema.String,
  pii_mode: PiiMode,
  mcp_writeback_enabled: Schema.Boolean,
  /** Null while the workspace still has the defaults (never written). */
  updated_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "McpSettings" })
export type McpSettings = typeof McpSettings.Type

export const McpSettingsBody = Schema.Struct({ data: McpSettings })

export const PiiAccessEntry = Schema.Struct({
  id: Schema.String,
  occurred_at: Schema.String,
  profile_id: Schema.NullOr(Schema.String),
  actor_kind: Schema.String,
  actor_id: Schema.NullOr(Schema.String),
  route: Schema.String,
  result: Schema.String,
  request_id: Schema.NullOr(Schema.String)
}).annotate({ identifier: "PiiAccessEntry" })
export type PiiAccessEntry = typeof PiiAccessEntry.Type

export const PiiAccessPage = Page(PiiAccessEntry)

export const ReportsHub = Schema.Struct({
  workspace_id: Schema.String,
  capabilities: Schema.Struct({
    /** Bulk schedule: change report schedules across the workspace's profiles. */
    can_edit: Schema.Boolean,
    /** Bulk generate: run reports across the workspace's profiles now. */
    can_apply: Schema.Boolean
  })
}).annotate({ identifier: "ReportsHub" })
export type ReportsHub = typeof ReportsHub.Type

export const ReportsHubBody = Schema.Struct({ data: ReportsHub })
