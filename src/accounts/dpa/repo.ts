/**
 * SQL of the agreements: reads an OAuth app's DPA (on `oauth_apps`), a profile's own DPA and BAA
 * (on `profiles`), and who may act on them. Their owners write them: src/accounts/admin/repo.ts and
 * src/accounts/profiles/repo.ts. The effective DPA of a profile is computed at read time
 * from the profile's own columns and its provisioning app's (src/accounts/dpa/service.ts), never copied.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AgreementStatus } from "../../../schema/dpa.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { WorkspaceRole } from "../../../schema/members.ts"
import { PrivacyMode } from "../../../schema/tenancy.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

/** An app with an owner workspace, and the asking person's live role in that (live) workspace. */
export const AppDpaRow = Schema.Struct({
  id: Schema.String,
  owner_workspace_id: Schema.String,
  dpa_status: AgreementStatus,
  dpa_version: Schema.NullOr(Schema.String),
  dpa_accepted_at: Schema.NullOr(Schema.String),
  dpa_accepted_by: Schema.NullOr(Schema.String),
  role: Schema.NullOr(WorkspaceRole)
})
export type AppDpaRow = typeof AppDpaRow.Type

/** A profile's agreements: its own columns and, when a live app provisioned it, the app's DPA. */
export const ProfileAgreementRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  privacy_mode: PrivacyMode,
  provisioned_by_app_id: Schema.NullOr(Schema.String),
  archived: Schema.Boolean,
  own_dpa_status: AgreementStatus,
  own_dpa_version: Schema.NullOr(Schema.String),
  own_dpa_accepted_at: Schema.NullOr(Schema.String),
  own_dpa_accepted_by: Schema.NullOr(Schema.String),
  /** Null when no app provisioned the profile, or that app is deleted. */
  app_dpa_status: Schema.NullOr(AgreementStatus),
  app_dpa_version: Schema.NullOr(Schema.String),
  app_dpa_accepted_at: Schema.NullOr(Schema.String),
  app_dpa_accepted_by: Schema.NullOr(Schema.String),
  baa_status: AgreementStatus,
  baa_version: Schema.NullOr(Schema.String),
  baa_accepted_at: Schema.NullOr(Schema.String),
  baa_accepted_by: Schema.NullOr(Schema.String)
})
export type ProfileAgreementRow = typeof ProfileAgreementRow.Type

/** A person's live standing in a workspace: role, and whether they hold a live membership of the profile. */
export const StandingRow = Schema.Struct({ role: WorkspaceRole, profile_member: Schema.Boolean })
export type StandingRow = typeof StandingRow.Type

/** Which profile-level agreement a statement touches. */
export type Agreement = "dpa" | "baa"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class DpaRepo extends Context.Service<DpaRepo, {
  /** A live app with a live owner workspace, and `userId`'s live role there; `lock` locks the app row. */
  readonly findApp: (appId: string, userId: string, lock: boolean) => Repo<Option.Option<AppDpaRow>>
  /** A profile of a live workspace (archived profiles included, flagged); `lock` locks the profile row. */
  readonly findProfile: (profileId: string, lock: boolean) => Repo<Option.Option<ProfileAgreementRow>>
  /** The person's live role in the workspace and whether they are a live member of the profile. */
  readonly standing: (workspaceId: string, profileId: string, userId: string) => Repo<Option.Option<StandingRow>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/DpaRepo") {
  static readonly layer = Layer.effect(DpaRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstApp = decodeFirstRow(AppDpaRow)
      const firstProfile = decodeFirstRow(ProfileAgreementRow)
      const firstStanding = decodeFirstRow(StandingRow)

      const findApp = (appId: string, userId: string, lock: boolean) =>
        firstApp(sql`
          SELECT a.id, a.owner_workspace_id, a.dpa_status, a.dpa_version,
                 ${isoTimestamp(sql, "a.dpa_accepted_at")} AS dpa_accepted_at, a.dpa_accepted_by, m.role
          FROM oauth_apps a
          JOIN workspaces w ON w.id = a.owner_workspace_id AND w.archived_at IS NULL
          LEFT JOIN workspace_memberships m ON m.workspace_id = w.id AND m.user_id = ${userId} AND m.removed_at IS NULL
          WHERE a.id = ${appId} AND a.deleted_at IS NULL
          ${sql.literal(lock ? "FOR UPDATE OF a" : "")}`)

      const findProfile = (profileId: string, lock: boolean) =>
        firstProfile(sql`
          SELECT p.id AS profile_id, p.workspace_id, p.privacy_mode, p.provisioned_by_app_id,
                 (p.archived_at IS NOT NULL) AS archived,
                 p.dpa_status AS own_dpa_status, p.dpa_version AS own_dpa_version,
                 ${isoTimestamp(sql, "p.dpa_accepted_at")} AS own_dpa_accepted_at, p.dpa_accepted_by AS own_dpa_accepted_by,
                 a.dpa_status AS app_dpa_status, a.dpa_version AS app_dpa_version,
                 ${isoTimestamp(sql, "a.dpa_accepted_at")} AS app_dpa_accepted_at, a.dpa_accepted_by AS app_dpa_accepted_by,
                 p.baa_status, p.baa_version, ${isoTimestamp(sql, "p.baa_accepted_at")} AS baa_accepted_at, p.baa_accepted_by
          FROM profiles p
          JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          LEFT JOIN oauth_apps a ON a.id = p.provisioned_by_app_id AND a.deleted_at IS NULL
          WHERE p.id = ${profileId}
          ${sql.literal(lock ? "FOR UPDATE OF p" : "")}`)

      const standing = (workspaceId: string, profileId: string, userId: string) =>
        firstStanding(sql`
          SELECT m.role, EXISTS (SELECT 1 FROM profile_memberships pm
                                 WHERE pm.profile_id = ${profileId} AND pm.user_id = ${userId}
                                   AND pm.removed_at IS NULL) AS profile_member
          FROM workspace_memberships m
          WHERE m.workspace_id = ${workspaceId} AND m.user_id = ${userId} AND m.removed_at IS NULL`)

      return {
        ...atDatabaseBoundary({ findApp, findProfile, standing }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
