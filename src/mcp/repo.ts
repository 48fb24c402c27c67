/**
 * Reads of the agent surface (decision 0103): the profiles a person can reach and a workspace's
 * MCP `pii_mode`. It writes nothing; the tables belong to tenancy.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { ProfileRole, WorkspaceRole } from "../../schema/members.ts"
import { PiiMode } from "../../schema/workspaces.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../platform/database.ts"

export const ReachableProfile = Schema.Struct({
  profile_id: Schema.String,
  name: Schema.String,
  workspace_id: Schema.String,
  workspace_name: Schema.String,
  workspace_role: WorkspaceRole,
  profile_role: Schema.NullOr(ProfileRole)
})
export type ReachableProfile = typeof ReachableProfile.Type

/** At most this many profiles in one answer: a person reaches tens, not thousands. */
const MAX_PROFILES = 500

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class McpRepo extends Context.Service<McpRepo, {
  /**
   * Live profiles of live workspaces the person reaches: as an owner, admin or analyst of the
   * workspace, or through a live profile membership (the rule of the credential store).
   */
  readonly reachableProfiles: (userId: string, workspaceId: string | undefined) => Repo<ReadonlyArray<ReachableProfile>>
  /** The workspace's MCP `pii_mode`; `redacted` until its settings are written. */
  readonly piiMode: (workspaceId: string) => Repo<PiiMode>
  /** The workspace's `mcp_writeback_enabled`, read now (not through the credential cache); false until written. */
  readonly writebackEnabled: (workspaceId: string) => Repo<boolean>
}>()("svc/McpRepo") {
  static readonly layer = Layer.effect(McpRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const profiles = decodeRows(ReachableProfile)
      const firstMode = decodeFirstRow(Schema.Struct({ pii_mode: PiiMode }))
      const firstWriteback = decodeFirstRow(Schema.Struct({ mcp_writeback_enabled: Schema.Boolean }))

      const reachableProfiles = (userId: string, workspaceId: string | undefined) =>
        profiles(sql`
          SELECT p.id AS profile_id, p.name, p.workspace_id, w.name AS workspace_name,
                 m.role AS workspace_role, pm.role AS profile_role
          FROM profiles p
          JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          JOIN workspace_memberships m ON m.workspace_id = p.workspace_id AND m.user_id = ${userId} AND m.removed_at IS NULL
          LEFT JOIN profile_memberships pm ON pm.profile_id = p.id AND pm.user_id = ${userId} AND pm.removed_at IS NULL
          WHERE p.archived_at IS NULL
            AND (m.role IN ('owner', 'admin', 'analyst') OR pm.user_id IS NOT NULL)
            ${workspaceId === undefined ? sql`` : sql`AND p.workspace_id::text = ${workspaceId.toLowerCase()}`}
          ORDER BY w.name, p.name, p.id
          LIMIT ${MAX_PROFILES}`)

      const piiMode = (workspaceId: string) =>
        Effect.map(
          firstMode(sql`SELECT pii_mode FROM workspace_mcp_settings WHERE workspace_id = ${workspaceId}`),
          (row) => Option.match(row, { onNone: (): PiiMode => "redacted", onSome: ({ pii_mode }) => pii_mode })
        )

      const writebackEnabled = (workspaceId: string) =>
        Effect.map(
          firstWriteback(sql`SELECT mcp_writeback_enabled FROM workspace_mcp_settings WHERE workspace_id = ${workspaceId}`),
          (row) => Option.match(row, { onNone: () => false, onSome: ({ mcp_writeback_enabled }) => mcp_writeback_enabled })
        )

      return atDatabaseBoundary({ reachableProfiles, piiMode, writebackEnabled })
    })
  )
}
