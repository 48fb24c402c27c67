/** The owner of `workspaces`, `workspace_memberships` and `workspace_mcp_settings`; also reads the PII access log of a workspace. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { PII_LOG_RETENTION_DAYS } from "../../kernel/audit/retention.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { type AssignableWorkspaceRole, WorkspaceRole } from "../../../schema/members.ts"
import { PiiMode } from "../../../schema/workspaces.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

/** `id` and `created_at` are also the keyset of the listing. */
export const WorkspaceRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  reporting_currency: Schema.NullOr(Schema.String),
  is_healthcare_agency: Schema.Boolean,
  archived: Schema.Boolean,
  created_at: Schema.String
})
export type WorkspaceRow = typeof WorkspaceRow.Type

const RoleRow = Schema.Struct({ role: WorkspaceRole })
const PresentRow = Schema.Struct({ present: Schema.Boolean })
const CountRow = Schema.Struct({ n: Schema.Number })

export const McpSettingsRow = Schema.Struct({
  pii_mode: PiiMode,
  mcp_writeback_enabled: Schema.Boolean,
  updated_at: Schema.NullOr(Schema.String)
})
export type McpSettingsRow = typeof McpSettingsRow.Type

/** `created_at` repeats `occurred_at`: the keyset column `toPage` reads. */
export const PiiAccessRow = Schema.Struct({
  id: Schema.String,
  occurred_at: Schema.String,
  created_at: Schema.String,
  profile_id: Schema.NullOr(Schema.String),
  actor_kind: Schema.String,
  actor_id: Schema.NullOr(Schema.String),
  route: Schema.String,
  result: Schema.String,
  request_id: Schema.NullOr(Schema.String)
})
export type PiiAccessRow = typeof PiiAccessRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>
type Page = { readonly limit: number; readonly after: Option.Option<Keyset> }

export class WorkspacesRepo extends Context.Service<WorkspacesRepo, {
  /** The person's role in the live workspace, if an active member; `lock` locks the workspace row. */
  readonly memberRole: (workspaceId: string, userId: string, lock: boolean) => Repo<Option.Option<WorkspaceRole>>
  /** Whether the live workspace was created by this app; `lock` locks the workspace row. */
  readonly createdByApp: (workspaceId: string, appId: string, lock: boolean) => Repo<boolean>
  readonly find: (workspaceId: string) => Repo<Option.Option<WorkspaceRow>>
  /** The oldest live workspace with this name that the person owns (live membership). */
  readonly findOwnedByName: (userId: string, name: string) => Repo<Option.Option<string>>
  readonly insert: (input: {
    readonly name: string
    readonly reportingCurrency: string | null
    readonly appId: string | null
  }) => Repo<WorkspaceRow>
  /** Deletes a workspace this transaction just inserted (its profile lost the race for an external ref). */
  readonly remove: (workspaceId: string) => Repo<void>
  readonly addOwner: (workspaceId: string, userId: string) => Repo<void>
  /** Makes the membership active with `role` (inserting it, or reviving a removed one). */
  readonly activateMembership: (workspaceId: string, userId: string, role: AssignableWorkspaceRole, revive: boolean) => Repo<void>
  /** Soft-removes the person's live membership of the workspace. */
  readonly endMembership: (workspaceId: string, userId: string) => Repo<void>
  /** Soft-removes every live membership of the workspace (archiving it). */
  readonly endMemberships: (workspaceId: string) => Repo<void>
  readonly setHealthcareFlag: (workspaceId: string, isHealthcareAgency: boolean) => Repo<void>
  /** Live workspaces where the person is an active member, (created_at, id) order, one more than `limit`. */
  readonly listForUser: (userId: string, page: Page) => Repo<ReadonlyArray<WorkspaceRow>>
  /** Live workspaces the app created, (created_at, id) order, one more than `limit`. */
  readonly listForApp: (appId: string, page: Page) => Repo<ReadonlyArray<WorkspaceRow>>
  readonly setReportingCurrency: (workspaceId: string, currency: string) => Repo<void>
  readonly liveProfileCount: (workspaceId: string) => Repo<number>
  readonly archive: (workspaceId: string) => Repo<void>
  /** Archives the workspace with its profile (the lifecycle table's cascade), whether or not it already was. */
  readonly archiveWithProfile: (workspaceId: string) => Repo<void>
  /** The stored settings, or the defaults (`redacted`, writeback off, `updated_at` null). */
  readonly mcpSettings: (workspaceId: string) => Repo<McpSettingsRow>
  readonly putMcpSettings: (workspaceId: string, piiMode: PiiMode, writeback: boolean) => Repo<void>
  /** Rows of the last 365 days, newest first, one more than `limit`; the keyset continues downwards. */
  readonly piiAccessLog: (workspaceId: string, page: Page) => Repo<ReadonlyArray<PiiAccessRow>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/WorkspacesRepo") {
  static readonly layer = Layer.effect(WorkspacesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const workspaceRows = decodeRows(WorkspaceRow)
      const firstWorkspace = decodeFirstRow(WorkspaceRow)
      const firstRole = decodeFirstRow(RoleRow)
      const firstPresent = decodeFirstRow(PresentRow)
      const firstCount = decodeFirstRow(CountRow)
      const firstSettings = decodeFirstRow(McpSettingsRow)
      const piiRows = decodeRows(PiiAccessRow)
      const lockClause = (lock: boolean) => sql.literal(lock ? "FOR UPDATE OF w" : "")

      const columns = sql`w.id, w.name, w.reporting_currency, w.is_healthcare_agency,
        (w.archived_at IS NOT NULL) AS archived, ${isoTimestamp(sql, "w.created_at")} AS created_at`

      const memberRole = (workspaceId: string, userId: string, lock: boolean) =>
        Effect.map(
          firstRole(sql`
            SELECT m.role FROM workspaces w
            JOIN workspace_memberships m ON m.workspace_id = w.id AND m.user_id = ${userId} AND m.removed_at IS NULL
            WHERE w.id = ${workspaceId} AND w.archived_at IS NULL ${lockClause(lock)}`),
          Option.map((row) => row.role)
        )

      const createdByApp = (workspaceId: string, appId: string, lock: boolean) =>
        Effect.map(
          firstPresent(sql`
            SELECT true AS present FROM workspaces w
            WHERE w.id = ${workspaceId} AND w.archived_at IS NULL AND w.created_by_app_id = ${appId} ${lockClause(lock)}`),
          Option.isSome
        )

      const find = (workspaceId: string) => firstWorkspace(sql`SELECT ${columns} FROM workspaces w WHERE w.id = ${workspaceId}`)

      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const findOwnedByName = (userId: string, name: string) =>
        Effect.map(
          firstId(sql`
            SELECT w.id FROM workspaces w JOIN workspace_memberships m ON m.workspace_id = w.id
            WHERE m.user_id = ${userId} AND m.role = 'owner' AND m.removed_at IS NULL
              AND w.archived_at IS NULL AND w.name = ${name}
            ORDER BY w.created_at LIMIT 1`),
          Option.map((row) => row.id)
        )

      const insert = (input: { readonly name: string; readonly reportingCurrency: string | null; readonly appId: string | null }) =>
        Effect.flatMap(
          firstWorkspace(sql`
            INSERT INTO workspaces AS w (id, name, reporting_currency, created_by_app_id)
            VALUES (${crypto.randomUUID()}, ${input.name}, ${input.reportingCurrency}, ${input.appId})
            RETURNING ${columns}`),
          Option.match({ onNone: () => Effect.die("INSERT ... RETURNING gave no workspace"), onSome: Effect.succeed })
        )

      const addOwner = (workspaceId: string, userId: string) =>
        Effect.asVoid(sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${userId}, 'owner')`)

      const remove = (workspaceId: string) => Effect.asVoid(sql`DELETE FROM workspaces WHERE id = ${workspaceId}`)

      const activateMembership = (workspaceId: string, userId: string, role: AssignableWorkspaceRole, revive: boolean) =>
        Effect.asVoid(sql`
          INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${userId}, ${role})
          ON CONFLICT (workspace_id, user_id) DO UPDATE
            SET role = EXCLUDED.role, removed_at = NULL, updated_at = now(),
                created_at = ${revive ? sql.literal("now()") : sql.literal("workspace_memberships.created_at")}`)

      const endMembership = (workspaceId: string, userId: string) =>
        Effect.asVoid(sql`UPDATE workspace_memberships SET removed_at = now(), updated_at = now()
                          WHERE workspace_id = ${workspaceId} AND user_id = ${userId} AND removed_at IS NULL`)

      const endMemberships = (workspaceId: string) =>
        Effect.asVoid(sql`UPDATE workspace_memberships SET removed_at = now() WHERE workspace_id = ${workspaceId} AND removed_at IS NULL`)

      const setHealthcareFlag = (workspaceId: string, flag: boolean) =>
        Effect.asVoid(sql`UPDATE workspaces SET is_healthcare_agency = ${flag} WHERE id = ${workspaceId}`)

      const archiveWithProfile = (workspaceId: string) =>
        Effect.asVoid(sql`UPDATE workspaces SET archived_at = now() WHERE id = ${workspaceId}`)

      const after = (page: Page) =>
        Option.match(page.after, {
          onNone: () => sql``,
          onSome: (keyset) => sql`AND (w.created_at, w.id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)`
        })

      const listForUser = (userId: string, page: Page) =>
        workspaceRows(sql`
          SELECT ${columns} FROM workspaces w
          JOIN workspace_memberships m ON m.workspace_id = w.id AND m.user_id = ${userId} AND m.removed_at IS NULL
          WHERE w.archived_at IS NULL ${after(page)}
          ORDER BY w.created_at, w.id LIMIT ${page.limit + 1}`)

      const listForApp = (appId: string, page: Page) =>
        workspaceRows(sql`
          SELECT ${columns} FROM workspaces w
          WHERE w.created_by_app_id = ${appId} AND w.archived_at IS NULL ${after(page)}
          ORDER BY w.created_at, w.id LIMIT ${page.limit + 1}`)

      const setReportingCurrency = (workspaceId: string, currency: string) =>
        Effect.asVoid(sql`UPDATE workspaces SET reporting_currency = ${currency} WHERE id = ${workspaceId}`)

      const liveProfileCount = (workspaceId: string) =>
        Effect.map(
          firstCount(sql`SELECT count(*)::int AS n FROM profiles WHERE workspace_id = ${workspaceId} AND archived_at IS NULL`),
          Option.match({ onNone: () => 0, onSome: (row) => row.n })
        )

      const archive = (workspaceId: string) =>
        Effect.asVoid(sql`UPDATE workspaces SET archived_at = now() WHERE id = ${workspaceId} AND archived_at IS NULL`)

      const mcpSettings = (workspaceId: string) =>
        Effect.map(
          firstSettings(sql`
            SELECT pii_mode, mcp_writeback_enabled, ${isoTimestamp(sql, "updated_at")} AS updated_at
            FROM workspace_mcp_settings WHERE workspace_id = ${workspaceId}`),
          Option.getOrElse((): McpSettingsRow => ({ pii_mode: "redacted", mcp_writeback_enabled: false, updated_at: null }))
        )

      const putMcpSettings = (workspaceId: string, piiMode: PiiMode, writeback: boolean) =>
        Effect.asVoid(sql`
          INSERT INTO workspace_mcp_settings (workspace_id, pii_mode, mcp_writeback_enabled)
          VALUES (${workspaceId}, ${piiMode}, ${writeback})
          ON CONFLICT (workspace_id) DO UPDATE
            SET pii_mode = EXCLUDED.pii_mode, mcp_writeback_enabled = EXCLUDED.mcp_writeback_enabled, updated_at = now()`)

      const piiAccessLog = (workspaceId: string, page: Page) =>
        piiRows(sql`
          SELECT l.id, ${isoTimestamp(sql, "l.occurred_at")} AS occurred_at, ${isoTimestamp(sql, "l.occurred_at")} AS created_at,
                 l.profile_id, l.actor_kind, l.actor_id, l.route, l.result, l.request_id
          FROM pii_access_log l
          WHERE l.workspace_id = ${workspaceId}
            AND l.occurred_at > now() - make_interval(days => ${PII_LOG_RETENTION_DAYS})
            ${
          Option.match(page.after, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (l.occurred_at, l.id) < (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY l.occurred_at DESC, l.id DESC LIMIT ${page.limit + 1}`)

      return {
        ...atDatabaseBoundary({
          memberRole,
          createdByApp,
          find,
          findOwnedByName,
          insert,
          remove,
          addOwner,
          activateMembership,
          endMembership,
          endMemberships,
          setHealthcareFlag,
          listForUser,
          listForApp,
          setReportingCurrency,
          liveProfileCount,
          archive,
          archiveWithProfile,
          mcpSettings,
          putMcpSettings,
          piiAccessLog
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
