/**
 * Workspaces: creating and listing them, their reporting currency and MCP settings, the PII
 * access log and the reports hub's capabilities.
 *
 * Callers: a signed-in person or their MCP user token (through an active membership of a live
 * workspace) and the OAuth app that created the workspace. A workspace the caller cannot
 * reach (unknown, malformed, archived, foreign) answers one identical 404; a member whose
 * role is too low gets 403 `insufficient_scope` (reason `workspace_role`). Every change is
 * audited in the transaction that makes it. Decision 0020.
 */
import { Context, Effect, Layer, type Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import { type DatabaseUnavailable, InsufficientScope, type InvalidParameter, InvalidState, NotFound } from "../../../schema/errors.ts"
import type { WorkspaceRole } from "../../../schema/members.ts"
import type {
  CreateWorkspace,
  McpSettings,
  PiiAccessEntry,
  PutMcpSettings,
  ReportsHub,
  Workspace
} from "../../../schema/workspaces.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { type McpSettingsRow, type PiiAccessRow, type WorkspaceRow, WorkspacesRepo } from "./repo.ts"

const noSuchWorkspace = () => new NotFound({ message: "No such workspace." })

/** What a route asks of the caller's standing in the workspace. */
type Need = "member" | "manager" | "owner"

const ROLES_OF: Record<Need, ReadonlyArray<WorkspaceRole>> = {
  member: ["owner", "admin", "analyst", "guest"],
  manager: ["owner", "admin"],
  owner: ["owner"]
}

/** Who reached the workspace: a member with a role, or the app that created it. */
type Standing = { readonly kind: "member"; readonly role: WorkspaceRole } | { readonly kind: "app" }

interface Reached {
  readonly workspaceId: string
  readonly standing: Standing
}

const renderWorkspace = (row: WorkspaceRow): Workspace => ({
  workspace_id: row.id,
  name: row.name,
  reporting_currency: row.reporting_currency,
  is_healthcare_agency: row.is_healthcare_agency,
  archived: row.archived,
  created_at: row.created_at
})

const renderSettings = (workspaceId: string, row: McpSettingsRow): McpSettings => ({
  workspace_id: workspaceId,
  pii_mode: row.pii_mode,
  mcp_writeback_enabled: row.mcp_writeback_enabled,
  updated_at: row.updated_at
})

const renderPiiAccess = (row: PiiAccessRow): PiiAccessEntry => ({
  id: row.id,
  occurred_at: row.occurred_at,
  profile_id: row.profile_id,
  actor_kind: row.actor_kind,
  actor_id: row.actor_id,
  route: row.route,
  result: row.result,
  request_id: row.request_id
})

const notAccepted = (what: string) =>
  new InsufficientScope({ message: `${what} does not accept this credential.`, reason: "credential_kind_not_accepted" })

export interface PageOf<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

type PageOptions = { readonly limit?: number; readonly cursor?: string }
type Errors = NotFound | InsufficientScope | DatabaseUnavailable
type Result<A, E = never> = Effect.Effect<A, E | Errors>

export class Workspaces extends Context.Service<Workspaces, {
  readonly list: (actor: PrincipalShape, page: PageOptions) => Effect.Effect<PageOf<Workspace>, InsufficientScope | InvalidParameter | DatabaseUnavailable>
  readonly create: (actor: PrincipalShape, input: CreateWorkspace) => Effect.Effect<Workspace, InsufficientScope | DatabaseUnavailable>
  readonly archive: (actor: PrincipalShape, workspaceId: string) => Result<Workspace, InvalidState>
  readonly setReportingCurrency: (actor: PrincipalShape, workspaceId: string, currency: string) => Result<Workspace>
  readonly mcpSettings: (actor: PrincipalShape, workspaceId: string) => Result<McpSettings>
  readonly putMcpSettings: (actor: PrincipalShape, workspaceId: string, input: PutMcpSettings) => Result<McpSettings>
  readonly piiAccessLog: (actor: PrincipalShape, workspaceId: string, page: PageOptions) => Result<PageOf<PiiAccessEntry>, InvalidParameter>
  readonly reportsHub: (actor: PrincipalShape, workspaceId: string) => Result<ReportsHub>
  /** The oldest live workspace with this name that the person owns (the operator's quickstart reuses it). */
  readonly findOwnedByName: (userId: string, name: string) => Effect.Effect<Option.Option<string>, DatabaseUnavailable>
}>()("svc/Workspaces") {
  static readonly layer = Layer.effect(Workspaces)(
    Effect.gen(function*() {
      const repo = yield* WorkspacesRepo
      const audit = yield* AuditLog

      const inTransaction = repo.transaction

      /** The workspace (lower-cased id) and the caller's standing in it; 404 when unreachable, 403 when the role is too low. */
      const reach = Effect.fn("Workspaces.reach")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        need: Need,
        lock: boolean
      ) {
        if (!isUuid(rawWorkspaceId)) return yield* noSuchWorkspace()
        const workspaceId = rawWorkspaceId.toLowerCase()
        switch (actor.kind) {
          case "session":
          case "user_token": {
            const role = yield* repo.memberRole(workspaceId, actor.userId, lock)
            if (role._tag === "None") return yield* noSuchWorkspace()
            if (!ROLES_OF[need].includes(role.value)) {
              return yield* new InsufficientScope({
                message: `This needs the workspace role ${ROLES_OF[need].join(" or ")}; this person is ${role.value}.`,
                reason: "workspace_role"
              })
            }
            return { workspaceId, standing: { kind: "member", role: role.value } } satisfies Reached
          }
          case "app_client": {
            if (!(yield* repo.createdByApp(workspaceId, actor.appId, lock))) return yield* noSuchWorkspace()
            // Archiving is driven by membership: the owner decides, never the app (the policy refuses it too).
            if (need === "owner") return yield* notAccepted("Archiving a workspace")
            return { workspaceId, standing: { kind: "app" } } satisfies Reached
          }
          default:
            return yield* notAccepted("This workspace route")
        }
      })

      const reread = (workspaceId: string) =>
        Effect.flatMap(repo.find(workspaceId), (row) =>
          row._tag === "Some" ? Effect.succeed(renderWorkspace(row.value)) : Effect.die("workspace vanished inside its transaction"))

      const list = Effect.fn("Workspaces.list")(function*(actor: PrincipalShape, options: PageOptions) {
        const limit = options.limit ?? DEFAULT_PAGE_SIZE
        const page = { limit, after: yield* keysetCursor(options.cursor) }
        switch (actor.kind) {
          case "session":
          case "user_token":
            return toPage(yield* repo.listForUser(actor.userId, page), limit, renderWorkspace)
          case "app_client":
            return toPage(yield* repo.listForApp(actor.appId, page), limit, renderWorkspace)
          default:
            return yield* notAccepted("The workspace list")
        }
      })

      const create = Effect.fn("Workspaces.create")(function*(actor: PrincipalShape, input: CreateWorkspace) {
        if (actor.kind !== "session" && actor.kind !== "user_token" && actor.kind !== "app_client") {
          return yield* notAccepted("Creating a workspace")
        }
        return yield* inTransaction(Effect.gen(function*() {
          const row = yield* repo.insert({
            name: input.name ?? "",
            reportingCurrency: input.reporting_currency ?? null,
            appId: actor.kind === "app_client" ? actor.appId : null
          })
          if (actor.kind !== "app_client") yield* repo.addOwner(row.id, actor.userId)
          yield* audit.record({
            actor,
            action: "workspace.created",
            targetKind: "workspace",
            targetId: row.id,
            workspaceId: row.id,
            details: { reporting_currency: row.reporting_currency, bare: actor.kind === "app_client" }
          })
          return renderWorkspace(row)
        }))
      })

      const archive = Effect.fn("Workspaces.archive")(function*(actor: PrincipalShape, rawWorkspaceId: string) {
        return yield* inTransaction(Effect.gen(function*() {
          const { workspaceId } = yield* reach(actor, rawWorkspaceId, "owner", true)
          const live = yield* repo.liveProfileCount(workspaceId)
          if (live > 0) {
            return yield* new InvalidState({
              message: `The workspace still holds ${live} live profile(s); archive them first.`,
              reason: "workspace_has_live_profiles"
            })
          }
          yield* repo.archive(workspaceId)
          yield* audit.record({ actor, action: "workspace.archived", targetKind: "workspace", targetId: workspaceId, workspaceId })
          return yield* reread(workspaceId)
        }))
      })

      const setReportingCurrency = Effect.fn("Workspaces.setReportingCurrency")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        currency: string
      ) {
        return yield* inTransaction(Effect.gen(function*() {
          const { workspaceId } = yield* reach(actor, rawWorkspaceId, "manager", true)
          const before = yield* reread(workspaceId)
          if (before.reporting_currency === currency) return before
          yield* repo.setReportingCurrency(workspaceId, currency)
          yield* audit.record({
            actor,
            action: "workspace.reporting_currency_changed",
            targetKind: "workspace",
            targetId: workspaceId,
            workspaceId,
            details: { from: before.reporting_currency, to: currency }
          })
          return yield* reread(workspaceId)
        }))
      })

      const mcpSettings = Effect.fn("Workspaces.mcpSettings")(function*(actor: PrincipalShape, rawWorkspaceId: string) {
        const { workspaceId } = yield* reach(actor, rawWorkspaceId, "member", false)
        return renderSettings(workspaceId, yield* repo.mcpSettings(workspaceId))
      })

      const putMcpSettings = Effect.fn("Workspaces.putMcpSettings")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        input: PutMcpSettings
      ) {
        // The policy already refuses user tokens here; this keeps the rule in the service too.
        if (actor.kind === "user_token") {
          return yield* new InsufficientScope({
            message: "A user token can read a workspace's MCP settings but never change them.",
            reason: "credential_kind_not_accepted"
          })
        }
        return yield* inTransaction(Effect.gen(function*() {
          const { workspaceId } = yield* reach(actor, rawWorkspaceId, "manager", true)
          const before = yield* repo.mcpSettings(workspaceId)
          if (
            before.updated_at !== null && before.pii_mode === input.pii_mode &&
            before.mcp_writeback_enabled === input.mcp_writeback_enabled
          ) return renderSettings(workspaceId, before)
          yield* repo.putMcpSettings(workspaceId, input.pii_mode, input.mcp_writeback_enabled)
          yield* audit.record({
            actor,
            action: "workspace.mcp_settings_changed",
            targetKind: "workspace",
            targetId: workspaceId,
            workspaceId,
            details: {
              pii_mode: input.pii_mode,
              mcp_writeback_enabled: input.mcp_writeback_enabled,
              previous: { pii_mode: before.pii_mode, mcp_writeback_enabled: before.mcp_writeback_enabled }
            }
          })
          return renderSettings(workspaceId, yield* repo.mcpSettings(workspaceId))
        }))
      })

      const piiAccessLog = Effect.fn("Workspaces.piiAccessLog")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        options: PageOptions
      ) {
        const { workspaceId } = yield* reach(actor, rawWorkspaceId, "manager", false)
        const limit = options.limit ?? DEFAULT_PAGE_SIZE
        const rows = yield* repo.piiAccessLog(workspaceId, { limit, after: yield* keysetCursor(options.cursor) })
        return toPage(rows, limit, renderPiiAccess)
      })

      const reportsHub = Effect.fn("Workspaces.reportsHub")(function*(actor: PrincipalShape, rawWorkspaceId: string) {
        const { workspaceId, standing } = yield* reach(actor, rawWorkspaceId, "member", false)
        const byRole = standing.kind === "app" || ROLES_OF.manager.includes(standing.role)
        // A user token's capabilities are also bounded by its grant: bulk actions are report writes.
        // True exactly when the caller holds `reports:write` on every profile (decision 0085).
        const byGrant = actor.kind !== "user_token" || actor.scopes.includes("reports:write")
        const allowed = byRole && byGrant
        return { workspace_id: workspaceId, capabilities: { can_edit: allowed, can_apply: allowed } } satisfies ReportsHub
      })

      const findOwnedByName = Effect.fn("Workspaces.findOwnedByName")(function*(userId: string, name: string) {
        return yield* repo.findOwnedByName(userId, name)
      })

      return { list, create, archive, setReportingCurrency, mcpSettings, putMcpSettings, piiAccessLog, reportsHub, findOwnedByName }
    })
  ).pipe(Layer.provide([WorkspacesRepo.layer, AuditLog.layer]))
}
