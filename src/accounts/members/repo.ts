/**
 * The owner of `profile_memberships` and `invitations`; the SQL of workspace members (the
 * workspaces an app manages, people, and their memberships). People go through
 * src/accounts/people/repo.ts, workspace memberships through src/accounts/workspaces/repo.ts.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { ProfileRole, WorkspaceRole } from "../../../schema/members.ts"
import type { PermissionKey } from "../../../schema/members.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const MembershipRow = Schema.Struct({
  role: WorkspaceRole,
  removed: Schema.Boolean
})
export type MembershipRow = typeof MembershipRow.Type

/** An active member; `id` is the user id and, with `created_at`, the keyset of the listing. */
export const MemberRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  role: WorkspaceRole,
  created_at: Schema.String
})
export type MemberRow = typeof MemberRow.Type

export const ProfileMembershipRow = Schema.Struct({
  user_id: Schema.String,
  profile_id: Schema.String,
  role: ProfileRole,
  permissions: Schema.NullOr(Schema.Array(Schema.String))
})
export type ProfileMembershipRow = typeof ProfileMembershipRow.Type

const UserRow = Schema.Struct({ id: Schema.String, email: Schema.String })
export type UserRow = typeof UserRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class MembersRepo extends Context.Service<MembersRepo, {
  /**
   * True when `workspaceId` is live, was created by `appId` and holds a live profile the app
   * provisioned. With `lock`, the workspace row is locked for the rest of the transaction, so
   * member changes of one workspace happen one at a time.
   */
  readonly managedWorkspace: (appId: string, workspaceId: string, lock: boolean) => Repo<boolean>
  /** Ids of the workspace's live profiles. */
  readonly liveProfileIds: (workspaceId: string) => Repo<ReadonlyArray<string>>
  /** The person with this email, compared case-insensitively. */
  readonly findUserByEmail: (email: string) => Repo<Option.Option<UserRow>>
  readonly findMembership: (workspaceId: string, userId: string) => Repo<Option.Option<MembershipRow>>
  /** Live profile memberships on live profiles of the workspace, of these people. */
  readonly profileMemberships: (workspaceId: string, userIds: ReadonlyArray<string>) => Repo<ReadonlyArray<ProfileMembershipRow>>
  /** Inserts or updates (reviving) one profile membership; null permissions mean the role's default bundle. */
  readonly upsertProfileMembership: (
    profileId: string,
    userId: string,
    role: ProfileRole,
    permissions: ReadonlyArray<PermissionKey> | null
  ) => Repo<void>
  /** Soft-removes the person's live profile memberships in the workspace except on `keep`; answers how many. */
  readonly removeProfileMembershipsExcept: (workspaceId: string, userId: string, keep: ReadonlyArray<string>) => Repo<number>
  /** Soft-removes every live membership of the profile (archiving it). */
  readonly endProfileMemberships: (profileId: string) => Repo<void>
  /** Revokes the workspace's open invitations (archiving it). */
  readonly revokeInvitations: (workspaceId: string) => Repo<void>
  /** Active members in (created_at, user id) order, one more than `limit` when a next page exists. */
  readonly listMembers: (workspaceId: string, options: { readonly limit: number; readonly after: Option.Option<Keyset> }) => Repo<ReadonlyArray<MemberRow>>
  readonly findMember: (workspaceId: string, userId: string) => Repo<Option.Option<MemberRow>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/MembersRepo") {
  static readonly layer = Layer.effect(MembersRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const decodeMembership = Schema.decodeUnknownEffect(Schema.Array(MembershipRow))
      const decodeMembers = Schema.decodeUnknownEffect(Schema.Array(MemberRow))
      const decodeProfileMemberships = Schema.decodeUnknownEffect(Schema.Array(ProfileMembershipRow))
      const decodeUsers = Schema.decodeUnknownEffect(Schema.Array(UserRow))
      const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullishOr(rows[0])

      const managedWorkspace = (appId: string, workspaceId: string, lock: boolean) =>
        Effect.map(
          sql`
            SELECT w.id FROM workspaces w
            WHERE w.id = ${workspaceId} AND w.created_by_app_id = ${appId} AND w.archived_at IS NULL
              AND EXISTS (SELECT 1 FROM profiles p
                          WHERE p.workspace_id = w.id AND p.provisioned_by_app_id = ${appId} AND p.archived_at IS NULL)
            ${lock ? sql.literal("FOR UPDATE OF w") : sql.literal("")}`,
          (rows) => rows.length > 0
        )

      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const liveProfileIds = (workspaceId: string) =>
        Effect.map(
          idRows(sql`SELECT id FROM profiles WHERE workspace_id = ${workspaceId} AND archived_at IS NULL`),
          (rows) => rows.map((row) => row.id)
        )

      const findUserByEmail = (email: string) =>
        Effect.map(
          Effect.flatMap(sql`SELECT id, email FROM users WHERE lower(email) = lower(${email})`, decodeUsers),
          first
        )

      const findMembership = (workspaceId: string, userId: string) =>
        Effect.map(
          Effect.flatMap(
            sql`SELECT role, (removed_at IS NOT NULL) AS removed FROM workspace_memberships
                WHERE workspace_id = ${workspaceId} AND user_id = ${userId}`,
            decodeMembership
          ),
          first
        )

      const profileMemberships = (workspaceId: string, userIds: ReadonlyArray<string>) =>
        userIds.length === 0 ? Effect.succeed([]) : Effect.flatMap(
          sql`
            SELECT pm.user_id, pm.profile_id, pm.role, pm.permissions
            FROM profile_memberships pm JOIN profiles p ON p.id = pm.profile_id
            WHERE p.workspace_id = ${workspaceId} AND p.archived_at IS NULL AND pm.removed_at IS NULL
              AND pm.user_id = ANY(${userIds}::uuid[])
            ORDER BY p.created_at, p.id`,
          decodeProfileMemberships
        )

      const upsertProfileMembership = (
        profileId: string,
        userId: string,
        role: ProfileRole,
        permissions: ReadonlyArray<PermissionKey> | null
      ) =>
        Effect.asVoid(sql`
          INSERT INTO profile_memberships (profile_id, user_id, role, permissions)
          VALUES (${profileId}, ${userId}, ${role}, ${permissions}::text[])
          ON CONFLICT (profile_id, user_id) DO UPDATE
            SET role = EXCLUDED.role, permissions = EXCLUDED.permissions, removed_at = NULL, updated_at = now()`)

      const removeProfileMembershipsExcept = (workspaceId: string, userId: string, keep: ReadonlyArray<string>) =>
        Effect.map(
          sql`
            UPDATE profile_memberships pm SET removed_at = now(), updated_at = now()
            FROM profiles p
            WHERE p.id = pm.profile_id AND p.workspace_id = ${workspaceId} AND pm.user_id = ${userId}
              AND pm.removed_at IS NULL AND NOT (pm.profile_id = ANY(${keep}::uuid[]))
            RETURNING pm.profile_id`,
          (rows) => rows.length
        )

      const endProfileMemberships = (profileId: string) =>
        Effect.asVoid(sql`UPDATE profile_memberships SET removed_at = now() WHERE profile_id = ${profileId} AND removed_at IS NULL`)

      const revokeInvitations = (workspaceId: string) =>
        Effect.asVoid(sql`UPDATE invitations SET revoked_at = now() WHERE workspace_id = ${workspaceId} AND revoked_at IS NULL`)

      const memberColumns = sql`m.user_id AS id, u.email, m.role, ${isoTimestamp(sql, "m.created_at")} AS created_at`

      const listMembers = (workspaceId: string, options: { readonly limit: number; readonly after: Option.Option<Keyset> }) =>
        Effect.flatMap(
          Option.match(options.after, {
            onNone: () =>
              sql`SELECT ${memberColumns} FROM workspace_memberships m JOIN users u ON u.id = m.user_id
                  WHERE m.workspace_id = ${workspaceId} AND m.removed_at IS NULL
                  ORDER BY m.created_at, m.user_id LIMIT ${options.limit + 1}`,
            onSome: (keyset) =>
              sql`SELECT ${memberColumns} FROM workspace_memberships m JOIN users u ON u.id = m.user_id
                  WHERE m.workspace_id = ${workspaceId} AND m.removed_at IS NULL
                    AND (m.created_at, m.user_id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)
                  ORDER BY m.created_at, m.user_id LIMIT ${options.limit + 1}`
          }),
          decodeMembers
        )

      const findMember = (workspaceId: string, userId: string) =>
        Effect.map(
          Effect.flatMap(
            sql`SELECT ${memberColumns} FROM workspace_memberships m JOIN users u ON u.id = m.user_id
                WHERE m.workspace_id = ${workspaceId} AND m.user_id = ${userId} AND m.removed_at IS NULL`,
            decodeMembers
          ),
          first
        )

      return {
        ...atDatabaseBoundary({
          managedWorkspace,
          liveProfileIds,
          findUserByEmail,
          findMembership,
          profileMemberships,
          upsertProfileMembership,
          removeProfileMembershipsExcept,
          endProfileMemberships,
          revokeInvitations,
          listMembers,
          findMember
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
