/** SQL of `GET /api/v1/me/profiles`: the live profiles a person reaches, with their standing on each. */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { MyProfile } from "../../../schema/me.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"

/** A reachable profile as the database answers it: `MyProfile` with the profile membership's permissions in place of the scopes. */
export const ReachableProfileRow = Schema.Struct({
  ...Struct.omit(MyProfile.fields, ["scopes"]),
  permissions: Schema.NullOr(Schema.Array(Schema.String))
})
export type ReachableProfileRow = typeof ReachableProfileRow.Type

export class MeRepo extends Context.Service<MeRepo, {
  /**
   * The same reach as authentication's membership check (CredentialsRepo.membership): an owner,
   * admin or analyst of a live workspace reaches its live profiles, a guest those it is a live
   * member of. Ordered by workspace, then profile name.
   */
  readonly reachableProfiles: (userId: string) => Effect.Effect<ReadonlyArray<ReachableProfileRow>, DatabaseUnavailable>
}>()("svc/MeRepo") {
  static readonly layer = Layer.effect(MeRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = decodeRows(ReachableProfileRow)
      const reachableProfiles = (userId: string) =>
        rows(sql`
          SELECT p.id AS profile_id, p.name, p.workspace_id, w.name AS workspace_name, p.currency, p.time_zone,
                 m.role AS workspace_role, pm.role AS profile_role, pm.permissions
          FROM workspace_memberships m
          JOIN workspaces w ON w.id = m.workspace_id AND w.archived_at IS NULL
          JOIN profiles p ON p.workspace_id = m.workspace_id AND p.archived_at IS NULL
          LEFT JOIN profile_memberships pm ON pm.profile_id = p.id AND pm.user_id = ${userId} AND pm.removed_at IS NULL
          WHERE m.user_id = ${userId} AND m.removed_at IS NULL
            AND (m.role IN ('owner', 'admin', 'analyst') OR pm.user_id IS NOT NULL)
          ORDER BY w.name, w.id, p.name, p.id`)
      return atDatabaseBoundary({ reachableProfiles })
    })
  )
}
